import Foundation
import MSALCache
import MSALCore
import MSALTestSupport
import Testing

/// A store that counts calls and can be told to fail, to check what TokenCache asks of its store.
final class CountingStore: TokenCacheStore, @unchecked Sendable {
    let inner = InMemoryTokenCacheStore()
    var accessGroup: String { inner.accessGroup }
    private let lock = NSLock()
    private var _reads = 0
    var failWrites = false
    var reads: Int { lock.withLock { _reads } }

    func readAll() throws(MSALError) -> TokenCacheContents {
        lock.withLock { _reads += 1 }
        return try inner.readAll()
    }

    /// Every change applied, in order.
    var changes: [TokenCacheChange] { lock.withLock { _changes } }
    private var _changes: [TokenCacheChange] = []

    func apply(_ change: TokenCacheChange) throws(MSALError) {
        if lock.withLock({ failWrites }) { throw .internal(.cacheError, "disk full (test)") }
        try inner.apply(change)
        lock.withLock { _changes.append(change) }
    }

    func changeStamp() throws(MSALError) -> UInt64 { try inner.changeStamp() }
}

/// A store that runs `beforeNextApply` once, just before it applies the next change: another
/// writer's change landing between a cache's look at the store and its write.
final class InterposingStore: TokenCacheStore, @unchecked Sendable {
    let inner: InMemoryTokenCacheStore
    var beforeNextApply: (() throws -> Void)?
    var accessGroup: String { inner.accessGroup }

    init(inner: InMemoryTokenCacheStore) { self.inner = inner }

    func readAll() throws(MSALError) -> TokenCacheContents { try inner.readAll() }
    func changeStamp() throws(MSALError) -> UInt64 { try inner.changeStamp() }

    func apply(_ change: TokenCacheChange) throws(MSALError) {
        if let hook = beforeNextApply {
            beforeNextApply = nil
            do { try hook() } catch { throw .internal(.cacheError, "the interposed change failed: \(error)") }
        }
        try inner.apply(change)
    }
}

@Suite("TokenCache")
struct TokenCacheTests {
    let store = InMemoryTokenCacheStore()
    var cache: TokenCache { TokenCache(store: store) }

    func lookup(_ cache: TokenCache, _ scopes: ScopeSet, realm: String = Sample.tenant, home: String = Sample.home) throws -> AccessTokenEntry? {
        try cache.accessToken(homeAccountID: home, environment: Sample.environment, realm: realm, clientID: Sample.clientID, scopes: scopes)
    }

    @Test("A new access token replaces cached ones whose scopes intersect, and keeps the others")
    func intersectingAccessTokensAreReplaced() throws {
        let cache = self.cache
        try cache.save(accessToken: Sample.accessToken(target: "A B", secret: "AT-ab"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        try cache.save(accessToken: Sample.accessToken(target: "C", secret: "AT-c"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        try cache.save(accessToken: Sample.accessToken(realm: "other", target: "b", secret: "AT-other-realm"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try lookup(cache, ["a"])?.secret == "AT-ab")

        try cache.save(accessToken: Sample.accessToken(target: "b D", secret: "AT-bd"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try lookup(cache, ["a"]) == nil)
        #expect(try lookup(cache, ["B", "d"])?.secret == "AT-bd")
        #expect(try lookup(cache, ["c"])?.secret == "AT-c")
        #expect(try lookup(cache, ["b"], realm: "OTHER")?.secret == "AT-other-realm")
        #expect(try store.readAll().accessTokens.count == 3)
        // Scopes must all be in one token; a union of two tokens is not a hit.
        #expect(try lookup(cache, ["c", "d"]) == nil)
    }

    @Test("Lookups ignore the case of IDs and scopes; an empty request matches any token of the key")
    func caseInsensitiveLookups() throws {
        let cache = self.cache
        try cache.save(accessToken: Sample.accessToken(target: "https://graph.microsoft.com/User.Read", secret: "AT-1"),
                       refreshToken: Sample.refreshToken(secret: "RT-1"), idToken: Sample.idToken(secret: "ID-1"),
                       account: Sample.account(), appMetadata: AppMetadataEntry(clientID: Sample.clientID, environment: Sample.environment))
        let found = try cache.accessToken(
            homeAccountID: Sample.home.uppercased(), environment: "LOGIN.microsoftonline.com", realm: Sample.tenant.uppercased(),
            clientID: Sample.clientID.uppercased(), scopes: ["HTTPS://GRAPH.MICROSOFT.COM/USER.READ"])
        #expect(found?.secret == "AT-1")
        #expect(try lookup(cache, [])?.secret == "AT-1")
        #expect(try cache.refreshToken(homeAccountID: Sample.home.uppercased(), environment: Sample.environment, clientID: Sample.clientID.uppercased())?.secret == "RT-1")
        #expect(try cache.idToken(homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant.uppercased(), clientID: Sample.clientID)?.secret == "ID-1")
        #expect(try cache.appMetadata(clientID: Sample.clientID.uppercased(), environment: Sample.environment) != nil)
        #expect(try cache.accountEntries(homeAccountID: Sample.home.uppercased(), environment: nil).count == 1)
        #expect(try cache.accountEntries(homeAccountID: Sample.home, environment: "other.example").isEmpty)
        #expect(try cache.idToken(homeAccountID: Sample.home, environment: Sample.environment, realm: "other", clientID: Sample.clientID) == nil)
    }

    @Test("nil parameters leave existing entries alone; one save is one store change")
    func nilLeavesEntriesAlone() throws {
        let cache = self.cache
        try cache.save(accessToken: Sample.accessToken(target: "a", secret: "AT-1"), refreshToken: Sample.refreshToken(secret: "RT-1"),
                       idToken: Sample.idToken(secret: "ID-1"), account: Sample.account(), appMetadata: nil)
        #expect(try store.changeStamp() == 1)
        try cache.save(accessToken: nil, refreshToken: Sample.refreshToken(secret: "RT-2"), idToken: nil, account: nil, appMetadata: nil)
        #expect(try store.changeStamp() == 2)
        let contents = try store.readAll()
        #expect(contents.accessTokens.values.map(\.secret) == ["AT-1"])
        #expect(contents.refreshTokens.values.map(\.secret) == ["RT-2"])
        #expect(contents.idTokens.values.map(\.secret) == ["ID-1"])
        #expect(contents.accounts.count == 1)
    }

    @Test("A refresh writes its tokens and account again and leaves out app metadata that did not change")
    func unchangedAppMetadataIsNotWrittenAgain() throws {
        let store = CountingStore()
        let cache = TokenCache(store: store)
        var account = Sample.account()
        account.accountSource = "device_code"
        let metadata = AppMetadataEntry(clientID: Sample.clientID, environment: Sample.environment, familyID: "1")
        try cache.save(accessToken: Sample.accessToken(target: "a", secret: "AT-1"), refreshToken: Sample.refreshToken(secret: "RT-1"),
                       idToken: Sample.idToken(secret: "ID-1"), account: account, appMetadata: metadata)
        #expect(store.changes.last?.upserts.count == 5)

        func written() throws -> [String] {
            try #require(store.changes.last).upserts.map { entry -> String in
                switch entry {
                case .accessToken(let token): "AT \(token.secret)"
                case .refreshToken(let token): "RT \(token.secret)"
                case .idToken(let token): "ID \(token.secret)"
                case .account: "account"
                case .appMetadata(let entry): "appmetadata \(entry.familyID ?? "none")"
                }
            }.sorted()
        }
        // A refresh: new access and refresh tokens; the same ID token, account (without
        // account_source, as a refresh saves it) and app metadata.
        try cache.save(accessToken: Sample.accessToken(target: "a", secret: "AT-2"), refreshToken: Sample.refreshToken(secret: "RT-2"),
                       idToken: Sample.idToken(secret: "ID-1"), account: Sample.account(), appMetadata: metadata)
        #expect(try written() == ["AT AT-2", "ID ID-1", "RT RT-2", "account"])
        let contents = try store.readAll()
        #expect(contents.accounts.values.map(\.accountSource) == ["device_code"])
        #expect(contents.appMetadata.values.map(\.familyID) == ["1"])

        // App metadata that differs is written: the app left the family.
        try cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: nil,
                       appMetadata: AppMetadataEntry(clientID: Sample.clientID, environment: Sample.environment, familyID: ""))
        #expect(try written() == ["appmetadata "])
        #expect(try store.readAll().appMetadata.values.map(\.familyID) == [""])
    }

    @Test("A refresh saved while another cache signs the account out leaves every entry of the save, not a refresh token alone")
    func saveRacingAnotherWritersRemoval() throws {
        let shared = InMemoryTokenCacheStore()
        let interposing = InterposingStore(inner: shared)
        let cache = TokenCache(store: interposing), other = TokenCache(store: shared)
        let metadata = AppMetadataEntry(clientID: Sample.clientID, environment: Sample.environment, familyID: nil)
        try cache.save(accessToken: Sample.accessToken(target: "a", secret: "AT-1"), refreshToken: Sample.refreshToken(secret: "RT-1"),
                       idToken: Sample.idToken(secret: "ID-1"), account: Sample.account(), appMetadata: metadata)
        #expect(try cache.accounts().count == 1)

        // The other cache removes the account after this cache checked the store, before its write.
        interposing.beforeNextApply = {
            try other.removeAccount(homeAccountID: Sample.home, environment: Sample.environment, clientID: Sample.clientID)
        }
        try cache.save(accessToken: Sample.accessToken(target: "a", secret: "AT-2"), refreshToken: Sample.refreshToken(secret: "RT-2"),
                       idToken: Sample.idToken(secret: "ID-1"), account: Sample.account(), appMetadata: metadata)
        let contents = try shared.readAll()
        #expect(contents.accessTokens.values.map(\.secret) == ["AT-2"])
        #expect(contents.refreshTokens.values.map(\.secret) == ["RT-2"])
        #expect(contents.idTokens.values.map(\.secret) == ["ID-1"])
        #expect(contents.accounts.count == 1)
        #expect(try TokenCache(store: shared).accounts().count == 1)
    }

    @Test("A saved refresh token replaces the client's others (also MSAL Python's per-target ones) and its family's")
    func refreshTokenReplacement() throws {
        var contents = TokenCacheContents()
        contents.insert(.refreshToken(Sample.refreshToken(secret: "RT-py-1", target: "A")), storedKey: Sample.refreshToken(secret: "", target: "A").key)
        contents.insert(.refreshToken(Sample.refreshToken(secret: "RT-py-2", target: "B")), storedKey: Sample.refreshToken(secret: "", target: "B").key)
        contents.insert(.refreshToken(Sample.refreshToken(clientID: "other-app", familyID: "1", secret: "FRT-other")), storedKey: "foreign-key")
        contents.insert(.refreshToken(Sample.refreshToken(clientID: "unrelated", secret: "RT-unrelated")), storedKey: "unrelated-key")
        let store = InMemoryTokenCacheStore(contents: contents)
        let cache = TokenCache(store: store)
        #expect(try cache.familyRefreshToken(homeAccountID: Sample.home, environment: Sample.environment, familyID: "1")?.secret == "FRT-other")

        try cache.save(accessToken: nil, refreshToken: Sample.refreshToken(familyID: "1", secret: "FRT-new"), idToken: nil, account: nil, appMetadata: nil)
        let secrets = try store.readAll().refreshTokens.values.map(\.secret).sorted()
        #expect(secrets == ["FRT-new", "RT-unrelated"])
        #expect(try cache.refreshToken(homeAccountID: Sample.home, environment: Sample.environment, clientID: Sample.clientID)?.secret == "FRT-new")
        #expect(try cache.familyRefreshToken(homeAccountID: Sample.home, environment: Sample.environment, familyID: "1")?.secret == "FRT-new")
        #expect(try cache.refreshToken(homeAccountID: Sample.home, environment: Sample.environment, clientID: "other-app") == nil)
    }

    @Test("Refresh token candidates: the family's first unless the app is known to be outside it, then the app's own, each once")
    func refreshTokenCandidates() throws {
        func candidates(_ cache: TokenCache, clientID: String = Sample.clientID) throws -> [String] {
            try cache.refreshTokenCandidates(homeAccountID: Sample.home.uppercased(), environment: Sample.environment, clientID: clientID).map(\.secret)
        }
        var contents = TokenCacheContents()
        contents.insert(.refreshToken(Sample.refreshToken(clientID: "other-app", familyID: "1", secret: "FRT")), storedKey: "family-key")
        contents.insert(.refreshToken(Sample.refreshToken(secret: "RT-own")), storedKey: Sample.refreshToken(secret: "").key)
        let store = InMemoryTokenCacheStore(contents: contents)
        let cache = TokenCache(store: store)
        #expect(try candidates(cache) == ["FRT", "RT-own"])  // membership unknown: the family's first
        #expect(try candidates(cache, clientID: "other-app") == ["FRT"])  // its own token is the family's: once

        // The app is known to be outside the family: only its own.
        try cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: nil,
                       appMetadata: AppMetadataEntry(clientID: Sample.clientID, environment: Sample.environment, familyID: ""))
        #expect(try candidates(cache) == ["RT-own"])
        // In the family: the family's first again.
        try cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: nil,
                       appMetadata: AppMetadataEntry(clientID: Sample.clientID, environment: Sample.environment, familyID: "1"))
        #expect(try candidates(cache) == ["FRT", "RT-own"])
        #expect(try cache.refreshTokenCandidates(homeAccountID: "nobody", environment: Sample.environment, clientID: Sample.clientID).isEmpty)
    }

    @Test("An ID token or account stored under another MSAL's key is replaced, not duplicated")
    func foreignKeysAreReplaced() throws {
        var contents = TokenCacheContents()
        contents.insert(.idToken(Sample.idToken(secret: "ID-old")), storedKey: "Some-Other-MSAL-Key")
        contents.insert(.account(Sample.account(username: "old")), storedKey: "Other-Account-Key")
        let store = InMemoryTokenCacheStore(contents: contents)
        let cache = TokenCache(store: store)
        try cache.save(accessToken: nil, refreshToken: nil, idToken: Sample.idToken(secret: "ID-new"),
                       account: Sample.account(username: "new"), appMetadata: nil)
        let after = try store.readAll()
        #expect(after.idTokens.count == 1 && after.idTokens[Sample.idToken(secret: "").key]?.secret == "ID-new")
        #expect(after.accounts.count == 1 && after.accounts.values.first?.username == "new")
    }

    @Test("An account entry saved without account_source keeps the replaced entry's; one with it replaces it")
    func accountSourceSurvivesARefresh() throws {
        func source(_ store: InMemoryTokenCacheStore) throws -> [String?] { try store.readAll().accounts.values.map(\.accountSource) }
        func account(_ source: String?, realm: String = Sample.tenant) -> AccountEntry {
            var entry = Sample.account(realm: realm)
            entry.accountSource = source
            return entry
        }
        // Stored by another MSAL under its own key: the saved entry takes its place and its source.
        var contents = TokenCacheContents()
        contents.insert(.account(account("device_code")), storedKey: "Other-Account-Key")
        contents.insert(.account(account("authorization_code", realm: "other-tenant")), storedKey: "Other-Tenant-Key")
        let store = InMemoryTokenCacheStore(contents: contents)
        let cache = TokenCache(store: store)
        try cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: account(nil), appMetadata: nil)
        #expect(try store.readAll().accounts[account(nil).key]?.accountSource == "device_code")
        #expect(try store.readAll().accounts.count == 2)
        // Saved again without a source (a refresh), then with another one (a new sign-in).
        try cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: account(nil), appMetadata: nil)
        #expect(try store.readAll().accounts[account(nil).key]?.accountSource == "device_code")
        try cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: account("authorization_code"), appMetadata: nil)
        #expect(try source(store).sorted { ($0 ?? "") < ($1 ?? "") } == ["authorization_code", "authorization_code"])
        // A new account has nothing to keep.
        try cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: account(nil, realm: "third"), appMetadata: nil)
        #expect(try store.readAll().accounts[account(nil, realm: "third").key]?.accountSource == nil)
    }

    @Test("removeAccount removes the client's credentials, and the account only when no other client uses it")
    func removeAccount() throws {
        let cache = self.cache
        let bob = "0b0b.aaaa"
        try cache.save(accessToken: Sample.accessToken(target: "a", secret: "AT-1"), refreshToken: Sample.refreshToken(secret: "RT-1"),
                       idToken: Sample.idToken(secret: "ID-1"), account: Sample.account(), appMetadata: nil)
        try cache.save(accessToken: Sample.accessToken(realm: "guest", target: "a", secret: "AT-guest"), refreshToken: nil,
                       idToken: nil, account: Sample.account(realm: "guest"), appMetadata: nil)
        try cache.save(accessToken: Sample.accessToken(clientID: "other-app", target: "a", secret: "AT-other-app"), refreshToken: nil,
                       idToken: nil, account: nil, appMetadata: nil)
        try cache.save(accessToken: Sample.accessToken(home: bob, target: "a", secret: "AT-bob"), refreshToken: nil, idToken: nil,
                       account: Sample.account(home: bob), appMetadata: nil)

        try cache.removeAccount(homeAccountID: Sample.home.uppercased(), environment: Sample.environment, clientID: Sample.clientID)
        var contents = try store.readAll()
        #expect(contents.accessTokens.values.map(\.secret).sorted() == ["AT-bob", "AT-other-app"])
        #expect(contents.refreshTokens.isEmpty && contents.idTokens.isEmpty)
        #expect(contents.accounts.count == 3)  // alice's two realms stay: other-app still has her token

        try cache.removeAccount(homeAccountID: Sample.home, environment: Sample.environment, clientID: "other-app")
        contents = try store.readAll()
        #expect(contents.accessTokens.values.map(\.secret) == ["AT-bob"])
        #expect(contents.accounts.values.map(\.homeAccountID) == [bob])
        #expect(try cache.accounts().map(\.homeAccountID) == [bob])
        let stamp = try store.changeStamp()
        try cache.removeAccount(homeAccountID: "nobody", environment: Sample.environment, clientID: Sample.clientID)
        #expect(try store.changeStamp() == stamp)  // nothing to do, nothing written
    }

    @Test("A cache sees changes another cache made to the same store, and reloads only then")
    func reloadsOnChangeStamp() throws {
        let store = CountingStore()
        let reader = TokenCache(store: store)
        let writer = TokenCache(store: store)
        #expect(try lookup(reader, ["a"]) == nil)
        #expect(try lookup(reader, ["a"]) == nil)
        #expect(store.reads == 1)
        try writer.save(accessToken: Sample.accessToken(target: "a", secret: "AT-1"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try lookup(reader, ["a"])?.secret == "AT-1")
        #expect(store.reads == 3)  // writer's first load + reader's reload
        try reader.remove([CacheEntryRemoval(kind: .accessToken, key: Sample.accessToken(target: "a", secret: "").key)])
        #expect(try lookup(writer, ["a"]) == nil)
        #expect(try lookup(reader, ["a"]) == nil)
        #expect(store.reads == 4)  // writer reloaded once; reader updated itself without reading
    }

    @Test("A failed write changes nothing and the cache still answers from the store")
    func failedWrite() throws {
        let store = CountingStore()
        let cache = TokenCache(store: store)
        try cache.save(accessToken: Sample.accessToken(target: "a", secret: "AT-1"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        store.failWrites = true
        #expect(throws: MSALError.internal(.cacheError, "")) {
            try cache.save(accessToken: Sample.accessToken(target: "a b", secret: "AT-2"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        }
        #expect(try lookup(cache, ["a"])?.secret == "AT-1")
    }

    @Test("Lookups among 10,000 accounts find the right entry")
    func tenThousandAccounts() throws {
        var contents = TokenCacheContents()
        for i in 0..<10_000 {
            let home = "user\(i).tenant"
            for entry in [
                CacheEntry.accessToken(Sample.accessToken(home: home, target: "scope.read scope.write", secret: "AT-\(i)", expiresIn: Double(i))),
                .accessToken(Sample.accessToken(home: home, target: "other.read", secret: "AT-other-\(i)")),
                .refreshToken(Sample.refreshToken(home: home, secret: "RT-\(i)")),
                .account(Sample.account(home: home, username: "user\(i)@example")),
            ] { contents.insert(entry, storedKey: entry.key) }
        }
        let cache = TokenCache(store: InMemoryTokenCacheStore(contents: contents))
        for i in [0, 1, 4_999, 9_998, 9_999] {
            let home = "USER\(i).tenant"
            #expect(try lookup(cache, ["Scope.Write"], home: home)?.secret == "AT-\(i)")
            #expect(try lookup(cache, ["other.read"], home: home)?.secret == "AT-other-\(i)")
            #expect(try lookup(cache, ["scope.read", "other.read"], home: home) == nil)
            #expect(try cache.refreshToken(homeAccountID: home, environment: Sample.environment, clientID: Sample.clientID)?.secret == "RT-\(i)")
            #expect(try cache.accountEntries(homeAccountID: home, environment: Sample.environment).map(\.username) == ["user\(i)@example"])
        }
        #expect(try lookup(cache, ["scope.read"], home: "user10000.tenant") == nil)
        #expect(try cache.accounts().count == 10_000)
    }

    @Test("The index kept up to date by saves answers like a freshly loaded one")
    func incrementalIndexMatchesFreshLoad() throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        var rng = SplitMix64(seed: 42)
        let scopes = ["a", "B", "c", "d", "E"]
        let homes = ["h1.t", "H2.t", "h3.t"]
        let realms = ["r1", "R2"]
        var maxTokensPerKey = 0
        func randomScopes() -> String { scopes.filter { _ in rng.next() % 2 == 0 }.joined(separator: " ") }
        for step in 0..<400 {
            let home = homes[Int(rng.next() % 3)], realm = realms[Int(rng.next() % 2)]
            switch rng.next() % 5 {
            case 0, 1, 2:
                let target = randomScopes()
                // Sometimes spelled in another case: the same stored keys, but entries the index
                // must file again rather than replace in place. Expiries vary, as refreshes' do.
                let spelled = rng.next() % 3 == 0 ? (home: home.uppercased(), realm: realm.lowercased()) : (home: home, realm: realm)
                try cache.save(
                    accessToken: target.isEmpty ? nil : Sample.accessToken(
                        home: spelled.home, realm: spelled.realm, target: target, secret: "AT-\(step)",
                        expiresIn: TimeInterval(600 + rng.next() % 3600)),
                    refreshToken: rng.next() % 2 == 0 ? Sample.refreshToken(home: spelled.home, secret: "RT-\(step)") : nil,
                    idToken: Sample.idToken(home: spelled.home, realm: spelled.realm, secret: "ID-\(step)"),
                    account: Sample.account(home: spelled.home, realm: spelled.realm), appMetadata: nil)
            case 3:
                try cache.removeAccount(homeAccountID: home, environment: Sample.environment, clientID: Sample.clientID)
            default:
                let keys = try store.readAll().accessTokens.keys.sorted()
                if !keys.isEmpty { try cache.remove([CacheEntryRemoval(kind: .accessToken, key: keys[Int(rng.next() % UInt64(keys.count))])]) }
            }
            // No two cached access tokens of one (account, realm) share a scope.
            let groups = Dictionary(grouping: try store.readAll().accessTokens.values) { [$0.homeAccountID.lowercased(), $0.realm.lowercased()] }
            for tokens in groups.values {
                maxTokensPerKey = max(maxTokensPerKey, tokens.count)
                for (i, x) in tokens.enumerated() { for y in tokens[(i + 1)...] { #expect(!x.scopes.intersects(y.scopes)) } }
            }
            let fresh = TokenCache(store: store)
            #expect(try cache.contents() == fresh.contents())
            for home in homes {
                for realm in realms {
                    for scope in scopes {
                        #expect(try lookup(cache, [scope], realm: realm, home: home) == lookup(fresh, [scope], realm: realm, home: home))
                    }
                    // No scope: any token of the key, the one that expires last.
                    #expect(try lookup(cache, [], realm: realm, home: home) == lookup(fresh, [], realm: realm, home: home))
                    #expect(try cache.idToken(homeAccountID: home, environment: Sample.environment, realm: realm, clientID: Sample.clientID)
                        == fresh.idToken(homeAccountID: home, environment: Sample.environment, realm: realm, clientID: Sample.clientID))
                }
                #expect(try cache.refreshToken(homeAccountID: home, environment: Sample.environment, clientID: Sample.clientID)
                    == fresh.refreshToken(homeAccountID: home, environment: Sample.environment, clientID: Sample.clientID))
                #expect(try cache.accountEntries(homeAccountID: home, environment: nil) == fresh.accountEntries(homeAccountID: home, environment: nil))
            }
        }
        #expect(maxTokensPerKey >= 2)  // the run did keep several tokens side by side
    }

    @Test("A token saved again under its key (a refresh) is chosen by its new expiry")
    func refreshedTokenKeepsItsNewExpiry() throws {
        let cache = self.cache
        try cache.save(accessToken: Sample.accessToken(target: "a", secret: "AT-a", expiresIn: 1000), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        try cache.save(accessToken: Sample.accessToken(target: "b", secret: "AT-b", expiresIn: 2000), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try lookup(cache, [])?.secret == "AT-b")  // no scope asked: the one that expires last
        // The refresh of "a" replaces the entry under the same key, now expiring after "b".
        try cache.save(accessToken: Sample.accessToken(target: "a", secret: "AT-a2", expiresIn: 3000), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try lookup(cache, [])?.secret == "AT-a2")
        #expect(try lookup(TokenCache(store: store), [])?.secret == "AT-a2")
        #expect(try lookup(cache, ["a"])?.secret == "AT-a2")
    }

    @Test("Concurrent saves from many threads lose nothing")
    func concurrentSaves() async throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for i in 0..<50 {
                        let home = "w\(worker)-\(i).t"
                        try cache.save(accessToken: Sample.accessToken(home: home, target: "a", secret: "AT"), refreshToken: nil,
                                       idToken: nil, account: Sample.account(home: home), appMetadata: nil)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try store.readAll().accessTokens.count == 400)
        #expect(try cache.accounts().count == 400)
        #expect(try store.changeStamp() == 400)
    }
}
