import Foundation
import MSALCache
import MSALCore
import Testing
@testable import msal_cache_worker

extension ProcessTests {
    @Test("A writer SIGKILLed while holding the lock leaves no stale lock: the next writer gets it at once", arguments: ProcessTests.backends)
    func noStaleLock(backend: Backend) async throws {
        try WorkerBinary.require()
        let directory = try TemporaryDirectory()
        var options = backend.testOptions(directory: directory)[0]
        defer { backend.cleanUp([options]) }
        func writer(_ worker: Int, count: Int, lockTimeout: TimeInterval?) throws -> WorkerProcess {
            options.lockTimeout = lockTimeout
            return try WorkerProcess(
                ["write", "--backend", backend.rawValue] + options.arguments + ["--worker", String(worker), "--count", String(count)],
                directory: directory.path, name: "writer-\(worker)")
        }

        // A store with one entry, then a process that holds its writers' lock.
        let first = try writer(0, count: 1, lockTimeout: nil)
        #expect(try await first.wait() == 0, "\(first.summary)")
        let holder = try WorkerProcess(["hold-lock", "--backend", backend.rawValue] + options.arguments, directory: directory.path, name: "holder")
        defer { if holder.exitStatus == nil { holder.kill() } }
        let locked = try await holder.waitForLine("locked")
        try #require(locked, "\(holder.summary)")

        // While it lives, the lock is really held: a writer that waits at most one second gives up,
        // says so, and writes nothing.
        let blocked = try writer(1, count: 1, lockTimeout: 1)
        #expect(try await blocked.wait() == 1, "\(blocked.summary)")
        #expect(blocked.errorOutput.contains("locked"), "\(blocked.summary)")

        // Killed while holding it: the next writer gets the lock within its 2-second timeout.
        holder.kill()
        #expect(try await holder.wait() == 128 + SIGKILL)
        let next = try writer(2, count: 5, lockTimeout: 2)
        #expect(try await next.wait() == 0, "a writer after the holder's death: \(next.summary)")

        let contents = try backend.makeStore(options).readAll()
        let expected = [Fixtures.workerEntry(worker: 0, index: 0)] + (0..<5).map { Fixtures.workerEntry(worker: 2, index: $0) }
        #expect(contents.count == expected.count)
        for entry in expected {
            #expect(contents.entry(kind: entry.kind, key: entry.key) == entry, "\(entry.kind.rawValue) \(entry.key)")
        }
        #expect(backend.integrityProblem(options) == nil, "\(backend.integrityProblem(options) ?? "")")
    }
}
