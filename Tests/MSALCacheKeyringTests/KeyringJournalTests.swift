import Foundation
import MSALCache
@testable import MSALCacheKeyring
import MSALCore
import Testing

extension KeyringTests {
/// Changes interrupted part-way (a process killed mid-way, simulated by stopping the write and
/// releasing the lock as the kernel does for a dead process, or a Secret Service failure).
@Suite("Interrupted changes")
struct Journal {
    /// The state before the change: two access tokens and an account.
    static let a = Sample.accessToken(home: "a.t", secret: "AT-a")
    static let b = Sample.accessToken(home: "b.t", secret: "AT-b")
    static let initial = TokenCacheChange(upserts: [.accessToken(a), .accessToken(b), .account(Sample.account(home: "a.t"))])

    /// The change that gets interrupted: replaces a, adds c and an ID token, removes b (four keys).
    static var change: TokenCacheChange {
        var a2 = a
        a2.secret = "AT-a2"
        return TokenCacheChange(
            upserts: [
                .accessToken(a2), .accessToken(Sample.accessToken(home: "c.t", secret: "AT-c")),
                .idToken(IDTokenEntry(homeAccountID: "c.t", environment: Sample.environment, clientID: Sample.clientID, realm: Sample.tenant, secret: "ID-c")),
            ],
            removals: [CacheEntryRemoval(.accessToken(b))])
    }

    static let crashPoints: [KeyringTokenCacheStore.CrashPoint] = [
        .beforeJournal, .afterJournal, .afterKeys(1), .afterKeys(3), .beforeJournalRemoval,
    ]

    @Test("A store opened after a crash finds the state before the change", arguments: crashPoints)
    func crashThenOpen(point: KeyringTokenCacheStore.CrashPoint) throws {
        let fixture = KeyringFixture("crash")
        let crashed = try fixture.store()
        try crashed.apply(Self.initial)
        let before = try crashed.readAll()
        let stampBefore = try crashed.changeStamp()
        try crashed.applyInterrupted(Self.change, at: point)

        // The dead writer left the counter odd, and (after the journal was written) its journal.
        #expect(try fixture.lockFile.readCounter() & 1 == 1)
        let journals = try KeyringItems.paths(accessGroup: fixture.accessGroup, ["kind": KeyringItemLayout.journalKind])
        #expect(journals.count == (point == .beforeJournal ? 0 : 1))
        if point == .beforeJournalRemoval {
            // Every item of the change is already in the keyring: only the journal undoes it.
            #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup, ["key": Self.b.key]).isEmpty)
        }

        let reopened = try fixture.store()
        #expect(try reopened.readAll() == before)
        #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup, ["kind": KeyringItemLayout.journalKind]).isEmpty)
        #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup).count == 3)  // no leftovers of the change
        let stamp = try reopened.changeStamp()
        #expect(stamp & 1 == 0)
        #expect(stamp != stampBefore)

        // The store works on: the change applied again lands whole.
        try reopened.apply(Self.change)
        var expected = before
        expected.apply(Self.change)
        #expect(try crashed.readAll() == expected)
    }

    @Test("A reader in the crashed process undoes the change before it reads", arguments: [
        KeyringTokenCacheStore.CrashPoint.afterKeys(2), .beforeJournalRemoval,
    ])
    func crashThenRead(point: KeyringTokenCacheStore.CrashPoint) throws {
        let fixture = KeyringFixture("crash-read")
        let store = try fixture.store()
        try store.apply(Self.initial)
        let before = try store.readAll()
        try store.applyInterrupted(Self.change, at: point)
        #expect(try store.readAll() == before)
        #expect(try store.changeStamp() & 1 == 0)
    }

    @Test("A journal found with no lock file (its directory wiped) is still undone by a reader")
    func journalWithoutCounter() throws {
        let fixture = KeyringFixture("wiped")
        let store = try fixture.store()
        try store.apply(Self.initial)
        let before = try store.readAll()
        try store.applyInterrupted(Self.change, at: .afterKeys(2))
        try FileManager.default.removeItem(atPath: fixture.lockFile.path)
        #expect(try store.changeStamp() == 0)  // looks like a quiet, even counter
        #expect(try store.readAll() == before)
        #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup, ["kind": KeyringItemLayout.journalKind]).isEmpty)
    }

    @Test("The next writer undoes a crashed change, then applies its own")
    func crashThenWrite() throws {
        let fixture = KeyringFixture("crash-write")
        let crashed = try fixture.store()
        let other = try fixture.store()
        try crashed.apply(Self.initial)
        let before = try crashed.readAll()
        try crashed.applyInterrupted(Self.change, at: .afterKeys(3))
        let d = Sample.accessToken(home: "d.t", secret: "AT-d")
        let stamps = try other.applyReportingStamps(TokenCacheChange(upserts: [.accessToken(d)]))
        #expect(stamps.before & 1 == 0 && stamps.after & 1 == 0)
        var expected = before
        expected.insert(.accessToken(d), storedKey: d.key)
        #expect(try other.readAll() == expected)
    }

    @Test("A change that fails part-way is undone before the error is thrown")
    func failureIsUndone() throws {
        let fixture = KeyringFixture("failure")
        let store = try fixture.store()
        try store.apply(Self.initial)
        let before = try store.readAll()
        let stampBefore = try store.changeStamp()
        let error = #expect(throws: MSALError.self) {
            try store.applyInterrupted(Self.change, at: .failingAfterKeys(2))
        }
        #expect(error.map { isMSALError($0, .cacheError, containing: "simulated failure") } == true)
        #expect(try store.readAll() == before)
        #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup, ["kind": KeyringItemLayout.journalKind]).isEmpty)
        let stamp = try store.changeStamp()
        #expect(stamp & 1 == 0 && stamp != stampBefore)
    }

    @Test("Re-saving unchanged entries writes no item and no journal, yet moves the stamp")
    func unchangedEntriesAreNotRewritten() throws {
        let fixture = KeyringFixture("unchanged")
        let store = try fixture.store()
        try store.apply(Self.initial)
        let before = try store.readAll()
        let paths = Set(try KeyringItems.paths(accessGroup: fixture.accessGroup))
        let stamp = try store.changeStamp()
        // Were anything written, the crash point would stop the change after its journal.
        try store.applyInterrupted(Self.initial, at: .afterJournal)
        #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup, ["kind": KeyringItemLayout.journalKind]).isEmpty)
        #expect(Set(try KeyringItems.paths(accessGroup: fixture.accessGroup)) == paths)
        #expect(try store.readAll() == before)
        let after = try store.changeStamp()
        #expect(after & 1 == 0 && after != stamp)

        // Two changed entries among unchanged ones: only their keys are journaled and written.
        var a2 = Self.a
        a2.secret = "AT-a2"
        let c = Sample.accessToken(home: "c.t", secret: "AT-c")
        try store.applyInterrupted(TokenCacheChange(upserts: [.accessToken(a2), .accessToken(Self.b), .accessToken(c)]), at: .afterJournal)
        let journal = try #require(try KeyringItems.journals(accessGroup: fixture.accessGroup).first)
        #expect(Set(journal.images.map(\.itemKey)) == [ItemKey(kind: "AccessToken", key: Self.a.key), ItemKey(kind: "AccessToken", key: c.key)])
        #expect(try store.readAll() == before)  // undone
    }

    @Test("A change of one key needs no journal (CreateItem with Replace is atomic), and is still whole after a kill")
    func singleKeyChangesSkipTheJournal() throws {
        let fixture = KeyringFixture("single")
        let store = try fixture.store()
        try store.apply(Self.initial)
        var a2 = Self.a
        a2.secret = "AT-a2"
        // Stopped right after the point where a journal would have been written: there is none, and
        // nothing was changed yet, so the store reopens to the state before.
        try store.applyInterrupted(TokenCacheChange(upserts: [.accessToken(a2)]), at: .afterJournal)
        #expect(try KeyringItems.journals(accessGroup: fixture.accessGroup).isEmpty)
        #expect(try fixture.store().readAll().accessTokens[Self.a.key]?.secret == "AT-a")
        // Stopped after its one item: the state after, with no second item for the key.
        try store.applyInterrupted(TokenCacheChange(upserts: [.accessToken(a2)]), at: .afterKeys(1))
        #expect(try KeyringItems.journals(accessGroup: fixture.accessGroup).isEmpty)
        #expect(try fixture.store().readAll().accessTokens[Self.a.key]?.secret == "AT-a2")
        #expect(try KeyringItems.paths(accessGroup: fixture.accessGroup, ["kind": "AccessToken", "key": Self.a.key]).count == 1)
        // A removal of one key: one Delete.
        try store.applyInterrupted(TokenCacheChange(removals: [CacheEntryRemoval(.accessToken(Self.b))]), at: .afterKeys(1))
        #expect(try fixture.store().readAll().accessTokens[Self.b.key] == nil)
    }

    @Test("The journal round-trips every byte of the items it keeps")
    func journalCodec() throws {
        let journal = JournalRecord(images: [
            .init(itemKey: ItemKey(kind: "AccessToken", key: "k1"), secrets: [[0, 1, 2, 255], Array("{\"x\":1}".utf8)]),
            .init(itemKey: ItemKey(kind: "Account", key: "k2"), secrets: []),
        ])
        #expect(try JournalRecord(decoding: journal.encoded()) == journal)
        #expect(throws: MSALError.self) { try JournalRecord(decoding: Array("{\"kind\":\"AccessToken\"}".utf8)) }
    }
}
}
