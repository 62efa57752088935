internal import CLibsecret
internal import Dispatch
internal import Foundation
internal import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process's one connection to the Secret Service (libsecret over the D-Bus session bus).
///
/// - **Serialized.** Every libsecret call runs under one process-wide lock: libsecret does not
///   promise thread safety, and the calls are short.
/// - **Never blocks forever.** Every call carries a `GCancellable` that a timer cancels after the
///   caller's timeout; raw D-Bus calls also carry a D-Bus timeout.
/// - **Never prompts.** Nothing here asks the service to unlock; callers check that the default
///   collection is unlocked first and only touch unlocked items.
/// - **Reconnects.** A failure other than "locked" or a timeout drops the connection, so the next
///   call connects again (e.g. after the keyring daemon restarted).
final class SecretServiceClient: Sendable {
    /// The shared client.
    static let shared = SecretServiceClient()

    /// The open service, if any (a GObject reference owned by this client).
    private struct Connection: @unchecked Sendable {
        var service: UnsafeMutablePointer<SecretService>?
    }

    private let connection = Mutex(Connection())

    private init() {}

    /// Runs `body` with an open session, holding the process-wide libsecret lock throughout.
    /// - Parameter timeout: the limit for each call, in seconds.
    /// - Returns: what `body` returns.
    /// - Throws: the ``KeyringProblem`` of the first failed call (connecting included).
    func withSession<T: Sendable>(timeout: TimeInterval, _ body: (Session) throws(KeyringProblem) -> T) throws(KeyringProblem) -> T {
        try connection.withLock { (state: inout Connection) throws(KeyringProblem) -> T in
            let seconds = max(1, Int(timeout.rounded(.up)))
            if state.service == nil {
                state.service = try Self.connect(seconds: seconds)
            }
            do throws(KeyringProblem) {
                return try body(Session(service: state.service!, seconds: seconds, counter: CallCounter()))
            } catch {
                switch error {
                case .locked, .timedOut, .noDefaultCollection, .noSuchObject:
                    break
                case .noSessionBus, .noProvider, .failed:
                    msal_object_unref(state.service)
                    state.service = nil
                }
                throw error
            }
        }
    }

    private static func connect(seconds: Int) throws(KeyringProblem) -> UnsafeMutablePointer<SecretService> {
        let environment = ProcessInfo.processInfo.environment
        if let problem = KeyringProblem.sessionBusProblem(environment: environment, fileExists: { access($0, F_OK) == 0 }) {
            throw problem
        }
        return try Session.call(seconds: seconds, step: .connecting) { cancellable, error in
            msal_secret_service_open(cancellable, error)
        }
    }

    /// An open session: the calls the stores make. Use it only inside ``withSession(timeout:_:)``.
    struct Session {
        fileprivate let service: UnsafeMutablePointer<SecretService>
        /// The limit for each call, in seconds.
        let seconds: Int
        fileprivate let counter: CallCounter

        /// How many Secret Service calls this session has made so far (tests check bulk reads).
        var callCount: Int { counter.count }

        /// The path of the default collection, checked to be unlocked (two calls: `ReadAlias`, and
        /// a `Properties.Get` of `Locked` that neither starts a service nor prompts).
        /// - Throws: ``KeyringProblem/noDefaultCollection`` or ``KeyringProblem/locked``, or the
        ///   problem of a failed call.
        func defaultCollection() throws(KeyringProblem) -> String {
            let path = try alias("default")
            guard let path, path != "/" else { throw .noDefaultCollection }
            let timeoutMilliseconds = Int32(clamping: seconds * 1000)
            let locked: Int32 = try Self.call(seconds: seconds, step: .operation, counter: counter) { cancellable, error in
                let value = msal_collection_locked(service, path, timeoutMilliseconds, cancellable, error)
                return value < 0 ? nil : value
            }
            if locked != 0 { throw .locked }
            return path
        }

        /// The collection path the alias names (one `ReadAlias` call), or `nil` when it is not set.
        func alias(_ name: String) throws(KeyringProblem) -> String? {
            try Self.call(seconds: seconds, step: .operation, counter: counter) { cancellable, error -> String?? in
                guard let path = secret_service_read_alias_dbus_path_sync(service, name, cancellable, error) else {
                    return error.pointee == nil ? .some(nil) : nil
                }
                defer { g_free(path) }
                return .some(String(cString: path))
            }
        }

        /// The items whose attributes include all of `attributes` (one `SearchItems` call).
        /// - Returns: the object paths of unlocked and of locked matching items, in every collection.
        func search(_ attributes: [String: String]) throws(KeyringProblem) -> (unlocked: [String], locked: [String]) {
            let table = Self.attributeTable(attributes)
            defer { g_hash_table_unref(table) }
            return try Self.call(seconds: seconds, step: .operation, counter: counter) { cancellable, error in
                var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
                var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
                guard secret_service_search_for_dbus_paths_sync(service, nil, table, cancellable, &unlocked, &locked, error) != 0 else {
                    return nil
                }
                defer {
                    g_strfreev(unlocked)
                    g_strfreev(locked)
                }
                return (Self.strings(unlocked), Self.strings(locked))
            }
        }

        /// The secrets of the unlocked items at `paths`, in one `GetSecrets` call.
        /// - Returns: each item's secret bytes by path; an item that vanished meanwhile is missing.
        func secrets(_ paths: [String]) throws(KeyringProblem) -> [String: [UInt8]] {
            guard !paths.isEmpty else { return [:] }
            let cPaths = paths.map { strdup($0) } + [nil]
            defer { cPaths.forEach { free($0) } }
            return try Self.call(seconds: seconds, step: .operation, counter: counter) { cancellable, error in
                let table = cPaths.withUnsafeBufferPointer { buffer in
                    buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<gchar>?.self, capacity: buffer.count) {
                        secret_service_get_secrets_for_dbus_paths_sync(service, UnsafeMutablePointer(mutating: $0), cancellable, error)
                    }
                }
                guard let table else { return nil }
                defer { g_hash_table_unref(table) }
                var result: [String: [UInt8]] = [:]
                var iterator = GHashTableIter()
                g_hash_table_iter_init(&iterator, table)
                var key: gpointer?
                var value: gpointer?
                while g_hash_table_iter_next(&iterator, &key, &value) != 0 {
                    guard let key, let value else { continue }
                    var length: gsize = 0
                    guard let bytes = secret_value_get(OpaquePointer(value), &length) else { continue }
                    let path = String(cString: key.assumingMemoryBound(to: gchar.self))
                    result[path] = [UInt8](UnsafeRawBufferPointer(start: bytes, count: Int(length)))
                }
                return result
            }
        }

        /// Creates an item in `collection`, replacing an item with exactly the same attributes
        /// (one `CreateItem` call).
        /// - Returns: the new (or replaced) item's path.
        func createItem(in collection: String, label: String, attributes: [String: String], secret: [UInt8], contentType: String) throws(KeyringProblem) -> String {
            let table = Self.attributeTable(attributes)
            let properties = msal_item_properties_new(label, table)
            g_hash_table_unref(table)
            defer { g_hash_table_unref(properties) }
            // secret_value_new copies `length` bytes; a non-empty buffer keeps the pointer valid.
            let bytes = secret.isEmpty ? [gchar(0)] : secret.map { gchar(bitPattern: $0) }
            let value = bytes.withUnsafeBufferPointer { secret_value_new($0.baseAddress, gssize(secret.count), contentType) }
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            return try Self.call(seconds: seconds, step: .operation, counter: counter) { cancellable, error in
                guard let path = secret_service_create_item_dbus_path_sync(
                    service, collection, properties, value, SECRET_ITEM_CREATE_REPLACE, cancellable, error) else { return nil }
                defer { g_free(path) }
                return String(cString: path)
            }
        }

        /// Deletes the (unlocked) item at `path` (one `Delete` call); an item that is already gone
        /// counts as deleted.
        func delete(_ path: String) throws(KeyringProblem) {
            do throws(KeyringProblem) {
                let _: Bool = try Self.call(seconds: seconds, step: .operation, counter: counter) { cancellable, error in
                    secret_service_delete_item_dbus_path_sync(service, path, cancellable, error) != 0 ? true : nil
                }
            } catch {
                if case .noSuchObject = error { return }
                throw error
            }
        }

        /// Locks the collections or items at `paths` (tests only: locking never prompts).
        func lock(_ paths: [String]) throws(KeyringProblem) {
            let cPaths = paths.map { strdup($0) } + [nil]
            defer { cPaths.forEach { free($0) } }
            let _: Bool = try Self.call(seconds: seconds, step: .operation, counter: counter) { cancellable, error in
                cPaths.withUnsafeBufferPointer { buffer in
                    buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<gchar>?.self, capacity: buffer.count) {
                        var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
                        defer { g_strfreev(locked) }
                        return secret_service_lock_dbus_paths_sync(service, UnsafeMutablePointer(mutating: $0), cancellable, &locked, error) >= 0 ? true : nil
                    }
                }
            }
        }

        /// Points the alias `alias` at `collection`, or removes it when `collection` is `nil`
        /// (tests only).
        func setAlias(_ alias: String, to collection: String?) throws(KeyringProblem) {
            let _: Bool = try Self.call(seconds: seconds, step: .operation, counter: counter) { cancellable, error in
                secret_service_set_alias_to_dbus_path_sync(service, alias, collection, cancellable, error) != 0 ? true : nil
            }
        }

        // MARK: Helpers

        /// Runs one libsecret call with a cancellable that a timer cancels after `seconds`, and turns
        /// a `GError` into a ``KeyringProblem``. `body` returns `nil` exactly when it set the error.
        fileprivate static func call<T>(
            seconds: Int, step: KeyringProblem.Step, counter: CallCounter? = nil,
            _ body: (UnsafeMutablePointer<GCancellable>?, UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T?
        ) throws(KeyringProblem) -> T {
            counter?.count += 1
            let cancellable = g_cancellable_new()
            let watchdog = Watchdog(cancellable: cancellable, seconds: seconds)
            defer {
                watchdog.stop()
                msal_object_unref(cancellable)
            }
            var error: UnsafeMutablePointer<GError>?
            if let result = body(cancellable, &error) {
                if let error { g_error_free(error) }
                return result
            }
            guard let error else {
                throw .failed("libsecret reported a failure without an error")
            }
            defer { g_error_free(error) }
            throw KeyringProblem.classify(failure(from: error), step: step, timeout: seconds)
        }

        /// The plain values of a `GError`.
        private static func failure(from error: UnsafeMutablePointer<GError>) -> SecretServiceFailure {
            var message = error.pointee.message.map { String(cString: $0) } ?? "no message"
            if let name = msal_error_dbus_name(error) {
                defer { g_free(name) }
                let dbusName = String(cString: name)
                // GDBus prefixes remote messages with "GDBus.Error:<name>: ".
                let prefix = "GDBus.Error:" + dbusName + ": "
                if message.hasPrefix(prefix) { message.removeFirst(prefix.count) }
                return SecretServiceFailure(origin: .dbus(dbusName), message: message)
            }
            if msal_error_is_io(error) != 0 {
                let code = error.pointee.code
                let kind: SecretServiceFailure.IOError = switch UInt32(bitPattern: code) {
                case G_IO_ERROR_CANCELLED.rawValue: .cancelled
                case G_IO_ERROR_TIMED_OUT.rawValue: .timedOut
                case G_IO_ERROR_CLOSED.rawValue, G_IO_ERROR_BROKEN_PIPE.rawValue: .closed
                default: .other(code)
                }
                return SecretServiceFailure(origin: .io(kind), message: message)
            }
            return SecretServiceFailure(origin: .other(domain: String(cString: msal_error_domain(error)), code: error.pointee.code), message: message)
        }

        private static func attributeTable(_ attributes: [String: String]) -> OpaquePointer {
            let table = msal_attributes_new()!
            for (name, value) in attributes { msal_attributes_set(table, name, value) }
            return table
        }

        private static func strings(_ vector: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
            guard let vector else { return [] }
            var result: [String] = []
            var index = 0
            while let string = vector[index] {
                result.append(String(cString: string))
                index += 1
            }
            return result
        }
    }
}

/// The number of calls of one session (used only under the client's lock).
final class CallCounter: @unchecked Sendable {
    var count = 0
}

/// Cancels a `GCancellable` when a call outlives its timeout.
private final class Watchdog: @unchecked Sendable {
    private static let queue = DispatchQueue(label: "org.swift-msal.keyring.watchdog")
    private let timer: any DispatchSourceTimer

    /// Starts the timer; it holds its own reference to `cancellable` until stopped.
    init(cancellable: UnsafeMutablePointer<GCancellable>?, seconds: Int) {
        let reference = UncheckedPointer(pointer: UnsafeMutableRawPointer(cancellable))
        g_object_ref(cancellable)
        timer = DispatchSource.makeTimerSource(queue: Self.queue)
        timer.schedule(deadline: .now() + .seconds(seconds))
        timer.setEventHandler { g_cancellable_cancel(reference.pointer?.assumingMemoryBound(to: GCancellable.self)) }
        timer.setCancelHandler { g_object_unref(reference.pointer) }
        timer.resume()
    }

    /// Stops the timer (the cancel handler drops the reference).
    func stop() { timer.cancel() }
}

/// A C pointer handed to a Dispatch handler; the GObject it names is thread-safe.
private struct UncheckedPointer: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
}
