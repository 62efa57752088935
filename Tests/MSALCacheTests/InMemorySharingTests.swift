import Foundation
import MSALCache
import MSALCore
import MSALTestSupport
import Testing

/// A token cache over an `InMemoryTokenCacheStore` keeps one copy of the entries for the store and
/// its index. Checked against the same operations through a store the cache does not recognise
/// (each side then keeps its own copy, applying every change twice), step by step.
@Suite("TokenCache over an in-memory store: one copy of the entries")
struct InMemorySharingTests {
    /// Forwards to an in-memory store without being one, so a cache over it keeps its own copy.
    final class ForwardingStore: TokenCacheStore {
        let inner: InMemoryTokenCacheStore
        init(_ inner: InMemoryTokenCacheStore) { self.inner = inner }
        var accessGroup: String { inner.accessGroup }
        func readAll() throws(MSALError) -> TokenCacheContents { try inner.readAll() }
        func apply(_ change: TokenCacheChange) throws(MSALError) { try inner.apply(change) }
        func changeStamp() throws(MSALError) -> UInt64 { try inner.changeStamp() }
    }

    static let homes = (0..<3).map { "0a0a0a0a-0000-4000-8000-00000000000\($0).\(Sample.tenant)" }
    static let realms = [Sample.tenant, "bbbbbbbb-0000-4000-8000-00000000bbbb"]
    static let targets = ["User.Read Mail.Read", "User.Read", "Files.Read", "Mail.Read Files.Read", "https://r.example/.default"]

    /// Entries the starting contents hold that a cache cannot read, and a section it does not know:
    /// one unreadable entry sits under the key a saved token will have.
    static func startingContents() -> TokenCacheContents {
        var contents = TokenCacheContents()
        contents.unknownSections["FutureSection"] = .object(["x": .string("y")])
        let replacedKey = Sample.accessToken(home: homes[0], target: targets[0], secret: "").key
        contents.unreadableEntries["AccessToken"] = [
            replacedKey: .object(["credential_type": .string("AccessToken_With_AuthScheme")]),
            "kept-unreadable": .object(["credential_type": .string("AccessToken_With_AuthScheme")]),
        ]
        contents.unreadableEntries["Account"] = ["removed-unreadable": .object(["home_account_id": .number(1)])]
        contents.insert(.account(Sample.account(home: homes[1])), storedKey: Sample.account(home: homes[1]).key)
        // Entries of the third account under keys another MSAL wrote (not this version's keys).
        contents.insert(.accessToken(Sample.accessToken(home: homes[2], target: targets[1], secret: "AT-foreign")), storedKey: "foreign-access-token")
        contents.insert(.accessToken(Sample.accessToken(home: homes[2], realm: realms[1], target: targets[2], secret: "AT-foreign-2")), storedKey: "foreign-access-token-2")
        contents.insert(.refreshToken(Sample.refreshToken(home: homes[2], secret: "RT-foreign")), storedKey: "foreign-refresh-token")
        contents.insert(.idToken(Sample.idToken(home: homes[2], secret: "ID-foreign")), storedKey: "foreign-id-token")
        contents.insert(.account(Sample.account(home: homes[2])), storedKey: "foreign-account")
        return contents
    }

    /// Two caches over `shared` (which keep one copy of the entries with it) and two over `separate`
    /// behind a ``ForwardingStore`` (each keeping its own copy).
    static func caches(_ shared: InMemoryTokenCacheStore, _ separate: InMemoryTokenCacheStore) -> (TokenCache, TokenCache, TokenCache, TokenCache) {
        (TokenCache(store: shared), TokenCache(store: shared), TokenCache(store: ForwardingStore(separate)), TokenCache(store: ForwardingStore(separate)))
    }

    @Test("Saves, removals and another cache's writes leave the store and the lookups as with two copies (seeded)")
    func sameAsTwoCopies() throws {
        let (shared, separate) = (InMemoryTokenCacheStore(contents: Self.startingContents()), InMemoryTokenCacheStore(contents: Self.startingContents()))
        let (sharedCache, otherSharedCache, separateCache, otherSeparateCache) = Self.caches(shared, separate)
        var random = SplitMix64(seed: 11)
        var snapshots: [(contents: TokenCacheContents, json: Data)] = []
        for step in 0..<300 {
            let home = Self.homes[Int(random.next() % 3)], realm = Self.realms[Int(random.next() % 2)]
            let target = Self.targets[Int(random.next() % UInt64(Self.targets.count))]
            let operation = random.next() % 10
            // The same operation on both sides; through the second cache now and then (another writer).
            let second = random.next() % 5 == 0
            for (cache, other) in [(sharedCache, otherSharedCache), (separateCache, otherSeparateCache)] {
                let writer = second ? other : cache
                switch operation {
                case 0..<5:  // what a refresh writes
                    try writer.save(
                        accessToken: Sample.accessToken(home: home, realm: realm, target: target, secret: "AT-\(step)", expiresIn: TimeInterval(600 + step)),
                        refreshToken: Sample.refreshToken(home: home, familyID: step % 2 == 0 ? "1" : nil, secret: "RT-\(step)"),
                        idToken: Sample.idToken(home: home, realm: realm, secret: "ID-\(step)"),
                        account: Sample.account(home: home, realm: realm, username: "user\(step % 4)@contoso.example"),
                        appMetadata: AppMetadataEntry(clientID: Sample.clientID, environment: Sample.environment, familyID: step % 3 == 0 ? "1" : nil))
                case 5, 6:
                    try writer.save(
                        accessToken: Sample.accessToken(home: home, realm: realm, target: target, secret: "AT-\(step)"),
                        refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
                case 7:
                    try writer.removeAccount(homeAccountID: home, environment: Sample.environment, clientID: Sample.clientID)
                case 8:
                    try writer.remove([
                        CacheEntryRemoval(kind: .account, key: "removed-unreadable"),
                        CacheEntryRemoval(kind: .accessToken, key: Sample.accessToken(home: home, realm: realm, target: target, secret: "").key),
                    ])
                default:
                    break  // lookups only
                }
            }
            let sharedContents = try shared.readAll(), separateContents = try separate.readAll()
            #expect(sharedContents == separateContents, "step \(step)")
            // Contents read before are values: no later change shows through them.
            for snapshot in snapshots { #expect(try snapshot.contents.msalJSON() == snapshot.json, "step \(step)") }
            if step % 50 == 0 { snapshots.append((sharedContents, try sharedContents.msalJSON())) }
            let fresh = TokenCache(store: shared)
            for lookupHome in Self.homes {
                for cache in [sharedCache, otherSharedCache, fresh] {
                    #expect(try cache.accountEntries(homeAccountID: lookupHome, environment: nil)
                        == separateCache.accountEntries(homeAccountID: lookupHome, environment: nil), "step \(step)")
                    #expect(try cache.refreshTokenCandidates(homeAccountID: lookupHome, environment: Sample.environment, clientID: Sample.clientID)
                        == separateCache.refreshTokenCandidates(homeAccountID: lookupHome, environment: Sample.environment, clientID: Sample.clientID))
                    for lookupRealm in Self.realms {
                        for scopes: ScopeSet in [["user.read"], ["Mail.Read", "Files.Read"], ["https://r.example/.default"], []] {
                            #expect(try cache.accessToken(homeAccountID: lookupHome, environment: Sample.environment, realm: lookupRealm, clientID: Sample.clientID, scopes: scopes)
                                == separateCache.accessToken(homeAccountID: lookupHome, environment: Sample.environment, realm: lookupRealm, clientID: Sample.clientID, scopes: scopes))
                        }
                        #expect(try cache.idToken(homeAccountID: lookupHome, environment: Sample.environment, realm: lookupRealm, clientID: Sample.clientID)
                            == separateCache.idToken(homeAccountID: lookupHome, environment: Sample.environment, realm: lookupRealm, clientID: Sample.clientID))
                    }
                }
            }
        }
        let final = try shared.readAll()
        // What the cache cannot read stays, but for what the changes replaced or removed.
        #expect(final.unknownSections["FutureSection"] == .object(["x": .string("y")]))
        #expect(final.unreadableEntries["AccessToken"]?["kept-unreadable"] != nil)
        #expect(final.unreadableEntries["AccessToken"]?[Sample.accessToken(home: Self.homes[0], target: Self.targets[0], secret: "").key] == nil)
        #expect(final.unreadableEntries["Account"] == nil)
        #expect(final.accessTokens.count > 0)
        // The entries under other MSALs' keys were replaced or removed along the way.
        #expect(final.refreshTokens["foreign-refresh-token"] == nil && final.accounts["foreign-account"] == nil)
    }

    @Test("Refreshes replace tokens in place, leaving the store as the planned change does (seeded)")
    func inPlaceAsPlanned() throws {
        let (shared, separate) = (InMemoryTokenCacheStore(contents: Self.startingContents()), InMemoryTokenCacheStore(contents: Self.startingContents()))
        let (sharedCache, otherSharedCache, separateCache, otherSeparateCache) = Self.caches(shared, separate)
        var random = SplitMix64(seed: 23)
        var inPlace = 0, planned = 0
        for step in 0..<400 {
            let homeIndex = Int(random.next() % 3)
            let home = Self.homes[homeIndex], realm = Self.realms[Int(random.next() % 2)]
            let target = Self.targets[Int(random.next() % UInt64(Self.targets.count))]
            let operation = random.next() % 20
            let second = random.next() % 10 == 0
            // Each home keeps its family and username, as an account's refreshes do, but for the
            // operations that change one of them (which a replacement in place must not take).
            var familyID: String? = homeIndex == 1 ? "1" : nil
            var username = "user\(homeIndex)@contoso.example"
            var entryRealm = realm, entryTarget = target
            switch operation {
            case 0: username = "renamed\(step)@contoso.example"
            case 1: familyID = familyID == nil ? "1" : nil
            case 2: entryRealm = realm.uppercased()  // the same tenant in another case: filed anew
            case 3: entryTarget = "User.Read Calendars.Read"  // overlaps other tokens: they are removed
            default: break
            }
            for (cache, other) in [(sharedCache, otherSharedCache), (separateCache, otherSeparateCache)] {
                let writer = second ? other : cache
                if operation == 4 {
                    try writer.remove([CacheEntryRemoval(kind: .accessToken, key: Sample.accessToken(home: home, realm: realm, target: target, secret: "").key)])
                    continue
                }
                let outcome = try writer.save(
                    accessToken: Sample.accessToken(home: home, realm: entryRealm, target: entryTarget, secret: "AT-\(step)", expiresIn: TimeInterval(600 + step)),
                    accessTokenScopes: nil,
                    refreshToken: Sample.refreshToken(home: home, familyID: familyID, secret: "RT-\(step)"),
                    idToken: Sample.idToken(home: home, realm: entryRealm, secret: "ID-\(step)"),
                    account: Sample.account(home: home, realm: entryRealm, username: username),
                    appMetadata: AppMetadataEntry(clientID: Sample.clientID, environment: Sample.environment, familyID: "1"))
                if cache === separateCache {
                    #expect(!outcome.replacedInPlace, "a cache over another store never replaces in place (step \(step))")
                } else if outcome.replacedInPlace {
                    inPlace += 1
                    #expect(operation != 0, "step \(step): a renamed account is written, not left in place")
                    #expect(outcome.accountUnchanged && outcome.revisions != nil)
                } else {
                    planned += 1
                }
            }
            let sharedContents = try shared.readAll(), separateContents = try separate.readAll()
            #expect(sharedContents == separateContents, "step \(step)")
            #expect(try sharedContents.msalJSON() == separateContents.msalJSON(), "step \(step)")
            let fresh = TokenCache(store: shared)
            for cache in [sharedCache, otherSharedCache, fresh] {
                #expect(try cache.accountEntries(homeAccountID: home, environment: nil)
                    == separateCache.accountEntries(homeAccountID: home, environment: nil), "step \(step)")
                #expect(try cache.refreshTokenCandidates(homeAccountID: home, environment: Sample.environment, clientID: Sample.clientID)
                    == separateCache.refreshTokenCandidates(homeAccountID: home, environment: Sample.environment, clientID: Sample.clientID), "step \(step)")
                for lookupRealm in Self.realms {
                    for scopes: ScopeSet in [["user.read"], ["Mail.Read", "Files.Read"], ["https://r.example/.default"], ["calendars.read"]] {
                        #expect(try cache.accessToken(homeAccountID: home, environment: Sample.environment, realm: lookupRealm, clientID: Sample.clientID, scopes: scopes)
                            == separateCache.accessToken(homeAccountID: home, environment: Sample.environment, realm: lookupRealm, clientID: Sample.clientID, scopes: scopes),
                            "step \(step)")
                    }
                    #expect(try cache.idToken(homeAccountID: home, environment: Sample.environment, realm: lookupRealm, clientID: Sample.clientID)
                        == separateCache.idToken(homeAccountID: home, environment: Sample.environment, realm: lookupRealm, clientID: Sample.clientID), "step \(step)")
                }
            }
        }
        // Both kinds of save happened often enough to compare.
        #expect(inPlace > 80, "replaced in place \(inPlace) times")
        #expect(planned > 60, "planned \(planned) times")
    }

    /// Saves `accessToken` (with `scopes`), `refreshToken` and `idToken` through a cache over each of
    /// two in-memory stores holding `contents`, the second behind a ``ForwardingStore`` (always a
    /// planned change).
    /// - Returns: both stores' contents after the save, and whether the first save replaced in place.
    static func saveBoth(
        _ contents: TokenCacheContents, accessToken: AccessTokenEntry, scopes: ScopeSet? = nil,
        refreshToken: RefreshTokenEntry? = nil, idToken: IDTokenEntry? = nil
    ) throws -> (inPlace: TokenCacheContents, planned: TokenCacheContents, replacedInPlace: Bool) {
        let (shared, separate) = (InMemoryTokenCacheStore(contents: contents), InMemoryTokenCacheStore(contents: contents))
        let (sharedCache, _, separateCache, _) = Self.caches(shared, separate)
        var replaced = false
        for cache in [sharedCache, separateCache] {
            let outcome = try cache.save(
                accessToken: accessToken, accessTokenScopes: scopes, refreshToken: refreshToken, idToken: idToken,
                account: nil, appMetadata: nil)
            if cache === sharedCache { replaced = outcome.replacedInPlace }
        }
        return (try shared.readAll(), try separate.readAll(), replaced)
    }

    @Test("An identifier equal to the stored one in other bytes (composed or decomposed) is written as given, not replaced in place")
    func canonicallyEquivalentIdentifiers() throws {
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"  // 15 bytes or fewer: no interned copy to share
        for (stored, given) in [(decomposed, composed), (composed, decomposed)] {
            var contents = TokenCacheContents()
            let oldAccess = Sample.accessToken(realm: stored, target: stored, secret: "AT-0")
            let oldID = Sample.idToken(realm: stored, secret: "ID-0")
            contents.insert(.accessToken(oldAccess), storedKey: oldAccess.key)
            contents.insert(.idToken(oldID), storedKey: oldID.key)
            let saved = try Self.saveBoth(
                contents, accessToken: Sample.accessToken(realm: given, target: given, secret: "AT-1"),
                idToken: Sample.idToken(realm: given, secret: "ID-1"))
            #expect(!saved.replacedInPlace)
            #expect(try saved.inPlace.msalJSON() == saved.planned.msalJSON())
            let token = try #require(saved.inPlace.accessTokens.first?.value)
            #expect(Array(token.target.utf8) == Array(given.utf8) && Array(token.realm.utf8) == Array(given.utf8))
            #expect(Array(try #require(saved.inPlace.idTokens.first?.value).realm.utf8) == Array(given.utf8))
        }
        // The same bytes are replaced in place.
        var contents = TokenCacheContents()
        let old = Sample.accessToken(target: composed, secret: "AT-0")
        contents.insert(.accessToken(old), storedKey: old.key)
        let same = try Self.saveBoth(contents, accessToken: Sample.accessToken(target: composed, secret: "AT-1"))
        #expect(same.replacedInPlace && same.inPlace == same.planned)
    }

    @Test("An entry the store cannot read under a key the save writes makes it a planned change, which forgets that entry",
          arguments: [CacheEntryKind.accessToken, .refreshToken, .idToken, .account])
    func unreadableUnderWrittenKey(kind: CacheEntryKind) throws {
        var contents = TokenCacheContents()
        let access = Sample.accessToken(secret: "AT-0"), refresh = Sample.refreshToken(secret: "RT-0"), id = Sample.idToken(secret: "ID-0")
        let account = Sample.account()
        contents.insert(.accessToken(access), storedKey: access.key)
        contents.insert(.refreshToken(refresh), storedKey: refresh.key)
        contents.insert(.idToken(id), storedKey: id.key)
        contents.insert(.account(account), storedKey: account.key)
        let key = switch kind {
        case .accessToken: access.key
        case .refreshToken: refresh.key
        case .idToken: id.key
        default: account.key
        }
        // Contents built in code may hold both under one key (a JSON document cannot); an
        // unreadable entry under another key does not stand in the way.
        let unreadable = JSONValue.object(["credential_type": .string("AccessToken_With_AuthScheme")])
        contents.unreadableEntries[kind.rawValue] = [key: unreadable, "elsewhere": unreadable]
        let (shared, separate) = (InMemoryTokenCacheStore(contents: contents), InMemoryTokenCacheStore(contents: contents))
        let (sharedCache, _, separateCache, _) = Self.caches(shared, separate)
        var replaced: [Bool] = []
        for step in 1...2 {
            for cache in [sharedCache, separateCache] {
                let outcome = try cache.save(
                    accessToken: Sample.accessToken(secret: "AT-\(step)"), accessTokenScopes: nil, refreshToken: Sample.refreshToken(secret: "RT-\(step)"),
                    idToken: Sample.idToken(secret: "ID-\(step)"), account: account, appMetadata: nil)
                if cache === sharedCache { replaced.append(outcome.replacedInPlace) }
            }
            #expect(try shared.readAll() == separate.readAll(), "\(kind) step \(step)")
        }
        #expect(replaced == [false, true], "\(kind)")
        let final = try shared.readAll()
        #expect(final.unreadableEntries[kind.rawValue]?[key] == nil && final.unreadableEntries[kind.rawValue]?["elsewhere"] != nil)
    }

    @Test("The scopes given for the access token decide which other tokens it replaces, as in the planned change")
    func givenScopesDecide() throws {
        var contents = TokenCacheContents()
        let a = Sample.accessToken(target: "A", secret: "AT-a"), b = Sample.accessToken(target: "B", secret: "AT-b")
        contents.insert(.accessToken(a), storedKey: a.key)
        contents.insert(.accessToken(b), storedKey: b.key)
        let wider = try Self.saveBoth(contents, accessToken: Sample.accessToken(target: "A", secret: "AT-a2"), scopes: ["A", "B"])
        #expect(!wider.replacedInPlace && wider.inPlace == wider.planned && wider.inPlace.accessTokens.count == 1)
        let own = try Self.saveBoth(contents, accessToken: Sample.accessToken(target: "A", secret: "AT-a2"), scopes: ["A"])
        #expect(own.replacedInPlace && own.inPlace == own.planned && own.inPlace.accessTokens.count == 2)
    }
}
