// msal-cache-worker: test tooling, not a product. The process tests (Tests/MSALCacheProcessTests)
// run many of these at once on one token cache store, and kill them, to check that every
// persistent backend keeps the TokenCacheStore contract across processes and crashes.
//
//   msal-cache-worker write --backend B <store> --worker N --count C [--wait-for-go]
//       Opens the store, prints "ready"; with --wait-for-go waits for the line "go" on stdin (so
//       many workers start writing together); then applies C changes of one entry each
//       (Fixtures.workerEntry) and prints "done N C <slowest apply ms> <total ms> <first> <last>",
//       the last two the wall-clock times (ms since 1970) its first and last writes returned.
//   msal-cache-worker crash-writer --backend B <store> --from G [--units U] [--secret-bytes S]
//                                  [--generations N]
//       Opens the store (which must hold generation G), prints "ready", then for k = G+1, G+2, …
//       prints "begin k", applies Fixtures.change(toGeneration: k), prints "committed k"; each
//       line is written unbuffered before the program goes on. Stops after N changes (default:
//       never, it is meant to be killed) and prints "finished k".
//   msal-cache-worker hold-lock --backend B <store>
//       Takes the lock the backend's writers take, prints "locked" and sleeps until killed.
//   msal-cache-worker check --backend B <store>
//       Opens the store, reads it and checks its storage; prints "ok <entries>".
//
//   <store>: --path P [--key-file K] [--access-group G] [--lock-timeout SECONDS (default: the backend's)]
//   B: sqlite | json | encrypted-file
//
// Exit status 0 on success, 1 when the store fails (one line on stderr with the error's code and
// message), 2 for a usage error. It prints no secret: the entries it writes hold made-up markers.

import Foundation
import MSALCache
import MSALCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@main
enum Worker {
    static func main() {
        do {
            try run(Array(CommandLine.arguments.dropFirst()))
            exit(0)
        } catch let error as UsageError {
            emitError("usage error: \(error.message)")
            exit(2)
        } catch let error as MSALError {
            emitError("error: \(error.codeString): \(error.message)")
            exit(1)
        } catch {
            emitError("error: \(error)")
            exit(1)
        }
    }

    static func run(_ arguments: [String]) throws {
        guard let command = arguments.first else { throw UsageError(message: "no command (write, crash-writer, hold-lock, check)") }
        var options = try Arguments(Array(arguments.dropFirst()))
        let backend = try options.backend()
        let store = try options.storeOptions()
        switch command {
        case "write":
            let worker = try options.integer("--worker")
            let count = try options.integer("--count")
            let waitForGo = options.flag("--wait-for-go")
            try options.finish()
            try write(backend, store, worker: worker, count: count, waitForGo: waitForGo)
        case "crash-writer":
            let from = try options.integer("--from")
            let shape = Fixtures.GenerationShape(
                units: try options.integer("--units", default: 20), secretBytes: try options.integer("--secret-bytes", default: 2048))
            let generations = try options.integer("--generations", default: Int.max)
            try options.finish()
            try crashWriter(backend, store, from: from, shape: shape, generations: generations)
        case "hold-lock":
            try options.finish()
            try holdLock(backend, store)
        case "check":
            try options.finish()
            let contents = try backend.makeStore(store).readAll()
            if let problem = backend.integrityProblem(store) { throw MSALError.internal(.cacheError, problem) }
            emit("ok \(contents.count)")
        default:
            throw UsageError(message: "unknown command '\(command)' (write, crash-writer, hold-lock, check)")
        }
    }

    /// `write`: one entry per change, `count` changes.
    static func write(_ backend: Backend, _ options: StoreOptions, worker: Int, count: Int, waitForGo: Bool) throws {
        let store = try backend.makeStore(options)
        emit("ready")
        if waitForGo {
            guard let line = readLine(), line == "go" else { throw UsageError(message: "expected the line 'go' on stdin") }
        }
        let start = Date()
        var slowest: TimeInterval = 0
        var first: Date?
        for index in 0..<count {
            let before = Date()
            do {
                try store.apply(TokenCacheChange(upserts: [Fixtures.workerEntry(worker: worker, index: index)]))
            } catch {
                let waited = Int(Date().timeIntervalSince(before) * 1000)
                throw MSALError.internal(.cacheError, "worker \(worker), write \(index), failed after \(waited) ms: \(error.message)")
            }
            let now = Date()
            slowest = max(slowest, now.timeIntervalSince(before))
            if first == nil { first = now }
        }
        let end = Date()
        func milliseconds(_ date: Date) -> Int { Int(date.timeIntervalSince1970 * 1000) }
        emit("done \(worker) \(count) \(Int(slowest * 1000)) \(Int(end.timeIntervalSince(start) * 1000)) \(milliseconds(first ?? end)) \(milliseconds(end))")
    }

    /// `crash-writer`: generation after generation, until killed or `generations` are written.
    static func crashWriter(_ backend: Backend, _ options: StoreOptions, from: Int, shape: Fixtures.GenerationShape, generations: Int) throws {
        let store = try backend.makeStore(options)
        emit("ready")
        var generation = from
        var written = 0
        let parent = getppid()
        if parent == 1 { _exit(0) }  // the test that started it is already gone
        while written < generations {
            // A test that died before killing its writer must not leave it writing forever.
            if getppid() != parent { _exit(0) }  // at once: no exit handlers that could wait on a lock
            let change = Fixtures.change(toGeneration: generation + 1, shape: shape)
            emit("begin \(generation + 1)")
            try store.apply(change)
            generation += 1
            written += 1
            emit("committed \(generation)")
        }
        emit("finished \(generation)")
    }

    /// `hold-lock`: takes the writers' lock and never lets go.
    static func holdLock(_ backend: Backend, _ options: StoreOptions) throws {
        if let lockFile = backend.lockFilePath(options) {
            let descriptor = open(lockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0, flock(descriptor, LOCK_EX) == 0 else {
                throw MSALError.internal(.cacheError, "cannot lock '\(lockFile)': \(String(cString: strerror(errno)))")
            }
        } else if let problem = SQLiteCheck.holdWriteLock(path: options.path) {
            throw MSALError.internal(.cacheError, problem)
        }
        emit("locked")
        // Until killed; or until the test that started it is gone (checked once a second).
        let parent = getppid()
        while parent != 1, getppid() == parent { sleep(1) }
    }

    /// Writes one line to stdout with one `write(2)`, so it is in the pipe before the program goes on.
    static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func emitError(_ line: String) {
        FileHandle.standardError.write(Data(("msal-cache-worker: " + line + "\n").utf8))
    }
}

struct UsageError: Error {
    let message: String
}

/// `--name value` pairs and flags, consumed as they are asked for.
struct Arguments {
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    init(_ arguments: [String]) throws {
        var index = 0
        while index < arguments.count {
            let name = arguments[index]
            guard name.hasPrefix("--") else { throw UsageError(message: "unexpected argument '\(name)'") }
            if name == "--wait-for-go" {
                flags.insert(name)
                index += 1
                continue
            }
            guard index + 1 < arguments.count else { throw UsageError(message: "\(name) needs a value") }
            guard values[name] == nil else { throw UsageError(message: "\(name) given twice") }
            values[name] = arguments[index + 1]
            index += 2
        }
    }

    mutating func string(_ name: String) -> String? { values.removeValue(forKey: name) }

    mutating func flag(_ name: String) -> Bool { flags.remove(name) != nil }

    mutating func integer(_ name: String, default fallback: Int? = nil) throws -> Int {
        guard let text = string(name) else {
            guard let fallback else { throw UsageError(message: "\(name) is required") }
            return fallback
        }
        guard let value = Int(text), value >= 0 else { throw UsageError(message: "\(name) must be a whole number ≥ 0, not '\(text)'") }
        return value
    }

    mutating func backend() throws -> Backend {
        guard let name = string("--backend") else { throw UsageError(message: "--backend is required") }
        guard let backend = Backend(rawValue: name) else {
            throw UsageError(message: "unknown backend '\(name)' (\(Backend.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return backend
    }

    mutating func storeOptions() throws -> StoreOptions {
        guard let path = string("--path") else { throw UsageError(message: "--path is required") }
        var options = StoreOptions(path: path, keyFile: string("--key-file"))
        if let group = string("--access-group") { options.accessGroup = group }
        if let timeout = string("--lock-timeout") {
            guard let seconds = TimeInterval(timeout), seconds >= 0 else { throw UsageError(message: "--lock-timeout must be seconds ≥ 0") }
            options.lockTimeout = seconds
        }
        return options
    }

    /// Fails on any argument nobody asked for.
    func finish() throws {
        if let name = values.keys.sorted().first ?? flags.sorted().first {
            throw UsageError(message: "unknown option \(name)")
        }
    }
}
