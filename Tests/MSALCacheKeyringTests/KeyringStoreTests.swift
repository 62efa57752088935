import Foundation
import MSALCache
@testable import MSALCacheKeyring
import MSALCore
import Synchronization
import Testing

extension KeyringTests {
@Suite("KeyringTokenCacheStore")
struct Store {
    @Test("Every entry kind round-trips with its unknown fields and stored key")
    func everyKindRoundTrips() throws {
        let fixture = KeyringFixture()
        let store = try fixture.store()
        #expect(try store.readAll() == TokenCacheContents())
        let entries = Sample.everyKind(home: "uid.utid")
        try store.apply(TokenCacheChange(upserts: entries))

        // A second store (as another process would open it) reads the same entries.
        let contents = try fixture.store().readAll()
        #expect(contents.count == entries.count)
        for entry in entries {
            #expect(contents.entry(kind: entry.kind, key: entry.key) == entry)
        }
        #expect(contents.unreadableEntries.isEmpty)
        #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup).count == entries.count)  // one item per entry
    }

    @Test("Items carry MSAL's keychain attributes, a label without personal data, and the entry's MSAL JSON")
    func itemLayout() throws {
        try #require(FileManager.default.isExecutableFile(atPath: SecretTool.path) || Keyring.isRequired, "secret-tool (libsecret-tools) is not installed")
        let fixture = KeyringFixture()
        let store = try fixture.store()
        let home = "Uid.Utid"
        let entries = Sample.everyKind(home: home)
        try store.apply(TokenCacheChange(upserts: entries))

        var byKind: [String: SecretTool.Item] = [:]
        for entry in entries {
            let item = try #require(try SecretTool.item(["access_group": fixture.accessGroup, "kind": entry.kind.rawValue]))
            #expect(item.schema == "org.swift-msal.TokenCache")
            #expect(item.attributes["access_group"] == fixture.accessGroup)
            #expect(item.attributes["kind"] == entry.kind.rawValue)
            #expect(item.attributes["key"] == entry.key)
            // The label names the store and section: no home account ID, username or secret.
            #expect(item.label == "swift-msal token cache (\(fixture.accessGroup)): \(entry.kind.rawValue)")
            byKind[entry.kind.rawValue] = item
        }
        // Another group's search finds none of them.
        #expect(try SecretTool.item(["access_group": fixture.accessGroup + ".other", "kind": "AccessToken"]) == nil)
        let account = "uid.utid-login.microsoftonline.com"
        let at = try #require(byKind["AccessToken"])
        #expect(at.attributes["account"] == account)
        #expect(at.attributes["service"] == "accesstoken-\(Sample.clientID)-\(Sample.tenant)-user.read mail.send")
        #expect(at.attributes["type"] == "2001")
        #expect(at.attributes["key"] == entries[0].key)
        let rt = try #require(byKind["RefreshToken"])
        #expect(rt.attributes["account"] == account)
        #expect(rt.attributes["service"] == "refreshtoken-1--")  // family ID, no realm, no target
        #expect(rt.attributes["type"] == "2002")
        #expect(rt.attributes["key"] == entries[1].key)
        let id = try #require(byKind["IdToken"])
        #expect(id.attributes["service"] == "idtoken-\(Sample.clientID)-\(Sample.tenant)-")
        #expect(id.attributes["type"] == "2003")
        let acct = try #require(byKind["Account"])
        #expect(acct.attributes["account"] == account)
        #expect(acct.attributes["service"] == Sample.tenant)
        #expect(acct.attributes["type"] == "1003")  // MSSTS
        let meta = try #require(byKind["AppMetadata"])
        #expect(meta.attributes["account"] == Sample.environment)
        #expect(meta.attributes["service"] == "appmetadata-\(Sample.clientID)")
        #expect(meta.attributes["type"] == "3001")

        // The secret is the record: kind, key and the entry's MSAL JSON with its unknown fields.
        let record = try #require(ItemRecord(decoding: Array(at.secret.utf8)))
        #expect(record.itemKey == ItemKey(kind: "AccessToken", key: entries[0].key))
        #expect(record.entry.objectValue?["secret"] == .string("AT-\(home)"))
        #expect(record.entry.objectValue?["future"] != nil)
        #expect(record.entry.objectValue?["credential_type"] == .string("AccessToken"))
    }

    @Test("Access groups are isolated; stores of one group share")
    func accessGroupIsolation() throws {
        let fixture = KeyringFixture()
        let other = fixture.accessGroup + ".other"
        let a = try fixture.store()
        let b = try fixture.store(accessGroup: other)
        let a2 = try fixture.store()
        let token = Sample.accessToken(home: "h.t", secret: "AT-a")
        try a.apply(TokenCacheChange(upserts: [.accessToken(token)]))
        #expect(try b.readAll() == TokenCacheContents())
        #expect(try a2.readAll().accessTokens == [token.key: token])

        // The same key in the other group is another item; removing it there leaves group A alone.
        var tokenB = token
        tokenB.secret = "AT-b"
        try b.apply(TokenCacheChange(upserts: [.accessToken(tokenB)]))
        #expect(try a.readAll().accessTokens[token.key]?.secret == "AT-a")
        try b.apply(TokenCacheChange(removals: [CacheEntryRemoval(.accessToken(tokenB))]))
        #expect(try b.readAll() == TokenCacheContents())
        #expect(try a.readAll().accessTokens[token.key]?.secret == "AT-a")
    }

    @Test("Removals: first removals then upserts, missing keys ignored, last writer wins per key")
    func removals() throws {
        let fixture = KeyringFixture()
        let store = try fixture.store()
        let a = Sample.accessToken(home: "a.t", secret: "AT-a")
        let b = Sample.accessToken(home: "b.t", secret: "AT-b")
        try store.apply(TokenCacheChange(upserts: [.accessToken(a), .accessToken(b), .account(Sample.account(home: "a.t"))]))
        var a2 = a
        a2.secret = "AT-a2"
        try store.apply(TokenCacheChange(
            upserts: [.accessToken(a2)],
            removals: [CacheEntryRemoval(.accessToken(a)), CacheEntryRemoval(.accessToken(b)), CacheEntryRemoval(kind: .idToken, key: "missing")]))
        let contents = try store.readAll()
        #expect(contents.accessTokens == [a.key: a2])
        #expect(contents.accounts.count == 1)
        #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup).count == 2)  // the replaced and removed items are gone

        try store.apply(TokenCacheChange(removals: [CacheEntryRemoval(.accessToken(a2)), CacheEntryRemoval(.account(Sample.account(home: "a.t")))]))
        #expect(try store.readAll() == TokenCacheContents())
        #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup).isEmpty)
    }

    @Test("An item whose entry this version cannot read is kept as unreadable and can be removed")
    func unreadableItems() throws {
        let fixture = KeyringFixture()
        let store = try fixture.store()
        // A proof-of-possession token: a credential type this version refuses to serve.
        let entry: JSONValue = .object(["credential_type": .string("AccessToken_With_AuthScheme"), "secret": .string("pop")])
        let record = ItemRecord(itemKey: ItemKey(kind: "AccessToken", key: "pop-key"), entry: entry)
        try KeyringItems.create(accessGroup: fixture.accessGroup, attributes: ["kind": "AccessToken", "key": "pop-key"], secret: record.encoded())
        let contents = try store.readAll()
        #expect(contents.accessTokens.isEmpty)
        #expect(contents.unreadableEntries["AccessToken"]?["pop-key"] == entry)
        try store.apply(TokenCacheChange(removals: [CacheEntryRemoval(kind: .accessToken, key: "pop-key")]))
        #expect(try store.readAll() == TokenCacheContents())
    }

    @Test("changeStamp changes after every commit by any store; applyReportingStamps brackets the change")
    func changeStamps() throws {
        let fixture = KeyringFixture()
        let store = try fixture.store()
        let other = try fixture.store()
        let s0 = try store.changeStamp()
        #expect(try store.changeStamp() == s0)
        #expect(try other.changeStamp() == s0)

        let stamps = try store.applyReportingStamps(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "h.t"))]))
        #expect(stamps.before == s0)
        #expect(stamps.after != s0)
        #expect(try store.changeStamp() == stamps.after)
        #expect(try other.changeStamp() == stamps.after)  // seen by another store (process) too

        // A change that removes nothing is still a commit.
        try other.apply(TokenCacheChange(removals: [CacheEntryRemoval(kind: .account, key: "x")]))
        let s2 = try store.changeStamp()
        #expect(s2 != stamps.after)

        // An empty change commits nothing.
        let empty = try store.applyReportingStamps(TokenCacheChange())
        #expect(empty.before == s2 && empty.after == s2)
        #expect(try store.changeStamp() == s2)
    }

    @Test("A TokenCache over the keyring store notices another store's change")
    func tokenCacheReloads() throws {
        let fixture = KeyringFixture()
        let cache = TokenCache(store: try fixture.store())
        let other = try fixture.store()
        #expect(try cache.accounts().isEmpty)
        try other.apply(TokenCacheChange(upserts: [.account(Sample.account(home: "h.t"))]))
        #expect(try cache.accounts().count == 1)
    }

    @Test("Concurrent writers on several threads and two store instances lose nothing")
    func concurrentWriters() async throws {
        let fixture = KeyringFixture()
        let stores = [try fixture.store(), try fixture.store()]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                let store = stores[worker % 2]
                group.addTask {
                    for i in 0..<8 {
                        try store.apply(TokenCacheChange(upserts: [
                            .accessToken(Sample.accessToken(home: "w\(worker)-\(i).t")),
                            .account(Sample.account(home: "w\(worker)-\(i).t")),
                        ]))
                    }
                }
            }
            try await group.waitForAll()
        }
        let contents = try stores[0].readAll()
        #expect(contents.accessTokens.count == 32)
        #expect(contents.accounts.count == 32)
        #expect(try stores[1].readAll() == contents)
    }

    @Test("Readers never see half of a change")
    func readersSeeWholeChanges() throws {
        let fixture = KeyringFixture()
        let writer = try fixture.store()
        let reader = try fixture.store()
        let finished = Atomic<Bool>(false)
        let failure = Mutex<String?>(nil)
        let thread = Thread {
            defer { finished.store(true, ordering: .releasing) }
            do {
                for batch in 0..<12 {
                    let entries = (0..<5).map { CacheEntry.accessToken(Sample.accessToken(home: "b\(batch)-\($0).t")) }
                    let previous = batch == 0 ? [] : (0..<5).map {
                        CacheEntryRemoval(.accessToken(Sample.accessToken(home: "b\(batch - 1)-\($0).t")))
                    }
                    try writer.apply(TokenCacheChange(upserts: entries, removals: previous))
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        thread.start()
        var observed = Set<Int>()
        var reads = 0
        while !finished.load(ordering: .acquiring) {
            let contents = try reader.readAll()
            observed.insert(contents.accessTokens.count)
            // Whole batches only: all five tokens of one batch.
            #expect(Set(contents.accessTokens.values.map { $0.homeAccountID.split(separator: "-").first! }).count <= 1)
            reads += 1
        }
        #expect(failure.withLock { $0 } == nil)
        #expect(reads > 0)
        #expect(observed.isSubset(of: [0, 5]))
        #expect(try reader.readAll().accessTokens.count == 5)
    }

    @Test("readAll makes a fixed number of Secret Service calls, whatever the number of entries")
    func bulkRead() throws {
        let fixture = KeyringFixture()
        let store = try fixture.store()
        try store.apply(TokenCacheChange(upserts: (0..<60).map { .accessToken(Sample.accessToken(home: "n\($0).t")) }))
        let (contents, calls) = try store.readCountingCalls()
        #expect(contents.accessTokens.count == 60)
        #expect(contents == (try store.readAll()))
        // ReadAlias, the collection's Locked property, one SearchItems, one GetSecrets.
        #expect(calls == 4)
    }
}
}
