import Dispatch
import Foundation
import MSALCore
import MSALTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `msal dev-provider`: serves the local Entra-compatible provider on `127.0.0.1` until SIGINT or
/// SIGTERM, with the control API under `/_control/` (Docs/DevProvider.md).
///
/// Prints one line (text, or JSON with `--output json`) once it listens: base URL, tenants,
/// client IDs, users. With `--state FILE` it loads users and refresh tokens from the file and
/// writes them back atomically after each change and on exit, so tokens survive a restart.
enum DevProvider {
    struct Arguments {
        var port: UInt16 = 0
        var configPath: String?
        var statePath: String?
        var output: OutputFormat = .text
        var help = false
    }

    static let usage = """
    usage: msal dev-provider [--port N] [--config FILE] [--state FILE] [--output json|text]

    Serves a local Entra-compatible identity provider on 127.0.0.1 until Ctrl-C (SIGINT) or
    SIGTERM, with a control API under /_control/. Tokens are for development only.

    options:
      --port N             the port (default 0: the system picks one; the first line says which)
      --config FILE        tenants, users and clients as JSON (default: the demo tenant, user and client)
      --state FILE         keep users and refresh tokens in this JSON file across restarts
      --output json|text   the format of the first line (default text)

    See Docs/DevProvider.md for the configuration schema and the control API.
    """

    static func parse(_ arguments: [String]) throws(UsageError) -> Arguments {
        var parsed = Arguments()
        var index = 0
        func value(for flag: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count, !arguments[index].hasPrefix("--") else { throw UsageError(message: "\(flag) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--port":
                let raw = try value(for: argument)
                guard let port = UInt16(raw) else { throw UsageError(message: "--port must be a port number from 0 to 65535, not '\(raw)'") }
                parsed.port = port
            case "--config": parsed.configPath = try value(for: argument)
            case "--state": parsed.statePath = try value(for: argument)
            case "--output":
                let raw = try value(for: argument)
                guard let format = OutputFormat(rawValue: raw) else { throw UsageError(message: "--output must be json or text, not '\(raw)'") }
                parsed.output = format
            case "--help", "-h": parsed.help = true
            default: throw UsageError(message: "unknown option '\(argument)' for dev-provider")
            }
            index += 1
        }
        return parsed
    }

    static func run(arguments: [String]) async throws {
        let options = try parse(arguments)
        if options.help {
            Console.out(usage)
            return
        }
        let config = try options.configPath.map { (path: String) throws(UsageError) in try DevProviderConfig.load(path: path) } ?? DevProviderConfig()
        let provider = try config.makeProvider()
        provider.isControlAPIEnabled = true
        let store = try options.statePath.map { (path: String) throws(UsageError) in try StateFile(path: path) }
        if let store {
            try store.restore(into: provider)
            provider.onStateChange { store.save(provider) }
        }
        // Signals are handled by dispatch sources, not by the default action (termination).
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        try provider.start(port: options.port)
        Console.out(startupLine(provider, options))
        await waitForSignal([SIGINT, SIGTERM])
        provider.stop()
        provider.onStateChange(nil)
        store?.saveNow(provider)
    }

    /// The one line printed once the provider listens.
    static func startupLine(_ provider: LocalIdentityProvider, _ options: Arguments) -> String {
        let base = provider.baseURL.absoluteString
        let families = provider.familyClients
        let clients = provider.registeredClientIDs
        let tenants = provider.tenants
        let users = provider.users
        switch options.output {
        case .json:
            return Console.jsonLine([
                "base_url": base,
                "port": Int(provider.baseURL.port ?? 0),
                "control_url": "\(base)/_control/",
                "tenants": tenants.map { ["tenant_id": $0.tenantID, "domains": $0.domains] as [String: Any] },
                "clients": clients.map { id -> [String: Any] in
                    var client: [String: Any] = ["client_id": id]
                    if let family = families[id] { client["family_id"] = family }
                    return client
                },
                "users": users.map {
                    ["username": $0.username, "object_id": $0.objectID, "tenant_id": $0.tenantID, "name": $0.name]
                },
                "state": options.statePath ?? NSNull(),
            ] as [String: Any])
        case .text:
            let tenantText = tenants.map { $0.domains.isEmpty ? $0.tenantID : "\($0.tenantID) (\($0.domains.joined(separator: ", ")))" }
            let clientText = clients.map { id in families[id].map { "\(id) (family \($0))" } ?? id }
            return "msal dev-provider: listening at \(base); tenants \(tenantText.joined(separator: ", ")); "
                + "client ids \(clientText.joined(separator: ", ")); users \(users.map(\.username).joined(separator: ", ")); "
                + "control API \(base)/_control/; stop with Ctrl-C"
        }
    }

    /// Returns once one of the signals arrives.
    static func waitForSignal(_ signals: [Int32]) async {
        let waiter = SignalWaiter(signals)
        await waiter.wait()
        waiter.cancel()
    }
}

/// Dispatch signal sources and the one waiter they wake; all its state is touched on `queue`
/// only, hence `@unchecked Sendable`.
final class SignalWaiter: @unchecked Sendable {
    private let queue = DispatchQueue(label: "msal.dev-provider.signals")
    private var sources: [any DispatchSourceSignal] = []
    private var continuation: CheckedContinuation<Void, Never>?
    private var fired = false

    init(_ signals: [Int32]) {
        queue.sync {
            for number in signals {
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler { [unowned self] in self.fire() }
                source.resume()
                sources.append(source)
            }
        }
    }

    /// On `queue`.
    private func fire() {
        fired = true
        continuation?.resume()
        continuation = nil
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.sync {
                if fired { continuation.resume() } else { self.continuation = continuation }
            }
        }
    }

    func cancel() {
        queue.sync {
            for source in sources { source.cancel() }
            sources = []
        }
    }
}

/// The `--state` file: written atomically (a temporary file in the same directory, mode 0600,
/// renamed over the old one), from one serial queue so the newest state is written last.
final class StateFile: Sendable {
    let path: String
    private let queue = DispatchQueue(label: "msal.dev-provider.state")

    init(path: String) throws(UsageError) {
        let directory = (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.isEmpty ? "." : directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw UsageError(message: "--state: the directory of '\(path)' does not exist")
        }
        self.path = path
    }

    /// The saved state, or `nil` when the file does not exist yet.
    func read() throws(UsageError) -> Data? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else { throw UsageError(message: "--state: cannot read '\(path)'") }
        return data
    }

    /// Loads the saved state, when the file exists, into `provider`.
    /// - Throws: ``UsageError`` when the file cannot be read; ``StateFileError`` when it is not a
    ///   saved provider state (it is left as it is: nothing is written before this succeeds).
    func restore(into provider: LocalIdentityProvider) throws {
        guard let data = try read() else { return }
        do {
            try provider.restorePersistentState(data)
        } catch {
            throw StateFileError(path: path, problem: StateFileError.problem(in: data))
        }
    }

    /// Writes the provider's state soon, off the request's thread.
    func save(_ provider: LocalIdentityProvider) {
        queue.async { self.write(provider) }
    }

    /// Writes the provider's state now, after any pending write.
    func saveNow(_ provider: LocalIdentityProvider) {
        queue.sync { self.write(provider) }
    }

    private func write(_ provider: LocalIdentityProvider) {
        let data = provider.persistentState()
        let temporary = "\(path).tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            Console.err("msal dev-provider: could not write '\(temporary)'")
            return
        }
        if rename(temporary, path) != 0 {
            Console.err("msal dev-provider: could not replace '\(path)': \(String(cString: strerror(errno)))")
            unlink(temporary)
        }
    }
}

/// A `--state` file that is not a saved provider state: a one-line message naming the file and
/// what is wrong with it (never its values), saying it was left untouched and what to do; exit 1.
struct StateFileError: Error, CustomStringConvertible {
    /// The path as given to `--state`.
    let path: String
    /// What is wrong, e.g. `not JSON` or `missing field 'version'`.
    let problem: String

    var description: String {
        "--state '\(path)' is not a saved provider state (\(problem)); the file was left untouched. "
            + "Give another --state path, or delete the file to start fresh."
    }

    /// What is wrong with `data`, which `LocalIdentityProvider.restorePersistentState` refused.
    /// The provider decides what it accepts; this only explains its refusal, from the shape of
    /// the JSON its `persistentState()` writes (Docs/DevProvider.md).
    static func problem(in data: Data) -> String {
        guard let root = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return "not JSON" }
        guard root is [String: Any] else { return "not a JSON object" }
        do {
            let shape = try JSONDecoder().decode(PersistentState.self, from: data)
            if shape.version != 1 { return "version \(shape.version); this msal reads version 1" }
        } catch let DecodingError.keyNotFound(key, context) {
            return "missing field '\(fieldPath(context.codingPath + [key]))'"
        } catch let DecodingError.valueNotFound(_, context) {
            return "field '\(fieldPath(context.codingPath))' is null"
        } catch let DecodingError.typeMismatch(type, context) {
            return "field '\(fieldPath(context.codingPath))' is not \(typeName(type))"
        } catch let DecodingError.dataCorrupted(context) {
            return "field '\(fieldPath(context.codingPath))' is not valid"
        } catch {}
        return "its fields do not match the saved state's schema"
    }

    /// `refresh_tokens[0].client_id`.
    private static func fieldPath(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue { text += "[\(index)]" } else { text += text.isEmpty ? key.stringValue : ".\(key.stringValue)" }
        }
        return text.isEmpty ? "(top level)" : text
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Double.Type: "a number"
        case is Bool.Type: "true or false"
        case is [Any].Type: "an array"
        default: type is [String: Any].Type ? "an object" : "of the expected type"
        }
    }
}
