internal import MSALCore

/// One failed Secret Service call, as plain values: what libsecret or GDBus reported, with no C
/// type, so that ``KeyringProblem/classify(_:step:)`` is a pure function that tests can feed.
struct SecretServiceFailure: Sendable, Hashable {
    /// Where the error came from.
    enum Origin: Sendable, Hashable {
        /// A D-Bus error name: the one the service or the bus sent (e.g.
        /// `org.freedesktop.Secret.Error.IsLocked`), or the registered name of a GDBus or libsecret error.
        case dbus(String)
        /// A local GIO error (connecting, a closed connection, our own cancellation).
        case io(IOError)
        /// Any other GLib error domain and code.
        case other(domain: String, code: Int32)
    }

    /// The GIO error codes the classification distinguishes (`GIOErrorEnum`).
    enum IOError: Sendable, Hashable {
        /// `G_IO_ERROR_CANCELLED`: swift-msal's own timeout cancelled the call.
        case cancelled
        /// `G_IO_ERROR_TIMED_OUT`.
        case timedOut
        /// `G_IO_ERROR_CLOSED` or `G_IO_ERROR_BROKEN_PIPE`: the connection went away.
        case closed
        /// Any other code (connection refused, socket not found, autolaunch failed, ...).
        case other(Int32)
    }

    /// Where it came from.
    var origin: Origin
    /// GLib's message; it names objects and reasons, never a secret value.
    var message: String
}

/// Why the keyring could not be used: the outcome of classifying a Secret Service failure or
/// checking the session, turned into an ``MSALError`` by ``error(doing:)``.
///
/// The first four make the backend unusable on this machine as it is (`.internal(.cacheUnavailable)`,
/// so an app may fall back to another store); the others are failures of one call (`.cacheError`).
enum KeyringProblem: Error, Sendable, Hashable {
    /// No D-Bus session bus: `DBUS_SESSION_BUS_ADDRESS` unset and no `$XDG_RUNTIME_DIR/bus`, or
    /// connecting failed. The detail says what failed.
    case noSessionBus(String)
    /// Nothing provides `org.freedesktop.secrets` on the bus and nothing can be activated.
    case noProvider(String)
    /// The default collection (or an item in it) is locked.
    case locked
    /// The service has no `default` alias: no default collection.
    case noDefaultCollection
    /// The object (item or session) the call named does not exist (any more).
    case noSuchObject(String)
    /// The call did not finish within the store's service timeout (seconds).
    case timedOut(seconds: Int)
    /// Anything else; the detail is GLib's message.
    case failed(String)

    /// What to do instead, said at the end of every unavailability message.
    static let alternatives = "or choose another token cache backend: the encrypted file or SQLite store."

    /// Classifies one failed call.
    ///
    /// - `org.freedesktop.Secret.Error.IsLocked` → ``locked``.
    /// - `org.freedesktop.DBus.Error.ServiceUnknown`, `NameHasNoOwner` and the activation errors
    ///   `org.freedesktop.DBus.Error.Spawn.*` → ``noProvider(_:)``.
    /// - `org.freedesktop.Secret.Error.NoSuchObject`, `org.freedesktop.DBus.Error.UnknownObject` →
    ///   ``noSuchObject(_:)``.
    /// - `NoReply`, `Timeout`, `TimedOut`, GIO timed out, and our own cancellation → ``timedOut(seconds:)``.
    /// - While connecting (``Step/connecting``): any GIO error or `Disconnected`, `NoServer`,
    ///   `BadAddress`, `FileNotFound`, `AuthFailed`, `NoNetwork`, `IOError` → ``noSessionBus(_:)``.
    /// - Everything else → ``failed(_:)``.
    /// - Parameters:
    ///   - failure: the error as reported.
    ///   - step: whether the call was connecting (bus and session) or an operation on the service.
    ///   - timeout: the store's service timeout in seconds, for the message.
    /// - Returns: the problem.
    static func classify(_ failure: SecretServiceFailure, step: Step, timeout: Int) -> KeyringProblem {
        switch failure.origin {
        case .dbus(let name):
            switch name {
            case "org.freedesktop.Secret.Error.IsLocked":
                return .locked
            case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
                return .noProvider(failure.message)
            case _ where name.hasPrefix("org.freedesktop.DBus.Error.Spawn."):
                return .noProvider(failure.message)
            case "org.freedesktop.Secret.Error.NoSuchObject", "org.freedesktop.DBus.Error.UnknownObject":
                return .noSuchObject(failure.message)
            case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.TimedOut":
                return .timedOut(seconds: timeout)
            case "org.freedesktop.DBus.Error.Disconnected", "org.freedesktop.DBus.Error.NoServer",
                 "org.freedesktop.DBus.Error.BadAddress", "org.freedesktop.DBus.Error.FileNotFound",
                 "org.freedesktop.DBus.Error.AuthFailed", "org.freedesktop.DBus.Error.NoNetwork",
                 "org.freedesktop.DBus.Error.IOError":
                return step == .connecting ? .noSessionBus(failure.message) : .failed(failure.message)
            default:
                return .failed(failure.message)
            }
        case .io(let code):
            switch code {
            case .cancelled, .timedOut:
                return .timedOut(seconds: timeout)
            case .closed, .other:
                return step == .connecting ? .noSessionBus(failure.message) : .failed(failure.message)
            }
        case .other:
            return .failed(failure.message)
        }
    }

    /// Whether the session can have a D-Bus session bus at all, judged from the environment only
    /// (so that no bus daemon is ever autolaunched): `DBUS_SESSION_BUS_ADDRESS` is set, or
    /// `$XDG_RUNTIME_DIR/bus` exists (GLib's default address).
    /// - Parameters:
    ///   - environment: the process environment.
    ///   - fileExists: whether a path exists (injected for tests).
    /// - Returns: ``noSessionBus(_:)`` when neither holds, else `nil`.
    static func sessionBusProblem(environment: [String: String], fileExists: (String) -> Bool) -> KeyringProblem? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return nil }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/"), fileExists(runtime + "/bus") { return nil }
        return .noSessionBus("DBUS_SESSION_BUS_ADDRESS is not set and there is no $XDG_RUNTIME_DIR/bus")
    }

    /// Whether the problem makes the backend unusable on this machine (`.cacheUnavailable`).
    var isUnavailability: Bool {
        switch self {
        case .noSessionBus, .noProvider, .locked, .noDefaultCollection: true
        case .noSuchObject, .timedOut, .failed: false
        }
    }

    /// The problem as an ``MSALError``: `.internal(.cacheUnavailable)` for an unusable keyring, else
    /// `.internal(.cacheError)`; the message says what happened and what to do, never a secret.
    /// - Parameter doing: what the store was doing, e.g. "reading the token cache".
    func error(doing: String) -> MSALError {
        switch self {
        case .noSessionBus(let detail):
            return .internal(
                .cacheUnavailable,
                "The keyring token cache needs a D-Bus session bus, and none is reachable (\(detail)). Run the app in a desktop session or under dbus-run-session, \(Self.alternatives)")
        case .noProvider(let detail):
            return .internal(
                .cacheUnavailable,
                "No Secret Service provider (org.freedesktop.secrets) is running or can be started on the D-Bus session bus (\(detail)). Install one (apt install gnome-keyring, or enable KeePassXC's Secret Service integration), \(Self.alternatives)")
        case .locked:
            return .internal(
                .cacheUnavailable,
                "The default keyring (the Secret Service's default collection, usually the login keyring) is locked, and swift-msal never shows an unlock prompt. Unlock it (log in to the desktop session, or unlock it in Seahorse or KeePassXC), \(Self.alternatives)")
        case .noDefaultCollection:
            return .internal(
                .cacheUnavailable,
                "The Secret Service has no default keyring (no 'default' collection alias). Create the login keyring (e.g. in Seahorse) or open a database in KeePassXC with Secret Service integration, \(Self.alternatives)")
        case .noSuchObject(let detail):
            return .internal(
                .cacheError,
                "A keyring item vanished while \(doing) (\(detail)); another program may have removed it. Try again.")
        case .timedOut(let seconds):
            return .internal(
                .cacheError,
                "The Secret Service did not answer within \(seconds == 1 ? "1 second" : "\(seconds) seconds") while \(doing); it may be busy or waiting for a prompt. Try again; if it persists, check the keyring daemon (gnome-keyring or KeePassXC).")
        case .failed(let detail):
            return .internal(
                .cacheError,
                "The Secret Service failed while \(doing) (\(detail)). Try again; if it persists, check the keyring daemon (gnome-keyring or KeePassXC).")
        }
    }

    /// Which part of the work a failed call belonged to.
    enum Step: Sendable, Hashable {
        /// Connecting to the session bus and opening a session with the Secret Service.
        case connecting
        /// A call on an open session.
        case operation
    }
}
