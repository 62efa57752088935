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

    @Test("A scanned partition's scope masks only narrow the scan: with 174 scopes numbered, masks of 64 bits collide, and every lookup still answers as a scan of the contents does")
    func maskCollisions() throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        func save(_ entry: AccessTokenEntry) throws {
            try cache.save(accessToken: entry, refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        }
        // 24 tokens of the account (a scanned partition), some holding two scopes; 150 other
        // accounts hold one scope each, so 174 scopes share 64 mask bits.
        for k in 0..<24 { try save(Sample.accessToken(target: k % 3 == 0 ? "s\(k) t\(k)" : "s\(k)", secret: "AT-\(k)", expiresIn: TimeInterval(3600 + k))) }
        for j in 0..<150 { try save(Sample.accessToken(home: "other\(j).\(Sample.tenant)", target: "f\(j)", secret: "F-\(j)")) }
        let contents = try store.readAll()
        #expect(contents.accessTokens.count == 174)
        var requests: [ScopeSet] = (0..<24).map { ["s\($0)"] } + (0..<24).map { ["s\($0)", "t\($0)"] } + (0..<150).map { ["f\($0)"] }
        requests += (0..<24).map { ["s\($0)", "f\($0)"] } + [[]]
        func check(_ contents: TokenCacheContents) throws -> Int {
            var found = 0
            for lookup in [cache, TokenCache(store: store)] {
                for request in requests {
                    let want = Self.expected(contents, realm: Sample.tenant, scopes: request)
                    let got = try lookup.accessToken(
                        homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant, clientID: Sample.clientID, scopes: request)
                    #expect(got?.secret == want?.secret, "\(request)")
                    if got != nil { found += 1 }
                }
            }
            return found
        }
        // Found: each s alone (24), each s with its t where it has one (8), and the empty request.
        #expect(try check(contents) == 2 * (24 + 8 + 1))
        // Removals move the last token (and its mask) into the removed one's place.
        let removed = [0, 3, 5, 23]
        try cache.remove(removed.map { k in
            CacheEntryRemoval(kind: .accessToken, key: Sample.accessToken(target: k % 3 == 0 ? "s\(k) t\(k)" : "s\(k)", secret: "").key)
        })
        let afterRemovals = try store.readAll()
        #expect(afterRemovals.accessTokens.count == 170)
        #expect(try check(afterRemovals) == 2 * (20 + 6 + 1))
    }

    @Test("Tokens saved again under their keys, and removed, in a small and a large partition: the kept index answers as a fresh one and as a scan", arguments: [6, 50])
    func replaceAndRemove(count: Int) throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        func token(_ k: Int, secret: String, expiresIn: TimeInterval) -> AccessTokenEntry {
            Sample.accessToken(target: "https://r\(k).example/A https://r\(k).example/B", secret: secret, expiresIn: expiresIn)
        }
        func save(_ entry: AccessTokenEntry) throws {
            try cache.save(accessToken: entry, refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        }
        for k in 0..<count { try save(token(k, secret: "AT-\(k)", expiresIn: TimeInterval(3600 + k))) }
        // Each token's scopes are its own (saving a token removes those that share a scope with it).
        // A refresh writes a new token under the same key: the even ones, now expiring in reverse order.
        for k in stride(from: 0, to: count, by: 2) { try save(token(k, secret: "AT-\(k)-new", expiresIn: TimeInterval(9000 - k))) }
        let removed = Array(stride(from: 1, to: count, by: 3))
        try cache.remove(removed.map { CacheEntryRemoval(kind: .accessToken, key: token($0, secret: "", expiresIn: 0).key) })

        let contents = try store.readAll()
        #expect(contents.accessTokens.count == count - removed.count)
        #expect(contents.accessTokens.values.filter { $0.secret.hasSuffix("-new") }.count
            == (0..<count).filter { $0 % 2 == 0 && !removed.contains($0) }.count)
        let fresh = TokenCache(store: store)
        for k in 0..<count {
            for request: ScopeSet in [["https://r\(k).example/A"], ["https://r\(k).example/B"], ["https://r\(k).example/A", "https://r\(k).example/B"], []] {
                let want = Self.expected(contents, realm: Sample.tenant, scopes: request)
                for lookup in [cache, fresh] {
                    let got = try lookup.accessToken(
                        homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant,
                        clientID: Sample.clientID, scopes: request)
                    #expect(got?.secret == want?.secret, "\(request)")
                    #expect(got?.expiresOn == want?.expiresOn)
                }
            }
            let expected = removed.contains(k) ? nil : k % 2 == 0 ? "AT-\(k)-new" : "AT-\(k)"
            #expect(try cache.accessToken(
                homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant,
                clientID: Sample.clientID, scopes: ["https://r\(k).example/A"])?.secret == expected)
        }
        // Removing the account's tokens empties the partition; a token saved then is found alone.
        try cache.removeAccount(homeAccountID: Sample.home, environment: Sample.environment, clientID: Sample.clientID)
        #expect(try store.readAll().accessTokens.isEmpty)
        #expect(try cache.accessToken(homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant, clientID: Sample.clientID, scopes: []) == nil)
        try save(token(0, secret: "AT-after", expiresIn: 60))
        #expect(try cache.accessToken(homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant, clientID: Sample.clientID, scopes: [])?.secret == "AT-after")
    }

    @Test("An access token entry is a value: a changed copy leaves the original as it was; equal fields are equal and hash alike")
    func accessTokenEntryIsAValue() {
        let original = Sample.accessToken(target: "User.Read", secret: "AT-1")
        var copy = original
        copy.secret = "AT-2"
        copy.expiresOn = original.expiresOn.addingTimeInterval(60)
        copy.additionalFields["kid"] = .string("k1")
        #expect(original.secret == "AT-1" && copy.secret == "AT-2")
        #expect(original.additionalFields.isEmpty && copy.expiresOn != original.expiresOn)
        #expect(original != copy)
        let twin = Sample.accessToken(target: "User.Read", secret: "AT-1")  // built apart: its own storage
        #expect(twin == original && twin.hashValue == original.hashValue)
        #expect(Set([original, twin, copy]).count == 2)
        var changedBack = copy
        changedBack.secret = "AT-1"
        changedBack.expiresOn = original.expiresOn
        changedBack.additionalFields = [:]
        #expect(changedBack == original && copy.secret == "AT-2")
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

    @Test("A value kept for one home account survives changes to other accounts and is dropped by a change to its own entries (any case), a removal, a load, or another writer")
    func homeDerivedValues() throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        let alice = Sample.home, bob = "0b0b0b0b-0000-4000-8000-0000000000b0.aaaaaaaa-0000-4000-8000-00000000aaaa"
        let key = DerivedValueKey(kind: "account", alice, Sample.environment)
        try cache.save(accessToken: Sample.accessToken(secret: "AT-A"), refreshToken: nil, idToken: nil, account: Sample.account(), appMetadata: nil)
        try cache.save(accessToken: Sample.accessToken(home: bob, secret: "AT-B"), refreshToken: nil, idToken: nil, account: Sample.account(home: bob), appMetadata: nil)
        /// Keeps `value` for Alice at the current revision, and checks it is kept.
        func keep(_ value: String) throws {
            cache.keepHomeDerivedValue(value, for: key, homeAccountID: alice, environment: Sample.environment, revision: try cache.revision())
            #expect(cache.keptHomeDerivedValue(for: key, homeAccountID: alice, environment: Sample.environment, as: String.self)?.value == value)
        }
        func kept() -> String? { cache.keptHomeDerivedValue(for: key, homeAccountID: alice, environment: Sample.environment, as: String.self)?.value }

        try keep("alice-1")
        #expect(cache.keptHomeDerivedValue(for: key, homeAccountID: alice, environment: Sample.environment, as: Int.self) == nil)  // asked for as another type
        // Bob's refresh (new tokens, an ID token, app metadata) leaves Alice's value.
        try cache.save(
            accessToken: Sample.accessToken(home: bob, secret: "AT-B2"), refreshToken: Sample.refreshToken(home: bob, secret: "RT-B"),
            idToken: Sample.idToken(home: bob, secret: "ID-B"), account: Sample.account(home: bob),
            appMetadata: AppMetadataEntry(clientID: Sample.clientID, environment: Sample.environment, familyID: "1"))
        #expect(kept() == "alice-1")
        // So do a change of app metadata alone, and the removal of a key nothing is stored under.
        try cache.save(
            accessToken: nil, refreshToken: nil, idToken: nil, account: nil,
            appMetadata: AppMetadataEntry(clientID: Sample.clientID, environment: Sample.environment, familyID: nil))
        try cache.remove([CacheEntryRemoval(kind: .idToken, key: Sample.idToken(secret: "").key)])
        #expect(kept() == "alice-1")
        // Asked for under her home account ID and environment in other case, it is the same value.
        #expect(cache.keptHomeDerivedValue(for: key, homeAccountID: alice.uppercased(), environment: "Login.MicrosoftOnline.com", as: String.self)?.value == "alice-1")
        let revision = try cache.revision()
        #expect(cache.keptHomeDerivedValue(for: key, homeAccountID: alice, environment: Sample.environment, as: String.self)?.revision == revision)  // held at the current revision
        // Alice's ID token, saved under her home account ID in other case, drops it.
        try cache.save(accessToken: nil, refreshToken: nil, idToken: Sample.idToken(home: alice.uppercased(), secret: "ID-A"), account: nil, appMetadata: nil)
        #expect(kept() == nil)
        // Each kind of change to her entries drops it: an access token, a refresh token, a removal.
        try keep("alice-2")
        try cache.save(accessToken: Sample.accessToken(target: "Mail.Read", secret: "AT-A2"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(kept() == nil)
        try keep("alice-3")
        try cache.save(accessToken: nil, refreshToken: Sample.refreshToken(secret: "RT-A"), idToken: nil, account: nil, appMetadata: nil)
        #expect(kept() == nil)
        try keep("alice-3b")
        try cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: Sample.account(username: "alice.renamed@contoso.example"), appMetadata: nil)
        #expect(kept() == nil)
        try keep("alice-4")
        try cache.remove([CacheEntryRemoval(kind: .accessToken, key: Sample.accessToken(target: "Mail.Read", secret: "").key)])
        #expect(kept() == nil)
        // Another writer changes the store (Bob's entries only): after the load nothing is known.
        try keep("alice-5")
        try TokenCache(store: store).save(accessToken: Sample.accessToken(home: bob, target: "Files.Read", secret: "AT-B3"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        _ = try cache.revision()  // checks the store, loads
        #expect(kept() == nil)
        // A value kept for a revision that is not the current one is not kept.
        let old = try cache.revision()
        try cache.save(accessToken: Sample.accessToken(home: bob, secret: "AT-B4"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        cache.keepHomeDerivedValue("stale", for: key, homeAccountID: alice, environment: Sample.environment, revision: old)
        #expect(kept() == nil)
        // Removing Alice's account drops what was kept for her, from memory too (a removed
        // account's ID tokens must not stay in the process).
        final class Held: Sendable {}
        weak var held: Held?
        do {
            let value = Held()
            held = value
            cache.keepHomeDerivedValue(value, for: key, homeAccountID: alice, environment: Sample.environment, revision: try cache.revision())
            #expect(cache.keptHomeDerivedValue(for: key, homeAccountID: alice, environment: Sample.environment, as: Held.self)?.value === value)
        }
        // Another account's change does not release it.
        try cache.save(accessToken: Sample.accessToken(home: bob, secret: "AT-B5"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(held != nil)
        try cache.removeAccount(homeAccountID: alice, environment: Sample.environment, clientID: Sample.clientID)
        #expect(cache.keptHomeDerivedValue(for: key, homeAccountID: alice, environment: Sample.environment, as: Held.self) == nil)
        #expect(held == nil)
    }
}
