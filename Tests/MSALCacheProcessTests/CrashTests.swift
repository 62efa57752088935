import Foundation
import MSALCache
import MSALCore
import MSALTestSupport
import Testing
@testable import msal_cache_worker

extension ProcessTests {
    /// Kill rounds per backend: `MSAL_CRASH_ROUNDS`, default 100.
    static let crashRounds = environmentInteger("MSAL_CRASH_ROUNDS", default: 100)
    /// The kill delays are drawn uniformly from 0 to this many milliseconds after the writer starts:
    /// `MSAL_CRASH_MAX_DELAY_MS`, default 400 (the keyring: 3000, as each of its items is a D-Bus
    /// call and a rewrite of gnome-keyring's file); one round in five draws from 0 to 50 ms instead,
    /// where a debug worker is still starting or opening the store. So some kills land before the
    /// first write, most inside one.
    static func crashMaximumDelay(_ backend: Backend) -> Int {
        environmentInteger("MSAL_CRASH_MAX_DELAY_MS", default: backend == .keyring ? 3000 : 400)
    }

    /// The shape of each generation: 20 units of five entries with 2 KiB secrets, a change of some
    /// 200 KiB, so that a write takes long enough for many kills to land inside it (the keyring: 2
    /// units, ten items, which already take long enough).
    static func crashShape(_ backend: Backend) -> Fixtures.GenerationShape {
        Fixtures.GenerationShape(
            units: environmentInteger("MSAL_CRASH_UNITS", default: backend == .keyring ? 2 : 20),
            secretBytes: environmentInteger("MSAL_CRASH_SECRET_BYTES", default: 2048))
    }

    /// The seed of the kill delays: `MSAL_CRASH_SEED` to repeat a run, else random (printed).
    static func crashSeed() -> UInt64 {
        ProcessInfo.processInfo.environment["MSAL_CRASH_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
    }

    @Test("A writer SIGKILLed at random points: the store always opens to the state before or after the interrupted write", arguments: ProcessTests.backends)
    func killedWriters(backend: Backend) async throws {
        let crashShape = Self.crashShape(backend)
        try WorkerBinary.require()
        let directory = try TemporaryDirectory()
        let options = backend.testOptions(directory: directory)[0]
        defer { backend.cleanUp([options]) }
        let seed = Self.crashSeed()
        var random = SplitMix64(seed: seed)
        print("crash[\(backend)]: seed \(seed) (MSAL_CRASH_SEED=\(seed) repeats the kill delays), \(Self.crashRounds) rounds")
        let started = ContinuousClock.now

        var generation = 0  // the generation the store holds, checked after every round
        var killedBeforeFirstWrite = 0, killedInsideWrite = 0, killedBetweenWrites = 0
        var committedButUnreported = 0, mostTemporaryFiles = 0, commits = 0, killedMidReplace = 0
        for round in 1...Self.crashRounds {
            let early = Int.random(in: 0..<5, using: &random) == 0
            let delay = Int.random(in: 0...(early ? 50 : Self.crashMaximumDelay(backend)), using: &random)
            let writer = try WorkerProcess(
                ["crash-writer", "--backend", backend.rawValue] + options.arguments
                    + ["--from", String(generation), "--units", String(crashShape.units),
                       "--secret-bytes", String(crashShape.secretBytes)],
                directory: directory.path, name: "crash-writer")
            try await Task.sleep(for: .milliseconds(delay))
            writer.kill()
            let status = try await writer.wait()
            // Killed, never ended by itself (it writes until killed; an error would end it).
            try #require(status == 128 + SIGKILL, "round \(round) (seed \(seed)): the writer was not killed but ended: \(writer.summary)")

            let lines = writer.lines
            let begun = lines.compactMap { $0.hasPrefix("begin ") ? Int($0.dropFirst(6)) : nil }.max()
            let committed = lines.compactMap { $0.hasPrefix("committed ") ? Int($0.dropFirst(10)) : nil }.max() ?? generation
            commits += committed - generation
            if begun == nil { killedBeforeFirstWrite += 1 } else if begun! > committed { killedInsideWrite += 1 } else { killedBetweenWrites += 1 }

            // The store opens, and holds the whole of the last reported generation or of the next.
            let contents: TokenCacheContents
            do {
                contents = try backend.makeStore(options).readAll()
            } catch {
                Issue.record("round \(round) (seed \(seed), delay \(delay) ms): the store does not open after the kill: \(error)")
                return
            }
            if let problem = backend.integrityProblem(options) {
                Issue.record("round \(round) (seed \(seed), delay \(delay) ms): \(problem)")
                return
            }
            let state = Fixtures.generationState(of: contents, shape: crashShape)
            guard case .complete(let found) = state else {
                Issue.record("round \(round) (seed \(seed), delay \(delay) ms, last committed \(committed)): \(state)")
                return
            }
            let possible = begun.map { $0 > committed } == true ? [committed, committed + 1] : [committed]
            try #require(
                possible.contains(found),
                "round \(round) (seed \(seed), delay \(delay) ms): the store holds generation \(found); the writer last reported \(committed) and began \(begun.map(String.init) ?? "none")")
            if found == committed + 1 { committedButUnreported += 1 }
            generation = found
            // A temporary file of this writer: it was killed after writing it and before renaming it.
            let temporaryFiles = backend.temporaryFiles(options)
            if temporaryFiles.contains(where: { $0.contains(".tmp-\(writer.processIdentifier)-") }) { killedMidReplace += 1 }
            mostTemporaryFiles = max(mostTemporaryFiles, temporaryFiles.count)
        }

        // Still usable: a writer that is not killed takes the lock, writes the next generation and ends.
        let finisher = try WorkerProcess(
            ["crash-writer", "--backend", backend.rawValue] + options.arguments
                + ["--from", String(generation), "--units", String(crashShape.units),
                   "--secret-bytes", String(crashShape.secretBytes), "--generations", "1"],
            directory: directory.path, name: "finisher")
        let status = try await finisher.wait()
        #expect(status == 0, "\(finisher.summary)")
        let final = Fixtures.generationState(of: try backend.makeStore(options).readAll(), shape: crashShape)
        #expect(final == .complete(generation + 1), "after the last round: \(final)")
        #expect(backend.integrityProblem(options) == nil, "\(backend.integrityProblem(options) ?? "")")
        let leftovers = backend.temporaryFiles(options)

        print("""
            crash[\(backend)]: \(Self.crashRounds) kills in \(format(ContinuousClock.now - started)) (seed \(seed)): \
            \(killedBeforeFirstWrite) before the first write, \(killedInsideWrite) inside a write, \(killedBetweenWrites) between writes; \
            \(commits) writes committed, \(committedButUnreported) kills after a commit and before its report, \
            \(killedInsideWrite - committedButUnreported) inside a write that was rolled back \
            (\(killedMidReplace) of them left a temporary file: killed between writing and renaming it); \
            at most \(mostTemporaryFiles) temporary files beside the store, \(leftovers.count) after a clean write
            """)
        // A killed writer's temporary file is removed by the next writer that takes the lock, so at
        // most the last one is ever there, and none after a clean write.
        #expect(mostTemporaryFiles <= 1, "temporary files of killed writers pile up: \(mostTemporaryFiles)")
        #expect(leftovers.isEmpty, "temporary files left after a clean write: \(leftovers)")
        // The kills covered both sides: inside writes, and outside them (starting up or between writes).
        #expect(killedInsideWrite > 0, "no kill landed inside a write; raise MSAL_CRASH_UNITS or lower MSAL_CRASH_MAX_DELAY_MS")
        #expect(killedBeforeFirstWrite + killedBetweenWrites > 0, "every kill landed inside a write")
        #expect(commits > 0, "no write was ever committed")
    }
}
