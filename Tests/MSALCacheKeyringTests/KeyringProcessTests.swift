import Foundation
import MSALCache
@testable import MSALCacheKeyring
import MSALCore
import Synchronization
import Testing

extension KeyringTests {
/// Several real processes on one keyring: this test binary started again, filtered to the test that
/// started it, which then plays the role named in `MSAL_KEYRING_CHILD_ROLE` on the same session bus.
@Suite("Several processes")
struct Processes {
    static let environment = ProcessInfo.processInfo.environment
    static let childRole = environment["MSAL_KEYRING_CHILD_ROLE"]

    /// Starts this test binary as a child playing `role`, filtered to the test `test`.
    static func startChild(role: String, test: String, fixture: KeyringFixture, id: Int, extra: [String: String] = [:]) throws -> ChildProcess {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
        var environment = Self.environment
        environment["MSAL_KEYRING_CHILD_ROLE"] = role
        environment["MSAL_KEYRING_CHILD_GROUP"] = fixture.accessGroup
        environment["MSAL_KEYRING_CHILD_LOCKS"] = fixture.lockDirectory
        environment["MSAL_KEYRING_CHILD_ID"] = String(id)
        environment.merge(extra) { $1 }
        return try ChildProcess(binary, ["--testing-library", "swift-testing", "--filter", test], environment: environment)
    }

    /// The child's store: the parent's group and lock directory.
    static func childStore() throws -> KeyringTokenCacheStore {
        try KeyringTokenCacheStore(accessGroup: environment["MSAL_KEYRING_CHILD_GROUP"]!, lockDirectory: environment["MSAL_KEYRING_CHILD_LOCKS"]!)
    }

    @Test("Writers in three processes lose nothing")
    func writersInSeveralProcesses() throws {
        if let role = Self.childRole {
            guard role == "writer" else { return }
            let store = try Self.childStore()
            let id = Self.environment["MSAL_KEYRING_CHILD_ID"]!
            for i in 0..<10 {
                try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "p\(id)-\(i).t"))]))
            }
            print("MSAL-KEYRING-CHILD writer \(id) done")
            return
        }
        let fixture = KeyringFixture("processes")
        let store = try fixture.store()
        let children = try (1...2).map { try Self.startChild(role: "writer", test: "writersInSeveralProcesses", fixture: fixture, id: $0) }
        for i in 0..<10 {
            try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "p0-\(i).t"))]))
        }
        for (index, child) in children.enumerated() {
            let result = child.wait(timeout: 120)
            #expect(result.status == 0 && !result.timedOut, "child \(index + 1):\n\(result.output)")
            #expect(result.output.contains("MSAL-KEYRING-CHILD writer \(index + 1) done"), "child \(index + 1):\n\(result.output)")
        }
        let tokens = try store.readAll().accessTokens.values.map(\.homeAccountID)
        #expect(Set(tokens) == Set((0...2).flatMap { id in (0..<10).map { "p\(id)-\($0).t" } }))
    }

    static let killedCount = 12

    static func versionedChange(_ version: Int) -> TokenCacheChange {
        TokenCacheChange(upserts: (0..<killedCount).map { .accessToken(Sample.accessToken(home: "k\($0).t", secret: "v\(version)")) })
    }

    /// The versions of the access tokens (a whole state has exactly one).
    static func versions(_ contents: TokenCacheContents) -> Set<String> { Set(contents.accessTokens.values.map(\.secret)) }

    @Test("A writer killed with SIGKILL at a point inside a change leaves the state before it", arguments: [
        KeyringTokenCacheStore.CrashPoint.afterJournal, .afterKeys(1), .afterKeys(6), .afterKeys(12),
    ])
    func writerKilledInsideAChange(_ point: KeyringTokenCacheStore.CrashPoint) throws {
        if let role = Self.childRole {
            guard role == "paused", Self.environment["MSAL_KEYRING_CHILD_POINT"] == "\(point)" else { return }
            let store = try Self.childStore()
            store.writeHook.withLock {
                $0 = { reached in
                    guard reached == point else { return }
                    FileHandle.standardOutput.write(Data("MSAL-KEYRING-CHILD paused\n".utf8))
                    while true { sleep(60) }  // until the parent kills this process
                }
            }
            try store.apply(Self.versionedChange(1))
            Issue.record("the change finished without reaching \(point)")
            return
        }
        let fixture = KeyringFixture("killed-at")
        let store = try fixture.store()
        try store.apply(Self.versionedChange(0))
        let child = try Self.startChild(
            role: "paused", test: "writerKilledInsideAChange", fixture: fixture, id: 0, extra: ["MSAL_KEYRING_CHILD_POINT": "\(point)"])
        let paused = child.waitForOutput(containing: "MSAL-KEYRING-CHILD paused", timeout: 120)
        child.kill()
        let result = child.wait(timeout: 120)
        try #require(paused, "the child did not reach \(point):\n\(result.output)")

        // Killed inside the change: the counter is odd and the change partly written.
        #expect(try fixture.lockFile.readCounter() & 1 == 1)
        #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup, ["kind": KeyringItemLayout.journalKind]).count == 1)
        let contents = try store.readAll()
        #expect(Self.versions(contents) == ["v0"])
        #expect(contents.accessTokens.count == Self.killedCount)
        #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup).count == Self.killedCount)  // no journal, no duplicates
        #expect(try store.changeStamp() & 1 == 0)
    }

    @Test("A writer killed with SIGKILL at a random moment leaves a whole state behind")
    func killedWriter() throws {
        if let role = Self.childRole {
            guard role == "killed" else { return }
            let store = try Self.childStore()
            for version in 1... {
                FileHandle.standardOutput.write(Data("MSAL-KEYRING-CHILD applying \(version)\n".utf8))  // unbuffered
                try store.apply(Self.versionedChange(version))
            }
            return
        }
        for attempt in 0..<3 {
            let fixture = KeyringFixture("killed")
            let store = try fixture.store()
            try store.apply(Self.versionedChange(0))
            let child = try Self.startChild(role: "killed", test: "killedWriter", fixture: fixture, id: attempt)
            // Kill at a random moment of a change, as long as the previous change took.
            #expect(child.waitForOutput(containing: "MSAL-KEYRING-CHILD applying 2", timeout: 120), "the child did not start writing:\n\(child.output)")
            let start = Date()
            #expect(child.waitForOutput(containing: "MSAL-KEYRING-CHILD applying 3", timeout: 120))
            let duration = Date().timeIntervalSince(start)
            usleep(UInt32(Double.random(in: 0...max(duration, 0.001)) * 1_000_000))
            child.kill()
            _ = child.wait(timeout: 120)
            let applying = child.output.split(separator: "\n").compactMap { line -> Int? in
                guard line.hasPrefix("MSAL-KEYRING-CHILD applying ") else { return nil }
                return Int(line.dropFirst("MSAL-KEYRING-CHILD applying ".count))
            }.max() ?? 0

            // Every token has the version of one whole change: the one being applied or the one before.
            let contents = try store.readAll()
            #expect(contents.accessTokens.count == Self.killedCount)
            let versions = Self.versions(contents)
            #expect(versions == ["v\(applying)"] || versions == ["v\(applying - 1)"], "attempt \(attempt): \(versions), applying \(applying)")
            #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup).count == Self.killedCount)  // no journal, no duplicates
            #expect(try store.changeStamp() & 1 == 0)
        }
    }
}
}
