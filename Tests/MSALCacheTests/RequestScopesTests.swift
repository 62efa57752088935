import Foundation
@testable import MSALCache
import MSALCore
import Testing

/// The numbers a request's scopes keep between lookups (``RequestScopes``): used only under the
/// numbering they were given in, so a lookup never reads another scope's number.
@Suite("Request scopes: kept scope numbers")
struct RequestScopesTests {
    @Test("Numbers are kept on the first lookup and used by the next, under the same numbering")
    func keptUnderSameNumbering() throws {
        var table = ScopeTable()
        _ = table.intern(target: "Files.Read Mail.Read User.Read")
        let request = RequestScopes(try ScopeSet.validatedRequest(["User.Read", "files.read"]))
        #expect(request.numbers(in: table.numberingName) == nil)
        let first = table.withIDs(of: request) { $0.map(Array.init) }
        let expected = table.withIDs(of: request.set) { $0.map(Array.init) }
        #expect(first == expected)
        #expect(first?.count == 2)
        #expect(request.numbers(in: table.numberingName) == first)
        // Numbering more scopes keeps the numbering: the kept numbers still hold.
        _ = table.intern(target: "Calendars.Read")
        #expect(request.numbers(in: table.numberingName) == first)
        #expect(table.withIDs(of: request) { $0.map(Array.init) } == expected)
    }

    @Test("A scope no cached token holds gets no number, and nothing is kept")
    func unknownScopeKeepsNothing() throws {
        var table = ScopeTable()
        _ = table.intern(target: "User.Read")
        let request = RequestScopes(try ScopeSet.validatedRequest(["User.Read", "Mail.Send"]))
        #expect(table.withIDs(of: request) { $0 == nil })
        #expect(request.numbers(in: table.numberingName) == nil)
        // Once a token holds it, the same request is numbered.
        _ = table.intern(target: "Mail.Send")
        #expect(table.withIDs(of: request) { $0?.count } == 2)
    }

    @Test("Two copies of a table that number different scopes have different numberings, and neither uses the other's kept numbers")
    func divergedCopies() throws {
        var original = ScopeTable()
        _ = original.intern(target: "x")
        var copy = original
        _ = copy.intern(target: "y")  // y is number 1 in the copy
        _ = original.intern(target: "z")  // z is number 1 in the original
        #expect(copy.numberingName != original.numberingName)
        let y = RequestScopes(try ScopeSet.validatedRequest(["y"]))
        #expect(copy.withIDs(of: y) { $0.map(Array.init) } == [1])
        // The original has no y: the numbers kept from the copy must not answer [1] (its z).
        #expect(original.withIDs(of: y) { $0 == nil })
        let z = RequestScopes(try ScopeSet.validatedRequest(["z"]))
        #expect(original.withIDs(of: z) { $0.map(Array.init) } == [1])
        #expect(copy.withIDs(of: z) { $0 == nil })
    }

    @Test("After another cache instance changed the store, the reloaded index does not use numbers kept before")
    func reloadedIndex() throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        try cache.save(accessToken: Sample.accessToken(target: "x", secret: "AT-x"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        let x = RequestScopes(try ScopeSet.validatedRequest(["x"]))
        func lookup(_ scopes: RequestScopes) throws -> String? {
            try cache.accessTokenAndRevision(
                homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant, clientID: Sample.clientID,
                scopes: scopes)?.entry.secret
        }
        #expect(try lookup(x) == "AT-x")
        #expect(try lookup(x) == "AT-x")  // the kept numbers
        // Another instance replaces the token by one for y: reloaded, the index numbers y first.
        let other = TokenCache(store: store)
        try other.save(accessToken: Sample.accessToken(target: "y", secret: "AT-y"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        try other.remove([CacheEntryRemoval(kind: .accessToken, key: Sample.accessToken(target: "x", secret: "").key)])
        #expect(try lookup(x) == nil)
        #expect(try lookup(RequestScopes(try ScopeSet.validatedRequest(["y"]))) == "AT-y")
    }

    @Test("Concurrent lookups with one request's scopes all find the same token")
    func concurrentLookups() async throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        for k in 0..<40 {
            try cache.save(
                accessToken: Sample.accessToken(target: "r\(k)/A r\(k)/B", secret: "AT-\(k)"), refreshToken: nil, idToken: nil,
                account: nil, appMetadata: nil)
        }
        let request = RequestScopes(try ScopeSet.validatedRequest(["r7/B"]))
        let found = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    try cache.accessTokenAndRevision(
                        homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant, clientID: Sample.clientID,
                        scopes: request)?.entry.secret
                }
            }
            var all: [String?] = []
            for try await secret in group { all.append(secret) }
            return all
        }
        #expect(found.count == 64)
        #expect(found.allSatisfy { $0 == "AT-7" })
    }
}

/// An account's access token partitions as the cache held them (``AccountTokenPartitions``): read
/// only while the cache is at the state they were taken from.
@Suite("Account token partitions")
struct AccountTokenPartitionsTests {
    static let otherHome = "0b0b0b0b-0000-4000-8000-0000000b0b0b.aaaaaaaa-0000-4000-8000-00000000aaaa"
    static let guestRealm = "bbbbbbbb-0000-4000-8000-00000000bbbb"

    static func save(_ cache: TokenCache, _ entry: AccessTokenEntry) throws {
        try cache.save(accessToken: entry, refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
    }

    /// The entry's secret, `nil` (not found) or `"stale"`.
    static func throughPartitions(_ cache: TokenCache, _ partitions: AccountTokenPartitions, realm: String, clientID: String = Sample.clientID, _ scopes: [String]) throws -> String? {
        switch try cache.accessTokenAndRevision(in: partitions, realm: realm, clientID: clientID, scopes: RequestScopes(try ScopeSet.validatedRequest(scopes))) {
        case .found(let entry, _): entry.secret
        case .notFound: nil
        case .stale: "stale"
        }
    }

    static func throughIndex(_ cache: TokenCache, realm: String, clientID: String = Sample.clientID, _ scopes: [String]) throws -> String? {
        try cache.accessTokenAndRevision(
            homeAccountID: Sample.home, environment: Sample.environment, realm: realm, clientID: clientID,
            scopes: RequestScopes(try ScopeSet.validatedRequest(scopes)))?.entry.secret
    }

    @Test("Lookups through the partitions answer as the index does: exact, subset, missing scopes, other realm, other client, case")
    func agreeWithIndex() throws {
        let cache = TokenCache(store: InMemoryTokenCacheStore())
        for (realm, prefix) in [(Sample.tenant, "home"), (Self.guestRealm, "guest")] {
            for k in 0..<3 {
                try Self.save(cache, Sample.accessToken(realm: realm, target: "r\(k)/A r\(k)/B", secret: "\(prefix)-\(k)"))
            }
        }
        try Self.save(cache, Sample.accessToken(home: Self.otherHome, target: "r0/A", secret: "other-home"))
        let partitions = try cache.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        #expect(partitions.count == 2)
        let queries: [(realm: String, clientID: String, scopes: [String])] = [
            (Sample.tenant, Sample.clientID, ["r1/A", "r1/B"]), (Sample.tenant, Sample.clientID, ["r2/B"]),
            (Self.guestRealm, Sample.clientID, ["R0/a"]), (Self.guestRealm.uppercased(), Sample.clientID.uppercased(), ["r2/A"]),
            (Sample.tenant, Sample.clientID, ["r1/A", "r2/A"]), (Sample.tenant, Sample.clientID, ["nothing/Holds"]),
            ("cccccccc-0000-4000-8000-00000000cccc", Sample.clientID, ["r0/A"]), (Sample.tenant, "another-client", ["r0/A"]),
        ]
        var found = 0
        for query in queries {
            let direct = try Self.throughPartitions(cache, partitions, realm: query.realm, clientID: query.clientID, query.scopes)
            #expect(direct != "stale")
            #expect(direct == (try Self.throughIndex(cache, realm: query.realm, clientID: query.clientID, query.scopes)), "\(query)")
            if direct != nil { found += 1 }
        }
        #expect(found == 4)
    }

    @Test("After a change in this cache, a reload after another cache's change, or in another cache, the partitions are stale")
    func staleAfterChanges() throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        try Self.save(cache, Sample.accessToken(target: "r0/A", secret: "first"))
        let before = try cache.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        #expect(try Self.throughPartitions(cache, before, realm: Sample.tenant, ["r0/A"]) == "first")
        // A refresh here: the partitions taken before would answer the old token.
        try Self.save(cache, Sample.accessToken(target: "r0/A", secret: "second"))
        #expect(try Self.throughPartitions(cache, before, realm: Sample.tenant, ["r0/A"]) == "stale")
        let after = try cache.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        #expect(try Self.throughPartitions(cache, after, realm: Sample.tenant, ["r0/A"]) == "second")
        // Another cache instance on the same store writes: this one reloads at its next lookup.
        let other = TokenCache(store: store)
        try Self.save(other, Sample.accessToken(target: "r0/A", secret: "third"))
        #expect(try Self.throughPartitions(cache, after, realm: Sample.tenant, ["r0/A"]) == "stale")
        #expect(try Self.throughIndex(cache, realm: Sample.tenant, ["r0/A"]) == "third")
        // Partitions taken by one cache are stale in another, even at an equal revision number.
        let fromOther = try other.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        #expect(try Self.throughPartitions(cache, fromOther, realm: Sample.tenant, ["r0/A"]) == "stale")
        #expect(try Self.throughPartitions(other, fromOther, realm: Sample.tenant, ["r0/A"]) == "third")
    }

    @Test("Partitions of another cache at the same revision number are stale: they hold that cache's tokens")
    func otherCacheSameRevision() throws {
        let first = TokenCache(store: InMemoryTokenCacheStore()), second = TokenCache(store: InMemoryTokenCacheStore())
        try Self.save(first, Sample.accessToken(target: "r0/A", secret: "first-cache"))
        try Self.save(second, Sample.accessToken(target: "r0/A", secret: "second-cache"))
        #expect(try first.revision() == second.revision())
        let fromFirst = try first.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        #expect(try Self.throughPartitions(second, fromFirst, realm: Sample.tenant, ["r0/A"]) == "stale")
        #expect(try Self.throughPartitions(first, fromFirst, realm: Sample.tenant, ["r0/A"]) == "first-cache")
    }

    @Test("The cache's next change releases the partitions it handed out: they hold no token after it")
    func releasedAtTheNextChange() throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        try Self.save(cache, Sample.accessToken(target: "r0/A", secret: "first"))
        let before = try cache.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        let again = try cache.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        #expect(!before.isReleased && !again.isReleased && before.count == 1)
        #expect(before.withLockedPartitions { $0.count } == 1)
        try cache.removeAccount(homeAccountID: Sample.home, environment: Sample.environment, clientID: Sample.clientID)
        #expect(before.isReleased && again.isReleased && before.count == 1)
        // Released means emptied: the object no longer holds the index's tokens.
        #expect(before.withLockedPartitions { $0.count } == 0 && again.withLockedPartitions { $0.count } == 0)
        #expect(try Self.throughPartitions(cache, before, realm: Sample.tenant, ["r0/A"]) == "stale")
        // Released too by a reload after another instance's change.
        try Self.save(cache, Sample.accessToken(target: "r0/A", secret: "second"))
        let current = try cache.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        try Self.save(TokenCache(store: store), Sample.accessToken(target: "r1/A", secret: "elsewhere"))
        #expect(!current.isReleased)
        #expect(try Self.throughIndex(cache, realm: Sample.tenant, ["r1/A"]) == "elsewhere")
        #expect(current.isReleased)
    }

    @Test("Partitions handed out past the limit: those still held are kept and released at the next change")
    func manyHandedOut() throws {
        let cache = TokenCache(store: InMemoryTokenCacheStore())
        try Self.save(cache, Sample.accessToken(target: "r0/A", secret: "first"))
        let held = try cache.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        for _ in 0..<(TokenCache.handedOutLimit + 100) {
            _ = try cache.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        }
        #expect(try Self.throughPartitions(cache, held, realm: Sample.tenant, ["r0/A"]) == "first")
        try Self.save(cache, Sample.accessToken(target: "r0/A", secret: "second"))
        #expect(held.isReleased)
    }

    @Test("A partition of more than 32 tokens (with its own scope tables) answers through the account's partitions as the index does, also after a refresh of one of its tokens")
    func largePartition() throws {
        let cache = TokenCache(store: InMemoryTokenCacheStore())
        for k in 0...(AccessTokenPartition.scanLimit + 8) {
            try Self.save(cache, Sample.accessToken(target: "r\(k)/A r\(k)/B", secret: "t\(k)"))
        }
        var partitions = try cache.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        #expect(partitions.count == 1)
        for scopes in [["r3/A"], ["r39/B", "r39/A"], ["r1/A", "r2/A"], ["nothing/Holds"]] {
            let direct = try Self.throughPartitions(cache, partitions, realm: Sample.tenant, scopes)
            #expect(try direct != "stale" && direct == Self.throughIndex(cache, realm: Sample.tenant, scopes), "\(scopes)")
        }
        try Self.save(cache, Sample.accessToken(target: "r3/A r3/B", secret: "t3-refreshed", expiresIn: 7200))
        #expect(partitions.isReleased)
        partitions = try cache.tokenPartitions(homeAccountID: Sample.home, environment: Sample.environment)
        #expect(try Self.throughPartitions(cache, partitions, realm: Sample.tenant, ["r3/B"]) == "t3-refreshed")
        #expect(try Self.throughPartitions(cache, partitions, realm: Sample.tenant, ["r4/B"]) == "t4")
    }
}
