import Foundation
import MSALCache
import MSALCore
import MSALTestSupport
import Synchronization
import Testing

/// The conformance suite itself: each store below breaks one promise of the TokenCacheStore
/// contract, and the check that covers that promise must fail on it (a check that cannot fail
/// checks nothing). The honest stores pass the same checks in StoreConformanceTests.
@Suite("TokenCacheStoreConformance catches broken stores")
struct ConformanceSuiteSelfTests {
    enum Defect: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case ignoresRemovals, upsertsBeforeRemovals, dropsUnknownFields, emptyChangeMovesStamp, stampNeverMoves
        case stampBlindToOtherInstances, losesConcurrentUpdates, readersSeeHalfChanges, ignoresAccessGroups
        case wrongDefaultGroup, forgetsOnReopen, overwritesDamagedFile, secretInLockError, partialWriteWhenLocked
        case writesWithoutLock, instancesShareNothing, needsExistingDirectory, dropsKeyedItemsOnWrite

        var testDescription: String { rawValue }

        /// The check (by name) that must fail.
        var check: String {
            switch self {
            case .ignoresRemovals, .upsertsBeforeRemovals: "apply removes first"
            case .dropsUnknownFields: "every entry kind round-trips"
            case .emptyChangeMovesStamp: "an empty change"
            case .stampNeverMoves: "changeStamp stays put"
            case .stampBlindToOtherInstances: "changeStamp moves after a commit by another instance"
            case .losesConcurrentUpdates: "concurrent writers on one instance"
            case .readersSeeHalfChanges: "readers never see half"
            case .ignoresAccessGroups: "stores of different access groups"
            case .wrongDefaultGroup: "the default access group"
            case .forgetsOnReopen: "a store made again"
            case .overwritesDamagedFile: "damaged stored bytes"
            case .secretInLockError, .partialWriteWhenLocked: "a store locked beyond its timeout"
            case .writesWithoutLock: "concurrent writers on two instances"
            case .instancesShareNothing: "stores of the same access group"
            case .needsExistingDirectory: "a location that does not exist yet"
            case .dropsKeyedItemsOnWrite: "ADAL keyed items"
            }
        }

        var harness: TokenCacheStoreHarness {
            switch self {
            case .ignoresRemovals: Self.memory { BrokenStore(.ignoresRemovals, group: $0) }
            case .upsertsBeforeRemovals: Self.memory { BrokenStore(.upsertsBeforeRemovals, group: $0) }
            case .dropsUnknownFields: Self.memory { BrokenStore(.dropsUnknownFields, group: $0) }
            case .emptyChangeMovesStamp: Self.memory { BrokenStore(.emptyChangeMovesStamp, group: $0) }
            case .stampNeverMoves: Self.memory { BrokenStore(.stampNeverMoves, group: $0) }
            case .losesConcurrentUpdates: Self.memory { BrokenStore(.losesConcurrentUpdates, group: $0) }
            case .readersSeeHalfChanges: Self.memory { BrokenStore(.readersSeeHalfChanges, group: $0) }
            case .wrongDefaultGroup: Self.memory { group in InMemoryTokenCacheStore(accessGroup: group ?? "com.example.not-the-default") }
            case .stampBlindToOtherInstances:
                Self.file { location, group in StampBlindStore(try StoreConformanceTests.jsonFile.makeStore(location, group)) }
            case .ignoresAccessGroups:
                // Reports the group it was given, but keeps every group's entries in the default one.
                Self.file { location, group in MislabeledStore(try JSONFileTokenCacheStore(path: location), group: group) }
            case .forgetsOnReopen:
                Self.file { location, group in
                    // A new store starts by emptying its file.
                    try? FileManager.default.removeItem(atPath: location)
                    return try StoreConformanceTests.jsonFile.makeStore(location, group)
                }
            case .overwritesDamagedFile:
                Self.file { location, group in OverwritingStore(try StoreConformanceTests.jsonFile.makeStore(location, group), path: location) }
            case .secretInLockError:
                Self.file(impatient: { LeakyStore(try JSONFileTokenCacheStore(path: $0, lockTimeout: 0.2)) }) {
                    try StoreConformanceTests.jsonFile.makeStore($0, $1)
                }
            case .writesWithoutLock:
                Self.file { location, group in UnlockedFileStore(path: location, group: group) }
            case .instancesShareNothing:
                Self.file { location, group in try StoreConformanceTests.jsonFile.makeStore(location + "-" + UUID().uuidString, group) }
            case .needsExistingDirectory:
                Self.file { location, group in
                    let directory = (location as NSString).deletingLastPathComponent
                    guard FileManager.default.fileExists(atPath: directory) else {
                        throw MSALError.internal(.cacheError, "The directory '\(directory)' does not exist.")
                    }
                    return try StoreConformanceTests.jsonFile.makeStore(location, group)
                }
            case .dropsKeyedItemsOnWrite: Self.memory { KeyedItemDroppingStore(group: $0) }
            case .partialWriteWhenLocked:
                // Writes the removals without the lock, then fails on the upserts.
                Self.file(impatient: { PartialStore(try JSONFileTokenCacheStore(path: $0, lockTimeout: 0.2), path: $0) }) {
                    try StoreConformanceTests.jsonFile.makeStore($0, $1)
                }
            }
        }

        static func memory(_ make: @escaping @Sendable (String?) -> any TokenCacheStore) -> TokenCacheStoreHarness {
            TokenCacheStoreHarness(name: "broken in-memory", instancesShareState: false, isPersistent: false) { _, group in make(group) }
        }

        static func file(
            impatient: (@Sendable (String) throws -> any TokenCacheStore)? = nil,
            _ make: @escaping @Sendable (String, String?) throws -> any TokenCacheStore
        ) -> TokenCacheStoreHarness {
            var harness = StoreConformanceTests.jsonFile
            harness.name = "broken JSON file"
            harness.makeStore = make
            if let impatient { harness.externalLock?.makeImpatientStore = impatient }
            return harness
        }
    }

    @Test("A store with a defect fails the check that covers it", arguments: Defect.allCases)
    func defectIsCaught(_ defect: Defect) async throws {
        let check = try #require(TokenCacheStoreConformance.checks.first { $0.name.hasPrefix(defect.check) })
        do {
            let outcome = try await check.run(on: defect.harness)
            Issue.record("'\(check)' did not fail on a store that \(defect.rawValue): \(outcome)")
        } catch let failure as TokenCacheStoreConformanceFailure {
            #expect(failure.check == check.name)
            #expect(failure.backend.hasPrefix("broken"))
            #expect(failure.description.contains("TokenCacheStoreConformance.swift:"))
        }
    }

    @Test("Every check of the suite has a defect above that it must catch")
    func everyCheckIsCovered() {
        let covered = Set(Defect.allCases.map(\.check))
        let uncovered = TokenCacheStoreConformance.checks.filter { check in !covered.contains { check.name.hasPrefix($0) } }
        #expect(uncovered.map(\.name) == [])
    }
}

/// An in-memory store with one deliberate defect.
final class BrokenStore: TokenCacheStore, @unchecked Sendable {
    enum Defect { case ignoresRemovals, upsertsBeforeRemovals, dropsUnknownFields, emptyChangeMovesStamp, stampNeverMoves, losesConcurrentUpdates, readersSeeHalfChanges }

    let defect: Defect
    let accessGroup: String
    private let lock = NSLock()
    private var contents = TokenCacheContents()
    private var stamp: UInt64 = 0

    init(_ defect: Defect, group: String?) {
        self.defect = defect
        accessGroup = group ?? TokenCacheAccessGroup.default
    }

    func readAll() throws(MSALError) -> TokenCacheContents { lock.withLock { contents } }

    func changeStamp() throws(MSALError) -> UInt64 { lock.withLock { defect == .stampNeverMoves ? 0 : stamp } }

    func apply(_ change: TokenCacheChange) throws(MSALError) {
        switch defect {
        case .losesConcurrentUpdates:
            // Read, modify, write back without holding the lock in between.
            var copy = lock.withLock { contents }
            copy.apply(change)
            usleep(200)
            lock.withLock { contents = copy; stamp += 1 }
        case .readersSeeHalfChanges:
            lock.withLock { for removal in change.removals { _ = contents.remove(kind: removal.kind, key: removal.key) } }
            for upsert in change.upserts {
                lock.withLock { contents.apply(TokenCacheChange(upserts: [upsert])) }
                usleep(100)
            }
            lock.withLock { stamp += 1 }
        default:
            lock.withLock {
                if change.isEmpty && defect != .emptyChangeMovesStamp { return }
                switch defect {
                case .ignoresRemovals: contents.apply(TokenCacheChange(upserts: change.upserts))
                case .upsertsBeforeRemovals:
                    contents.apply(TokenCacheChange(upserts: change.upserts))
                    contents.apply(TokenCacheChange(removals: change.removals))
                case .dropsUnknownFields:
                    contents.apply(TokenCacheChange(upserts: change.upserts.map(Self.withoutUnknownFields), removals: change.removals))
                default: contents.apply(change)
                }
                stamp += 1
            }
        }
    }

    private static func withoutUnknownFields(_ entry: CacheEntry) -> CacheEntry {
        switch entry {
        case .accessToken(var e): e.additionalFields = [:]; return .accessToken(e)
        case .refreshToken(var e): e.additionalFields = [:]; return .refreshToken(e)
        case .idToken(var e): e.additionalFields = [:]; return .idToken(e)
        case .account(var e): e.additionalFields = [:]; return .account(e)
        case .appMetadata(var e): e.additionalFields = [:]; return .appMetadata(e)
        }
    }
}

/// Forwards to a store but reports only its own commits in changeStamp.
final class StampBlindStore: TokenCacheStore, @unchecked Sendable {
    let inner: any TokenCacheStore
    private let own = Atomic<UInt64>(0)
    init(_ inner: any TokenCacheStore) { self.inner = inner }
    var accessGroup: String { inner.accessGroup }
    func readAll() throws(MSALError) -> TokenCacheContents { try inner.readAll() }
    func changeStamp() throws(MSALError) -> UInt64 { own.load(ordering: .relaxed) }
    func apply(_ change: TokenCacheChange) throws(MSALError) {
        try inner.apply(change)
        if !change.isEmpty { own.add(1, ordering: .relaxed) }
    }
    func applyReportingStamps(_ change: TokenCacheChange) throws(MSALError) -> AppliedChangeStamps {
        let before = own.load(ordering: .relaxed)
        try apply(change)
        return AppliedChangeStamps(before: before, after: own.load(ordering: .relaxed))
    }
}

/// Starts over with an empty file when the file cannot be read.
final class OverwritingStore: TokenCacheStore, @unchecked Sendable {
    let inner: any TokenCacheStore
    let path: String
    init(_ inner: any TokenCacheStore, path: String) { self.inner = inner; self.path = path }
    var accessGroup: String { inner.accessGroup }
    func readAll() throws(MSALError) -> TokenCacheContents { try repaired { () throws(MSALError) in try inner.readAll() } }
    func changeStamp() throws(MSALError) -> UInt64 { try inner.changeStamp() }
    func apply(_ change: TokenCacheChange) throws(MSALError) { try repaired { () throws(MSALError) in try inner.apply(change) } }
    private func repaired<T>(_ body: () throws(MSALError) -> T) throws(MSALError) -> T {
        do { return try body() } catch { try? Data().write(to: URL(fileURLWithPath: path)); return try body() }
    }
}

/// Puts the change's secrets into its error messages.
final class LeakyStore: TokenCacheStore, @unchecked Sendable {
    let inner: any TokenCacheStore
    init(_ inner: any TokenCacheStore) { self.inner = inner }
    var accessGroup: String { inner.accessGroup }
    func readAll() throws(MSALError) -> TokenCacheContents { try inner.readAll() }
    func changeStamp() throws(MSALError) -> UInt64 { try inner.changeStamp() }
    func apply(_ change: TokenCacheChange) throws(MSALError) {
        do { try inner.apply(change) } catch {
            let secrets = change.upserts.compactMap { if case .accessToken(let e) = $0 { e.secret } else { nil } }
            throw .internal(.cacheError, error.message + " while writing " + secrets.joined(separator: ", "))
        }
    }
}

/// Applies the removals on their own, without waiting for the lock, before the real change.
final class PartialStore: TokenCacheStore, @unchecked Sendable {
    let inner: any TokenCacheStore
    let path: String
    init(_ inner: any TokenCacheStore, path: String) { self.inner = inner; self.path = path }
    var accessGroup: String { inner.accessGroup }
    func readAll() throws(MSALError) -> TokenCacheContents { try inner.readAll() }
    func changeStamp() throws(MSALError) -> UInt64 { try inner.changeStamp() }
    func apply(_ change: TokenCacheChange) throws(MSALError) {
        if !change.removals.isEmpty, let data = try? Data(contentsOf: URL(fileURLWithPath: path)),
           var contents = try? TokenCacheContents(msalJSON: data) {
            contents.apply(TokenCacheChange(removals: change.removals))
            try? contents.msalJSON().write(to: URL(fileURLWithPath: path))
        }
        try inner.apply(change)
    }
}

/// Reports the access group it was given but forwards to a store of another group.
final class MislabeledStore: TokenCacheStore, @unchecked Sendable {
    let inner: any TokenCacheStore
    let accessGroup: String
    init(_ inner: any TokenCacheStore, group: String?) { self.inner = inner; accessGroup = group ?? TokenCacheAccessGroup.default }
    func readAll() throws(MSALError) -> TokenCacheContents { try inner.readAll() }
    func changeStamp() throws(MSALError) -> UInt64 { try inner.changeStamp() }
    func apply(_ change: TokenCacheChange) throws(MSALError) { try inner.apply(change) }
}

/// A JSON file store that reads, changes and replaces the file without taking the lock.
final class UnlockedFileStore: TokenCacheStore, @unchecked Sendable {
    let file: LockedFile
    let accessGroup: String
    init(path: String, group: String?) {
        file = try! LockedFile(path: path)
        accessGroup = group ?? TokenCacheAccessGroup.default
    }
    func readAll() throws(MSALError) -> TokenCacheContents { try AccessGroupPartitionedJSON(data: file.read()).contents(accessGroup: accessGroup) }
    func changeStamp() throws(MSALError) -> UInt64 { try file.contentStamp() }
    func apply(_ change: TokenCacheChange) throws(MSALError) {
        var document = try AccessGroupPartitionedJSON(data: file.read())
        var contents = try document.contents(accessGroup: accessGroup)
        contents.apply(change)
        document.replace(accessGroup: accessGroup, with: contents)
        try file.replace(with: document.serialized())
    }
}

/// Keeps ADAL keyed items beside its entries, but every MSAL write loses them.
final class KeyedItemDroppingStore: ADALKeyedItemStore, @unchecked Sendable {
    let accessGroup: String
    private let inner: InMemoryTokenCacheStore
    private let items = Mutex<[String: ADALKeyedItem]>([:])

    init(group: String?) {
        accessGroup = group ?? TokenCacheAccessGroup.default
        inner = InMemoryTokenCacheStore(accessGroup: accessGroup)
    }

    func readAll() throws(MSALError) -> TokenCacheContents { try inner.readAll() }
    func apply(_ change: TokenCacheChange) throws(MSALError) {
        try inner.apply(change)
        items.withLock { $0 = [:] }
    }
    func changeStamp() throws(MSALError) -> UInt64 { try inner.changeStamp() &+ UInt64(items.withLock { $0.count }) }
    func adalKeyedItems() throws(MSALError) -> [ADALKeyedItem] {
        items.withLock { $0.values.sorted { ($0.service, $0.account) < ($1.service, $1.account) } }
    }
    func setADALKeyedItem(_ item: ADALKeyedItem) throws(MSALError) { items.withLock { $0[item.service + "|" + item.account] = item } }
    func removeADALKeyedItem(service: String, account: String) throws(MSALError) { items.withLock { $0[service + "|" + account] = nil } }
}
