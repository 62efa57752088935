import Foundation
import MSALCache
import MSALCore
import MSALTestSupport
import Testing

/// The access token index with many scope sets in one partition (past the size where lookups go
/// through the scope-to-token map), checked against a plain scan of the store's contents; and the
/// values `derivedValue(for:_:)` keeps until the cache changes.
@Suite("TokenCache index")
struct TokenCacheIndexTests {
    /// What the lookup must return, computed from the store's contents by brute force.
    static func expected(_ contents: TokenCacheContents, realm: String, scopes: ScopeSet) -> AccessTokenEntry? {
        contents.accessTokens.values
            .filter {
                $0.homeAccountID.lowercased() == Sample.home.lowercased() && $0.realm.lowercased() == realm.lowercased()
                    && $0.clientID.lowercased() == Sample.clientID.lowercased() && $0.scopes.isSuperset(of: scopes)
            }
            .max { ($0.expiresOn, $1.key) < ($1.expiresOn, $0.key) }
    }

    @Test("A partition of many scope sets answers subset, exact and missing lookups as a scan does, through saves and removals (seeded)")
    func largePartition() throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        var random = SplitMix64(seed: 7)
        // 60 tokens of 3 scopes each from resource k; a few share scopes across resources.
        for k in 0..<60 {
            let target = "https://r\(k).example/A https://r\(k).example/B shared\(k % 7)"
            try cache.save(
                accessToken: Sample.accessToken(target: target, secret: "AT-\(k)", expiresIn: TimeInterval(3600 + k % 5)),
                refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        }
        // Saving a token whose scopes intersect others replaces them (shared3 is in 9 tokens).
        try cache.save(accessToken: Sample.accessToken(target: "shared3 Extra", secret: "AT-new"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        try cache.remove([CacheEntryRemoval(kind: .accessToken, key: Sample.accessToken(target: "https://r1.example/A https://r1.example/B shared1", secret: "").key)])
        let contents = try store.readAll()
        #expect(contents.accessTokens.count < 60)
        let fresh = TokenCache(store: store)  // a freshly loaded index must agree with the one kept up to date
        for _ in 0..<400 {
            let k = Int(random.next() % 62)
            let request: ScopeSet
            switch random.next() % 5 {
            case 0: request = ["https://R\(k).example/a"]
            case 1: request = ["https://r\(k).example/A", "https://r\(k).example/B"]
            case 2: request = ["shared\(k % 7)"]
            case 3: request = ["shared\(k % 7)", "extra"]
            default: request = ["https://r\(k).example/A", "missing"]
            }
            let want = Self.expected(contents, realm: Sample.tenant, scopes: request)
            for lookup in [cache, fresh] {
                let got = try lookup.accessToken(
                    homeAccountID: Sample.home.uppercased(), environment: Sample.environment, realm: Sample.tenant,
                    clientID: Sample.clientID, scopes: request)
                #expect(got?.secret == want?.secret, "\(request)")
            }
        }
        #expect(try cache.accessToken(homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant, clientID: Sample.clientID, scopes: [])?.secret
            == Self.expected(contents, realm: Sample.tenant, scopes: [])?.secret)
    }

    @Test("Of several matching tokens the one that expires last wins, then the smallest key")
    func tieBreak() throws {
        let store = InMemoryTokenCacheStore()
        var change = TokenCacheChange()
        for (target, secret, expiresIn) in [("x b", "AT-1", 100.0), ("x c", "AT-2", 200.0), ("x d", "AT-3", 200.0)] {
            change.upserts.append(.accessToken(Sample.accessToken(target: target, secret: secret, expiresIn: expiresIn)))
        }
        try store.apply(change)
        let cache = TokenCache(store: store)
        let hit = try cache.accessToken(homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant, clientID: Sample.clientID, scopes: ["X"])
        #expect(hit?.secret == "AT-2")  // AT-2 and AT-3 expire together; "...-x c" < "...-x d"
    }

    @Test("A derived value is kept until the cache changes, in this instance or through the store")
    func derivedValues() throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        var builds = 0
        func count() throws -> Int {
            try cache.derivedValue(for: "count") { () throws(MSALError) -> Int in
                builds += 1
                return try cache.contents().accessTokens.count
            }
        }
        #expect(try count() == 0)
        #expect(try count() == 0)
        #expect(builds == 1)
        try cache.save(accessToken: Sample.accessToken(secret: "AT-1"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try count() == 1)
        #expect(builds == 2)
        // Another cache (another process) writes to the store: the next call sees it.
        try TokenCache(store: store).save(accessToken: Sample.accessToken(target: "Other", secret: "AT-2"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try count() == 2)
        #expect(builds == 3)
        // nil is a value too, kept like any other.
        var nilBuilds = 0
        for _ in 0..<3 {
            let value = try cache.derivedValue(for: "nothing") { () throws(MSALError) -> String? in
                nilBuilds += 1
                return nil
            }
            #expect(value == nil)
        }
        #expect(nilBuilds == 1)
        // A build that throws keeps nothing.
        #expect(throws: MSALError.self) {
            try cache.derivedValue(for: "failing") { () throws(MSALError) -> Int in throw .internal(.cacheError, "test") }
        }
        #expect(try cache.derivedValue(for: "failing") { () throws(MSALError) -> Int in 5 } == 5)
    }

    @Test("Structured keys: each kind and identifier pair is its own value; a value asked for as another type is built again")
    func structuredDerivedKeys() throws {
        let cache = TokenCache(store: InMemoryTokenCacheStore())
        var builds = 0
        func value(_ key: DerivedValueKey, _ made: String) throws -> String {
            try cache.derivedValue(for: key) { () throws(MSALError) -> String in
                builds += 1
                return made
            }
        }
        let a = DerivedValueKey(kind: "account", "home-1", "env"), b = DerivedValueKey(kind: "account", "home-2", "env")
        #expect(try value(a, "A") == "A")
        #expect(try value(b, "B") == "B")
        #expect(try value(a, "again") == "A")
        #expect(try value(DerivedValueKey(kind: "account", "home-1", "other-env"), "C") == "C")
        #expect(builds == 3)
        // The string-keyed form is the structured key with that kind and no identifiers.
        #expect(try value(DerivedValueKey(kind: "plain"), "P") == "P")
        #expect(try cache.derivedValue(for: "plain") { () throws(MSALError) -> String in "not built" } == "P")
        let number = try cache.derivedValue(for: a) { () throws(MSALError) -> Int in 7 }
        #expect(number == 7)
    }

    @Test("Without checking the store a derived value is that of the state last seen; the next checking call sees the other instance's write")
    func derivedWithoutChecking() throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        let key = DerivedValueKey(kind: "count")
        func count(checking: Bool) throws -> Int {
            try cache.derivedValue(for: key, checkingStore: checking) { () throws(MSALError) -> Int in
                try cache.contents().accessTokens.count
            }
        }
        #expect(try count(checking: false) == 0)  // nothing loaded yet: it loads
        let before = cache.lastSeenRevision()
        try TokenCache(store: store).save(accessToken: Sample.accessToken(secret: "AT-1"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try count(checking: false) == 0)
        #expect(cache.lastSeenRevision() == before)
        #expect(try count(checking: true) == 1)
        #expect(try cache.revision() > before)
        #expect(cache.lastSeenRevision() == (try cache.revision()))
    }
}
