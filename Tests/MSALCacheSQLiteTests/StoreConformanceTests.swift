import Foundation
import MSALCache
import MSALCacheSQLite
import MSALCore
import Synchronization
import Testing

/// The TokenCacheStore contract, checked against every backend this package has.
enum Backend: String, CaseIterable, Sendable {
    case inMemory
    case sqlite
    case jsonFile

    /// Makes a store; file-based ones live in `directory`. `name` lets two calls share one file.
    func make(_ directory: TemporaryDirectory, name: String? = nil) throws -> any TokenCacheStore {
        switch self {
        case .inMemory: InMemoryTokenCacheStore()
        case .sqlite: try SQLiteTokenCacheStore(path: directory.file(name ?? "cache.sqlite"))
        case .jsonFile: try JSONFileTokenCacheStore(path: directory.file(name ?? "msal_token_cache.json"))
        }
    }
}

@Suite("TokenCacheStore contract")
struct StoreConformanceTests {
    @Test("apply stores upserts under their keys, removes first, ignores missing removals", arguments: Backend.allCases)
    func applySemantics(backend: Backend) throws {
        let directory = try TemporaryDirectory()
        let store = try backend.make(directory)
        #expect(try store.readAll() == TokenCacheContents())
        let a = Sample.accessToken(home: "a.t", secret: "AT-a")
        let b = Sample.accessToken(home: "b.t", secret: "AT-b")
        try store.apply(TokenCacheChange(upserts: [.accessToken(a), .accessToken(b), .account(Sample.account(home: "a.t"))]))
        var contents = try store.readAll()
        #expect(contents.accessTokens == [a.key: a, b.key: b])
        #expect(contents.accounts.count == 1)

        // Removal then upsert of the same key in one change: the upsert wins.
        var a2 = a
        a2.secret = "AT-a2"
        try store.apply(TokenCacheChange(
            upserts: [.accessToken(a2)],
            removals: [CacheEntryRemoval(.accessToken(a)), CacheEntryRemoval(.accessToken(b)), CacheEntryRemoval(kind: .idToken, key: "missing")]))
        contents = try store.readAll()
        #expect(contents.accessTokens == [a.key: a2])

        // Last writer wins per key.
        var a3 = a
        a3.secret = "AT-a3"
        try store.apply(TokenCacheChange(upserts: [.accessToken(a3)]))
        #expect(try store.readAll().accessTokens[a.key]?.secret == "AT-a3")
    }

    @Test("Every entry kind round-trips with its unknown fields", arguments: Backend.allCases)
    func allKindsRoundTrip(backend: Backend) throws {
        let directory = try TemporaryDirectory()
        let store = try backend.make(directory)
        var at = Sample.accessToken(home: "h.t", secret: "AT")
        at.extendedExpiresOn = Sample.t0.addingTimeInterval(7200)
        at.refreshOn = Sample.t0.addingTimeInterval(1800)
        at.additionalFields = ["future": .object(["nested": .array([.bool(true), .null, .number(1.5)])])]
        let entries: [CacheEntry] = [
            .accessToken(at),
            .refreshToken(RefreshTokenEntry(homeAccountID: "h.t", environment: Sample.environment, clientID: Sample.clientID, familyID: "1",
                                            secret: "RT", target: "a b", additionalFields: ["last_modification_time": .string("1700000000")])),
            .idToken(IDTokenEntry(homeAccountID: "h.t", environment: Sample.environment, clientID: Sample.clientID, realm: "r", secret: "ID")),
            .account(AccountEntry(homeAccountID: "h.t", environment: Sample.environment, realm: "r", localAccountID: "l", username: "u",
                                  authorityType: "Other", accountSource: "device_code", name: "N", givenName: "G", familyName: "F",
                                  additionalFields: ["client_info": .string("abc")])),
            .appMetadata(AppMetadataEntry(clientID: Sample.clientID, environment: Sample.environment, familyID: "1")),
        ]
        try store.apply(TokenCacheChange(upserts: entries))
        let contents = try store.readAll()
        for entry in entries {
            #expect(contents.entry(kind: entry.kind, key: entry.key) == entry)
        }
        #expect(contents.count == entries.count)
    }

    @Test("changeStamp changes after every commit; applyReportingStamps brackets the change", arguments: Backend.allCases)
    func changeStamps(backend: Backend) throws {
        let directory = try TemporaryDirectory()
        let store = try backend.make(directory)
        let s0 = try store.changeStamp()
        #expect(try store.changeStamp() == s0)  // no change, same stamp
        let stamps = try store.applyReportingStamps(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "h.t", secret: "AT"))]))
        #expect(stamps.before == s0)
        #expect(stamps.after != s0)
        #expect(try store.changeStamp() == stamps.after)
        try store.apply(TokenCacheChange(removals: [CacheEntryRemoval(kind: .account, key: "x")]))
        #expect(try store.changeStamp() != stamps.after)
    }

    @Test("Concurrent writers on one store lose nothing", arguments: Backend.allCases)
    func concurrentWritersOneStore(backend: Backend) async throws {
        let directory = try TemporaryDirectory()
        let store = try backend.make(directory)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<6 {
                group.addTask {
                    for i in 0..<40 {
                        try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "w\(worker)-\(i).t", secret: "AT"))]))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try store.readAll().accessTokens.count == 240)
    }

    @Test("Readers never see half of a change", arguments: Backend.allCases)
    func readersSeeWholeChanges(backend: Backend) throws {
        let directory = try TemporaryDirectory()
        let writer = try backend.make(directory)
        // For file-based stores the reader is a second store (connection) on the same file.
        let reader = backend == .inMemory ? writer : try backend.make(directory)
        let finished = Flag()
        let failure = Mutex<(any Error)?>(nil)
        // A real thread: the reader below spins, and must not starve the writer of a pool thread.
        let thread = Thread {
            defer { finished.set() }
            do {
                for batch in 0..<60 {
                    let entries = (0..<10).map { CacheEntry.accessToken(Sample.accessToken(home: "b\(batch)-\($0).t", secret: "AT")) }
                    let previous = batch == 0 ? [] : (0..<10).map {
                        CacheEntryRemoval(.accessToken(Sample.accessToken(home: "b\(batch - 1)-\($0).t", secret: "AT")))
                    }
                    try writer.apply(TokenCacheChange(upserts: entries, removals: previous))
                }
            } catch {
                failure.withLock { $0 = error }
            }
        }
        thread.start()
        var observed = Set<Int>()
        var reads = 0
        while !finished.isSet {
            observed.insert(try reader.readAll().accessTokens.count)
            reads += 1
        }
        #expect(failure.withLock { $0 } == nil)
        #expect(reads > 0)
        #expect(observed.isSubset(of: [0, 10]))
        #expect(try reader.readAll().accessTokens.count == 10)
    }
}

/// A flag set once from another thread.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
