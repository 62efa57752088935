import Foundation
import MSALCache
import MSALCore
import Testing
@testable import msal_cache_worker

/// The process tests of every persistent backend, one at a time: they start many processes, and
/// run on a two-core machine.
@Suite("Token cache stores shared by processes and killed writers", .serialized)
struct ProcessTests {
    /// The backends under test: all, or those `MSAL_PROCESS_BACKENDS` names (comma-separated raw
    /// values, e.g. `json,sqlite`) to run a few while working on one. The keyring only in a
    /// throwaway keyring session (scripts/lib/keyring-session.sh, as scripts/test.sh runs the tests),
    /// never in a developer's own keyring; always when MSAL_KEYRING_REQUIRED=1 (then it fails
    /// without one).
    static let backends: [Backend] = {
        let environment = ProcessInfo.processInfo.environment
        let keyring = environment["MSAL_TEST_KEYRING_SESSION"] == "1" || environment["MSAL_KEYRING_REQUIRED"] == "1"
        guard let names = environment["MSAL_PROCESS_BACKENDS"] else { return Backend.allCases.filter { $0 != .keyring || keyring } }
        return names.split(separator: ",").compactMap { Backend(rawValue: String($0)) }
    }()
}

extension ProcessTests {
    /// 16 processes write 200 changes each, all at once, on one store.
    static let workers = environmentInteger("MSAL_PROCESS_WORKERS", default: 16)
    /// 200 per worker; on the keyring 25 unless `MSAL_PROCESS_WRITES` says otherwise: gnome-keyring
    /// rewrites its whole keyring file for every item it creates, so 3200 items written one by one by
    /// 16 processes take far longer than a test run should (Docs/CacheBackends.md gives the full-size
    /// run's time; `MSAL_PROCESS_WRITES=200 MSAL_PROCESS_BACKENDS=keyring` repeats it).
    static func writesPerWorker(_ backend: Backend) -> Int {
        environmentInteger("MSAL_PROCESS_WRITES", default: backend == .keyring ? 25 : 200)
    }

    @Test("16 processes × 200 writes on one store: every write is there exactly as written, the store opens cleanly", arguments: ProcessTests.backends)
    func manyWriters(backend: Backend) async throws {
        let writesPerWorker = Self.writesPerWorker(backend)
        try WorkerBinary.require()
        let directory = try TemporaryDirectory()
        // Even workers write the default group, odd ones another: both partitions under contention.
        let groups = backend.testOptions(directory: directory, groups: 2)
        defer { backend.cleanUp(groups) }
        let started = ContinuousClock.now
        var workers: [WorkerProcess] = []
        defer { for worker in workers where worker.exitStatus == nil { worker.kill() } }
        for worker in 0..<Self.workers {
            let options = groups[worker % 2]
            workers.append(try WorkerProcess(
                ["write", "--backend", backend.rawValue] + options.arguments
                    + ["--worker", String(worker), "--count", String(writesPerWorker), "--wait-for-go"],
                directory: directory.path, name: "worker-\(worker)"))
        }
        // The barrier: every worker has opened the store before any writes.
        for worker in workers {
            let ready = try await worker.waitForLine("ready")
            try #require(ready, "a worker did not start: \(worker.summary)")
        }
        let go = ContinuousClock.now
        for worker in workers { worker.send("go") }
        var slowestApply = 0
        var firstWrites: [Int] = [], lastWrites: [Int] = []
        for (index, worker) in workers.enumerated() {
            let status = try await worker.wait()
            #expect(status == 0, "\(worker.summary)")
            let done = worker.lines.first { $0.hasPrefix("done ") }?.split(separator: " ") ?? []
            #expect(done.count == 7 && done[1] == "\(index)" && done[2] == "\(writesPerWorker)", "worker \(index) printed \(worker.lines)")
            if done.count == 7 {
                slowestApply = max(slowestApply, Int(done[3]) ?? 0)
                firstWrites.append(Int(done[5]) ?? 0)
                lastWrites.append(Int(done[6]) ?? 0)
            }
        }
        let writing = ContinuousClock.now - go

        // Every write is present exactly as written, in its own group, and nothing else is.
        for (parity, options) in groups.enumerated() {
            let group = options.accessGroup
            let contents = try backend.makeStore(options).readAll()
            let expected = stride(from: parity, to: Self.workers, by: 2).flatMap { worker in
                (0..<writesPerWorker).map { Fixtures.workerEntry(worker: worker, index: $0) }
            }
            #expect(contents.count == expected.count, "\(backend) group \(group): \(contents.count) entries, expected \(expected.count)")
            #expect(contents.unreadableEntries.count == 0 && contents.unknownSections.count == 0, "\(backend) group \(group) has unreadable entries or unknown sections")
            let missing = expected.filter { contents.entry(kind: $0.kind, key: $0.key) == nil }
            let different = expected.filter { entry in contents.entry(kind: entry.kind, key: entry.key).map { $0 != entry } ?? false }
            #expect(missing.count == 0, "\(backend) lost \(missing.count) writes, e.g. \(missing.prefix(5).map(\.key))")
            #expect(different.count == 0, "\(backend) garbled \(different.count) entries, e.g. \(different.prefix(5).map(\.key))")
        }
        let options = groups[0]
        #expect(backend.integrityProblem(options) == nil, "\(backend): \(backend.integrityProblem(options) ?? "")")
        #expect(backend.temporaryFiles(options).isEmpty, "\(backend) left temporary files: \(backend.temporaryFiles(options))")
        // How much the writers interleaved: how many had finished before the last one's first write.
        let lastStart = firstWrites.max() ?? 0
        let finishedBeforeLastStart = lastWrites.filter { $0 < lastStart }.count
        print("""
            many-writers[\(backend)]: \(Self.workers) processes × \(writesPerWorker) writes: \(format(writing)) writing, \
            slowest single write \(slowestApply) ms, \(finishedBeforeLastStart) workers had finished before the last one's first write, \
            \(format(ContinuousClock.now - started)) in all
            """)
    }
}

/// Seconds with one decimal.
func format(_ duration: Duration) -> String {
    let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    return String(format: "%.1f s", seconds)
}
