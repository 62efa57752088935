public import Foundation
public import MSALCache
internal import MSALCore
internal import Synchronization

/// One ``TokenCacheStore`` backend as ``TokenCacheStoreConformance`` sees it: how to make a store,
/// what its instances share, and optional hooks for the checks that provoke failures.
///
/// Every check runs in a fresh, private scratch directory that the suite removes afterwards, and
/// hands the harness a *location*: a path inside that directory that does not exist yet (unique per
/// check run). File-backed stores use it as their file path; a backend that stores elsewhere (a
/// keyring) derives a unique name from it and removes what it created in ``removeStore``.
public struct TokenCacheStoreHarness: Sendable {
    /// The backend's name, used in failure messages (e.g. `SQLite`).
    public var name: String
    /// Makes a store at `location` with `accessGroup`; `nil` means the backend's default group (the
    /// store's initializer called without a group).
    public var makeStore: @Sendable (_ location: String, _ accessGroup: String?) throws -> any TokenCacheStore
    /// Whether two stores made at one location share their entries (SQLite, file and keyring
    /// stores); `false` for stores whose instances are independent (in memory).
    public var instancesShareState: Bool
    /// Whether a store made at a location sees what an earlier store there wrote after that store is
    /// gone (persistent backends).
    public var isPersistent: Bool
    /// How to damage the stored bytes, for backends that have bytes a harness can reach.
    public var damage: Damage?
    /// How to hold the location's write lock from outside the store, for backends that have one.
    public var externalLock: ExternalLock?
    /// Removes what a check left at a location outside the scratch directory (keyring items);
    /// called after every check, also a failed one. `nil` when the scratch directory holds it all.
    public var removeStore: (@Sendable (_ location: String) throws -> Void)?

    /// Describes a backend; see the properties.
    public init(
        name: String,
        instancesShareState: Bool,
        isPersistent: Bool,
        damage: Damage? = nil,
        externalLock: ExternalLock? = nil,
        removeStore: (@Sendable (_ location: String) throws -> Void)? = nil,
        makeStore: @escaping @Sendable (_ location: String, _ accessGroup: String?) throws -> any TokenCacheStore
    ) {
        self.name = name
        self.instancesShareState = instancesShareState
        self.isPersistent = isPersistent
        self.damage = damage
        self.externalLock = externalLock
        self.removeStore = removeStore
        self.makeStore = makeStore
    }

    /// Damaging a store's bytes, and what the backend promises to do about it.
    public struct Damage: Sendable {
        /// What a store made after the damage does.
        public enum Response: Sendable {
            /// Making the store or using it (``TokenCacheStore/readAll()``, ``TokenCacheStore/apply(_:)``)
            /// throws `.internal(.cacheError)` without a secret in its message, and the damaged
            /// bytes stay exactly as they are (file stores, the encrypted file).
            case refused
            /// Making the store moves the damaged file aside and starts empty; `movedTo` returns the
            /// path of the file that now holds the damaged bytes, `nil` when the store moved nothing
            /// (SQLite's ``movedAsideCorruptFile``).
            case movedAside(movedTo: @Sendable (any TokenCacheStore) -> String?)
        }

        /// Damages the bytes stored at a location in place (e.g. truncates, or overwrites part of
        /// them). Called while no store of the location made by the check is alive.
        public var damageStoredBytes: @Sendable (_ location: String) throws -> Void
        /// The bytes stored at a location, to check that they are left unchanged.
        public var storedBytes: @Sendable (_ location: String) throws -> Data
        /// What the backend does with damaged bytes.
        public var response: Response

        /// Describes the damage; see the properties.
        public init(
            response: Response,
            storedBytes: @escaping @Sendable (_ location: String) throws -> Data,
            damageStoredBytes: @escaping @Sendable (_ location: String) throws -> Void
        ) {
            self.response = response
            self.storedBytes = storedBytes
            self.damageStoredBytes = damageStoredBytes
        }
    }

    /// Holding a location's write lock from outside the store under test (another connection, open
    /// file description or process), to check what a store does when it stays locked.
    public struct ExternalLock: Sendable {
        /// Makes a store (default access group) that waits at most a fraction of a second for the lock.
        public var makeImpatientStore: @Sendable (_ location: String) throws -> any TokenCacheStore
        /// Runs `body` while the lock of the location is held, and releases it afterwards.
        public var whileLocked: @Sendable (_ location: String, _ body: () throws -> Void) throws -> Void

        /// Describes the lock; see the properties.
        public init(
            makeImpatientStore: @escaping @Sendable (_ location: String) throws -> any TokenCacheStore,
            whileLocked: @escaping @Sendable (_ location: String, _ body: () throws -> Void) throws -> Void
        ) {
            self.makeImpatientStore = makeImpatientStore
            self.whileLocked = whileLocked
        }
    }
}

/// A conformance check that did not hold: what was expected, for which backend, and where in the
/// suite the expectation is.
public struct TokenCacheStoreConformanceFailure: Error, Sendable, CustomStringConvertible {
    /// The backend (``TokenCacheStoreHarness/name``).
    public var backend: String
    /// The check (``TokenCacheStoreConformance/Check/name``).
    public var check: String
    /// What was expected and what happened; never a token secret.
    public var message: String
    /// The file (`#fileID`) and line of the expectation that failed.
    public var fileID: String
    /// The line of the expectation that failed.
    public var line: Int

    /// `<fileID>:<line>: [<backend>] <check>: <message>`.
    public var description: String { "\(fileID):\(line): [\(backend)] \(check): \(message)" }
}

/// The contract of ``TokenCacheStore`` as executable checks, one suite for every backend.
///
/// It imports no test framework, so any test target (or a tool) can run it. A backend's test
/// target describes the backend with a ``TokenCacheStoreHarness`` and runs every check, recording
/// the ones that do not apply to that backend — visibly, never as a silent pass. With Swift
/// Testing:
///
/// ```swift
/// @Suite("TokenCacheStore contract: my backend")
/// struct MyStoreConformanceTests {
///     static let harness = TokenCacheStoreHarness(name: "my backend", instancesShareState: true, isPersistent: true) {
///         location, group in try MyTokenCacheStore(path: location, accessGroup: group ?? TokenCacheAccessGroup.default)
///     }
///
///     @Test(arguments: TokenCacheStoreConformance.checks)
///     func conformance(_ check: TokenCacheStoreConformance.Check) async throws {
///         if case .notApplicable(let reason) = try await check.run(on: Self.harness) {
///             Issue.record("Not applicable to \(Self.harness.name): \(reason)", severity: .warning)
///         }
///     }
/// }
/// ```
///
/// A failed check throws ``TokenCacheStoreConformanceFailure``. Add ``TokenCacheStoreHarness/damage``
/// and ``TokenCacheStoreHarness/externalLock`` when the backend can provide them; a check without its
/// hook reports ``Outcome/notApplicable(reason:)``.
public enum TokenCacheStoreConformance {
    /// What running a check on a backend found (a failure is thrown instead).
    public enum Outcome: Sendable, Equatable {
        /// Every expectation of the check held.
        case passed
        /// The check does not apply to the backend, for the reason given (e.g. its instances never
        /// share state); nothing was checked.
        case notApplicable(reason: String)
    }

    /// One named check of the contract.
    public struct Check: Sendable, CustomStringConvertible {
        /// What the check expects, as a sentence.
        public let name: String
        let body: @Sendable (Context) async throws -> Outcome

        /// ``name``.
        public var description: String { name }

        /// Runs the check on `harness` in a fresh scratch directory, which is removed afterwards
        /// (and ``TokenCacheStoreHarness/removeStore`` is called).
        /// - Returns: ``Outcome/passed``, or ``Outcome/notApplicable(reason:)`` when the backend
        ///   lacks what the check needs.
        /// - Throws: ``TokenCacheStoreConformanceFailure`` when an expectation does not hold or the
        ///   store throws where it should not (the message then quotes the error).
        public func run(on harness: TokenCacheStoreHarness) async throws -> Outcome {
            let scratch = try makeScratchDirectory()
            let context = Context(harness: harness, check: name, scratch: scratch, location: scratch + "/store")
            defer {
                try? harness.removeStore?(context.location)
                try? FileManager.default.removeItem(atPath: scratch)
            }
            do {
                return try await body(context)
            } catch var failure as TokenCacheStoreConformanceFailure {
                failure.backend = harness.name
                failure.check = name
                throw failure
            } catch {
                throw TokenCacheStoreConformanceFailure(
                    backend: harness.name, check: name, message: "threw unexpectedly: \(error)", fileID: #fileID, line: #line)
            }
        }
    }

    /// Every check, in a stable order.
    public static let checks: [Check] = [
        Check(name: "apply removes first, then upserts; the upsert wins; the last writer wins per key; a missing removal is ignored", body: applySemantics),
        Check(name: "every entry kind round-trips with its unknown fields", body: entryKindsRoundTrip),
        Check(name: "an empty change stores nothing and keeps the change stamp", body: emptyChange),
        Check(name: "changeStamp stays put without commits, moves after each commit, and applyReportingStamps brackets the change", body: ownStamps),
        Check(name: "changeStamp moves after a commit by another instance", body: otherInstanceStamps),
        Check(name: "concurrent writers on one instance lose nothing", body: concurrentWritersOneInstance),
        Check(name: "concurrent writers on two instances lose nothing", body: concurrentWritersTwoInstances),
        Check(name: "readers never see half of a change", body: readersSeeWholeChanges),
        Check(name: "stores of different access groups at one location see nothing of each other's entries", body: accessGroupsPartitioned),
        Check(name: "stores of the same access group at one location share their entries", body: sameAccessGroupShares),
        Check(name: "the default access group is TokenCacheAccessGroup.default", body: defaultAccessGroup),
        Check(name: "a store made again at a location sees what an earlier one wrote there", body: reopenSeesWrites),
        Check(name: "a location that does not exist yet is an empty cache, created by the first change", body: newLocation),
        Check(name: "damaged stored bytes give a cache error without secrets and stay as they are (or are moved aside)", body: damagedBytes),
        Check(name: "a store locked beyond its timeout fails with a cache error, stores nothing of the change, and works once released", body: lockedBeyondTimeout),
        Check(name: "ADAL keyed items are set, replaced and removed by key, kept apart from MSAL entries and access groups, and shared and persisted like entries", body: adalKeyedItems),
    ]

    // MARK: Checks

    @Sendable static func applySemantics(_ context: Context) async throws -> Outcome {
        let store = try context.make()
        try expectEqual(try store.readAll(), TokenCacheContents(), "a new store's contents")
        let a = ConformanceSample.accessToken(home: "a.t", secret: "AT-a")
        let b = ConformanceSample.accessToken(home: "b.t", secret: "AT-b")
        try store.apply(TokenCacheChange(upserts: [.accessToken(a), .accessToken(b), .account(ConformanceSample.account(home: "a.t"))]))
        var contents = try store.readAll()
        try expectEqual(contents.accessTokens, [a.key: a, b.key: b], "access tokens after the first change")
        try expectEqual(contents.accounts.count, 1, "number of accounts after the first change")

        // Removal and upsert of one key in one change: the upsert wins; a missing removal is ignored.
        var a2 = a
        a2.secret = "AT-a2"
        try store.apply(TokenCacheChange(
            upserts: [.accessToken(a2)],
            removals: [CacheEntryRemoval(.accessToken(a)), CacheEntryRemoval(.accessToken(b)), CacheEntryRemoval(kind: .idToken, key: "missing")]))
        contents = try store.readAll()
        try expectEqual(contents.accessTokens, [a.key: a2], "access tokens after removing a and b and upserting a again")
        try expectEqual(contents.accounts.count, 1, "number of accounts after a change that did not touch them")

        // Last writer wins per key.
        var a3 = a
        a3.secret = "AT-a3"
        try store.apply(TokenCacheChange(upserts: [.accessToken(a3)]))
        try expect(try store.readAll().accessTokens[a.key]?.secret == "AT-a3", "the last upsert of a key did not win")
        return .passed
    }

    @Sendable static func entryKindsRoundTrip(_ context: Context) async throws -> Outcome {
        let store = try context.make()
        let entries = ConformanceSample.everyKind(home: "h.t", secret: "RT")
        try store.apply(TokenCacheChange(upserts: entries))
        let contents = try store.readAll()
        for entry in entries {
            try expect(contents.entry(kind: entry.kind, key: entry.key) == entry, "the \(entry.kind.rawValue) entry \(entry.key) did not round-trip unchanged")
        }
        try expectEqual(contents.count, entries.count, "number of entries")
        if context.harness.instancesShareState {
            let other = try context.make().readAll()
            for entry in entries {
                try expect(other.entry(kind: entry.kind, key: entry.key) == entry, "another instance read the \(entry.kind.rawValue) entry \(entry.key) differently")
            }
        }
        return .passed
    }

    @Sendable static func emptyChange(_ context: Context) async throws -> Outcome {
        let store = try context.make()
        try store.apply(TokenCacheChange(upserts: [.accessToken(ConformanceSample.accessToken(home: "h.t", secret: "AT"))]))
        let contents = try store.readAll()
        let stamp = try store.changeStamp()
        let stamps = try store.applyReportingStamps(TokenCacheChange())
        try expectEqual(stamps, AppliedChangeStamps(before: stamp, after: stamp), "stamps reported around an empty change")
        try store.apply(TokenCacheChange())
        try expectEqual(try store.changeStamp(), stamp, "changeStamp after two empty changes")
        try expectEqual(try store.readAll(), contents, "contents after two empty changes")
        return .passed
    }

    @Sendable static func ownStamps(_ context: Context) async throws -> Outcome {
        let store = try context.make()
        let s0 = try store.changeStamp()
        try expectEqual(try store.changeStamp(), s0, "changeStamp read twice without a commit")
        let a = ConformanceSample.accessToken(home: "a.t", secret: "AT")
        let stamps = try store.applyReportingStamps(TokenCacheChange(upserts: [.accessToken(a)]))
        try expectEqual(stamps.before, s0, "the stamp reported before the first change")
        try expect(stamps.after != s0, "the stamp reported after the first change equals the one before")
        try expectEqual(try store.changeStamp(), stamps.after, "changeStamp after the first change")
        var previous = stamps.after
        let changes = [
            TokenCacheChange(upserts: [.account(ConformanceSample.account(home: "a.t"))]),
            TokenCacheChange(removals: [CacheEntryRemoval(.accessToken(a))]),
        ]
        for (index, change) in changes.enumerated() {
            let reported = try store.applyReportingStamps(change)
            try expectEqual(reported.before, previous, "the stamp reported before change \(index + 2)")
            try expect(reported.after != previous, "changeStamp did not move with change \(index + 2)")
            try expectEqual(try store.changeStamp(), reported.after, "changeStamp after change \(index + 2)")
            previous = reported.after
        }
        return .passed
    }

    @Sendable static func otherInstanceStamps(_ context: Context) async throws -> Outcome {
        guard context.harness.instancesShareState else { return .notApplicable(reason: notShared) }
        let store = try context.make()
        let other = try context.make()
        var previous = try store.changeStamp()
        for index in 0..<3 {
            try other.apply(TokenCacheChange(upserts: [.account(ConformanceSample.account(home: "o\(index).t"))]))
            let stamp = try store.changeStamp()
            try expect(stamp != previous, "changeStamp did not move after commit \(index + 1) of another instance")
            // The other instance's commit is part of the state this store's next change starts from.
            let reported = try store.applyReportingStamps(TokenCacheChange(upserts: [.account(ConformanceSample.account(home: "s\(index).t"))]))
            try expectEqual(reported.before, stamp, "the stamp reported before a change that followed another instance's commit")
            try expect(reported.after != reported.before, "the stamp did not move with this instance's change")
            previous = reported.after
        }
        try expectEqual(try store.readAll().accounts.count, 6, "accounts written by both instances")
        return .passed
    }

    @Sendable static func concurrentWritersOneInstance(_ context: Context) async throws -> Outcome {
        let store = try context.make()
        let workers = 6, perWorker = 40
        try await onThreads(workers) { worker in
            for index in 0..<perWorker {
                try store.apply(TokenCacheChange(upserts: [.accessToken(ConformanceSample.accessToken(home: "w\(worker)-\(index).t", secret: "AT-\(worker)-\(index)"))]))
            }
        }
        try expectAllWritten(try store.readAll(), workers: workers, perWorker: perWorker, "the store")
        return .passed
    }

    @Sendable static func concurrentWritersTwoInstances(_ context: Context) async throws -> Outcome {
        guard context.harness.instancesShareState else { return .notApplicable(reason: notShared) }
        let stores = [try context.make(), try context.make()]
        let workers = 4, perWorker = 30
        try await onThreads(workers) { worker in
            for index in 0..<perWorker {
                let entry = CacheEntry.accessToken(ConformanceSample.accessToken(home: "w\(worker)-\(index).t", secret: "AT-\(worker)-\(index)"))
                try stores[(worker + index) % 2].apply(TokenCacheChange(upserts: [entry]))
            }
        }
        try expectAllWritten(try stores[0].readAll(), workers: workers, perWorker: perWorker, "the first instance")
        try expectAllWritten(try stores[1].readAll(), workers: workers, perWorker: perWorker, "the second instance")
        return .passed
    }

    @Sendable static func readersSeeWholeChanges(_ context: Context) async throws -> Outcome {
        let writer = try context.make()
        // With shared state the reader is another instance (another connection or file handle).
        let reader = context.harness.instancesShareState ? try context.make() : writer
        let batches = 60, batchSize = 10
        @Sendable func batch(_ number: Int) -> [CacheEntry] {
            (0..<batchSize).map { .accessToken(ConformanceSample.accessToken(home: "b\(number)-\($0).t", secret: "AT")) }
        }
        let readerStarted = ConformanceFlag(), finished = ConformanceFlag()
        let observations = ConformanceLocked<(reads: Int, torn: String?)>((0, nil))
        try await onThreads(2) { role in
            if role == 0 {
                defer { finished.set() }
                while !readerStarted.isSet { usleep(100) }
                for number in 0..<batches {
                    let removals = number == 0 ? [] : batch(number - 1).map(CacheEntryRemoval.init)
                    try writer.apply(TokenCacheChange(upserts: batch(number), removals: removals))
                }
            } else {
                defer { readerStarted.set() }  // also when the first read throws
                repeat {
                    let tokens = try reader.readAll().accessTokens.values
                    let batchesSeen = Set(tokens.map { $0.homeAccountID.prefix(while: { $0 != "-" }) })
                    observations.withLock { state in
                        state.reads += 1
                        if state.torn == nil && !(tokens.isEmpty || (tokens.count == batchSize && batchesSeen.count == 1)) {
                            state.torn = "\(tokens.count) access tokens from batches \(batchesSeen.sorted())"
                        }
                    }
                    readerStarted.set()
                } while !finished.isSet
            }
        }
        let (reads, torn) = observations.withLock { $0 }
        try expect(reads > 0, "the reader never read")
        try expect(torn == nil, "a reader saw part of a change: \(torn ?? "")")
        let final = try reader.readAll().accessTokens
        try expectEqual(Set(final.keys), Set(batch(batches - 1).map(\.key)), "keys after the last change")
        return .passed
    }

    @Sendable static func accessGroupsPartitioned(_ context: Context) async throws -> Outcome {
        guard context.harness.instancesShareState else { return .notApplicable(reason: notShared + " (different groups are separate instances)") }
        let one = try context.make(group: "com.example.one")
        let two = try context.make(group: "com.example.two")
        let byDefault = try context.make()
        try expectEqual(one.accessGroup, "com.example.one", "the first store's accessGroup")
        try expectEqual(two.accessGroup, "com.example.two", "the second store's accessGroup")
        // The same keys in both groups, with different secrets, and entries only one group has.
        let atOne = ConformanceSample.accessToken(home: "a.t", secret: "AT-one")
        let atTwo = ConformanceSample.accessToken(home: "a.t", secret: "AT-two")
        try one.apply(TokenCacheChange(upserts: [.accessToken(atOne), .account(ConformanceSample.account(home: "a.t"))]))
        try two.apply(TokenCacheChange(upserts: [.accessToken(atTwo), .account(ConformanceSample.account(home: "b.t"))]))
        for (store, label) in [(one, "first"), (try context.make(group: "com.example.one"), "new first")] {
            let contents = try store.readAll()
            try expectEqual(contents.accessTokens, [atOne.key: atOne], "access tokens of the \(label) group store")
            try expectEqual(Set(contents.accounts.values.map(\.homeAccountID)), ["a.t"], "accounts of the \(label) group store")
        }
        for (store, label) in [(two, "second"), (try context.make(group: "com.example.two"), "new second")] {
            let contents = try store.readAll()
            try expectEqual(contents.accessTokens, [atTwo.key: atTwo], "access tokens of the \(label) group store")
            try expectEqual(Set(contents.accounts.values.map(\.homeAccountID)), ["b.t"], "accounts of the \(label) group store")
        }
        try expectEqual(try byDefault.readAll(), TokenCacheContents(), "contents of the default group, which nobody wrote")
        // Removing a key in one group leaves the other group's entry of that key.
        try two.apply(TokenCacheChange(removals: [CacheEntryRemoval(.accessToken(atTwo)), CacheEntryRemoval(.account(ConformanceSample.account(home: "b.t")))]))
        try expectEqual(try two.readAll().count, 0, "entries of the second group after removing them")
        let first = try one.readAll()
        try expectEqual(first.accessTokens, [atOne.key: atOne], "the first group's access tokens after the second group removed the same key")
        try expectEqual(first.accounts.count, 1, "the first group's accounts after the second group removed its own")
        return .passed
    }

    @Sendable static func sameAccessGroupShares(_ context: Context) async throws -> Outcome {
        guard context.harness.instancesShareState else { return .notApplicable(reason: notShared) }
        let group = "com.example.shared"
        let first = try context.make(group: group)
        let second = try context.make(group: group)
        let token = ConformanceSample.accessToken(home: "a.t", secret: "AT-shared")
        try first.apply(TokenCacheChange(upserts: [.accessToken(token)]))
        try expectEqual(try second.readAll().accessTokens, [token.key: token], "what another store of the group reads")
        try second.apply(TokenCacheChange(removals: [CacheEntryRemoval(.accessToken(token))]))
        try expectEqual(try first.readAll().count, 0, "entries after another store of the group removed the only one")
        return .passed
    }

    @Sendable static func defaultAccessGroup(_ context: Context) async throws -> Outcome {
        let byDefault = try context.make()
        try expectEqual(byDefault.accessGroup, TokenCacheAccessGroup.default, "the accessGroup of a store made without a group")
        try expectEqual(try context.make(group: "com.example.other").accessGroup, "com.example.other", "the accessGroup of a store made with a group")
        guard context.harness.instancesShareState else { return .passed }
        let token = ConformanceSample.accessToken(home: "a.t", secret: "AT-default")
        try byDefault.apply(TokenCacheChange(upserts: [.accessToken(token)]))
        try expectEqual(try context.make(group: TokenCacheAccessGroup.default).readAll().accessTokens, [token.key: token],
                        "what a store made with TokenCacheAccessGroup.default reads")
        try expectEqual(try context.make(group: "com.example.other").readAll().count, 0, "entries another group reads")
        return .passed
    }

    @Sendable static func reopenSeesWrites(_ context: Context) async throws -> Outcome {
        guard context.harness.isPersistent else { return .notApplicable(reason: "the backend is not persistent: a new store starts empty") }
        let written: TokenCacheContents
        do {
            let store = try context.make()
            try store.apply(TokenCacheChange(upserts: ConformanceSample.everyKind(home: "h.t", secret: "RT")))
            written = try store.readAll()
        }
        try expectEqual(try context.make().readAll(), written, "what a store made again at the location reads")
        return .passed
    }

    @Sendable static func newLocation(_ context: Context) async throws -> Outcome {
        let location = context.scratch + "/not/yet/there/store"
        let store = try context.harness.makeStore(location, nil)
        try expectEqual(try store.readAll(), TokenCacheContents(), "contents at a location that did not exist")
        let token = ConformanceSample.accessToken(home: "a.t", secret: "AT")
        try store.apply(TokenCacheChange(upserts: [.accessToken(token)]))
        try expectEqual(try store.readAll().accessTokens, [token.key: token], "access tokens after the first change")
        if context.harness.isPersistent {
            try expectEqual(try context.harness.makeStore(location, nil).readAll().accessTokens, [token.key: token],
                            "what a store made again at the new location reads")
        }
        try? context.harness.removeStore?(location)
        return .passed
    }

    @Sendable static func damagedBytes(_ context: Context) async throws -> Outcome {
        guard let damage = context.harness.damage else { return .notApplicable(reason: "the harness has no way to damage the stored bytes") }
        let secrets = ["RT-\(UUID().uuidString)", "AT-\(UUID().uuidString)"]
        do {
            let store = try context.make()
            try store.apply(TokenCacheChange(upserts: [
                .refreshToken(RefreshTokenEntry(homeAccountID: "h.t", environment: ConformanceSample.environment,
                                                clientID: ConformanceSample.clientID, secret: secrets[0])),
                .accessToken(ConformanceSample.accessToken(home: "h.t", secret: secrets[1])),
            ]))
        }
        try damage.damageStoredBytes(context.location)
        let damaged = try damage.storedBytes(context.location)
        let newSecret = "AT-new-\(UUID().uuidString)"
        let change = TokenCacheChange(upserts: [.accessToken(ConformanceSample.accessToken(home: "n.t", secret: newSecret))])
        switch damage.response {
        case .refused:
            var store: (any TokenCacheStore)?
            do {
                store = try context.make()
            } catch {
                try expectCacheError(error, without: secrets + [newSecret], "making a store on damaged bytes")
            }
            if let store {
                try expectCacheError(without: secrets + [newSecret], "readAll on damaged bytes") { _ = try store.readAll() }
                try expectCacheError(without: secrets + [newSecret], "apply on damaged bytes") { try store.apply(change) }
            }
            try expect(try damage.storedBytes(context.location) == damaged, "the damaged bytes were changed")
        case .movedAside(let movedTo):
            let store = try context.make()
            guard let aside = movedTo(store) else { throw failure("the store did not move the damaged file aside") }
            try expect(FileManager.default.contents(atPath: aside) == damaged, "the file moved aside to \(aside) does not hold the damaged bytes")
            try expectEqual(try store.readAll(), TokenCacheContents(), "contents of the store that replaced the damaged file")
            try store.apply(change)
            let again = try context.make()
            try expect(movedTo(again) == nil, "a second store moved the new file aside too")
            try expectEqual(try again.readAll().accessTokens.count, 1, "access tokens of the new file")
        }
        return .passed
    }

    @Sendable static func adalKeyedItems(_ context: Context) async throws -> Outcome {
        guard let store = try context.make() as? any ADALKeyedItemStore else {
            return .notApplicable(reason: "the store keeps no ADAL keyed items (it is not an ADALKeyedItemStore)")
        }
        func sorted(_ items: [ADALKeyedItem]) -> [ADALKeyedItem] { items.sorted { ($0.service, $0.account) < ($1.service, $1.account) } }
        try expectEqual(try store.adalKeyedItems(), [], "a new store's keyed items")
        let a = ADALKeyedItem(
            authority: "https://login.microsoftonline.com/contoso.com", resource: "https://graph.windows.net/", clientID: "client-a",
            userID: "Alice@Contoso.com", value: Data("archive-a".utf8))
        let b = ADALKeyedItem(
            authority: "https://login.microsoftonline.com/contoso.com", resource: nil, clientID: "client-a",
            userID: "alice@contoso.com", value: Data((0...255).map { UInt8($0) }))
        let stamp = try store.changeStamp()
        try store.setADALKeyedItem(a)
        try store.setADALKeyedItem(b)
        try expect(try store.changeStamp() != stamp, "setting keyed items did not move the change stamp")
        try expectEqual(try store.adalKeyedItems(), sorted([a, b]), "the keyed items after setting two")

        // MSAL writes neither see nor drop them.
        let entries = ConformanceSample.everyKind(home: "k.t", secret: "RT-k")
        try store.apply(TokenCacheChange(upserts: entries))
        try expectEqual(try store.readAll().count, entries.count, "number of MSAL entries beside two keyed items")
        try store.apply(TokenCacheChange(removals: entries.map(CacheEntryRemoval.init)))
        try expectEqual(try store.adalKeyedItems(), sorted([a, b]), "the keyed items after MSAL wrote and removed entries")

        // Replace and remove by (service, account); a missing item is no error.
        var a2 = a
        a2.value = Data([0, 255, 1, 2])
        try store.setADALKeyedItem(a2)
        try expectEqual(try store.adalKeyedItems(), sorted([a2, b]), "the keyed items after replacing one")
        try store.removeADALKeyedItem(service: b.service, account: b.account)
        try store.removeADALKeyedItem(service: b.service, account: "bm8tb25l")
        try expectEqual(try store.adalKeyedItems(), [a2], "the keyed items after removing one")

        guard context.harness.instancesShareState else { return .passed }
        guard let other = try context.make() as? any ADALKeyedItemStore,
              let otherGroup = try context.make(group: "com.example.keyed-other") as? any ADALKeyedItemStore
        else { throw failure("another store of the backend is not an ADALKeyedItemStore") }
        try expectEqual(try other.adalKeyedItems(), [a2], "another instance's keyed items")
        try expectEqual(try otherGroup.adalKeyedItems(), [], "another access group's keyed items")
        try otherGroup.setADALKeyedItem(b)
        try expectEqual(try store.adalKeyedItems(), [a2], "the keyed items after another access group set one")
        if context.harness.isPersistent {
            guard let again = try context.make() as? any ADALKeyedItemStore else { throw failure("a store made again is not an ADALKeyedItemStore") }
            try expectEqual(try again.adalKeyedItems(), [a2], "the keyed items seen by a store made again")
        }
        return .passed
    }

    @Sendable static func lockedBeyondTimeout(_ context: Context) async throws -> Outcome {
        guard let lock = context.harness.externalLock else { return .notApplicable(reason: "the harness has no way to hold the store's lock from outside") }
        let store = try context.make()
        let kept = ConformanceSample.accessToken(home: "k.t", secret: "AT-kept")
        try store.apply(TokenCacheChange(upserts: [.accessToken(kept)]))
        let impatient = try lock.makeImpatientStore(context.location)
        let secret = "AT-locked-\(UUID().uuidString)"
        let change = TokenCacheChange(upserts: [
            .accessToken(ConformanceSample.accessToken(home: "l.t", secret: secret)),
            .account(ConformanceSample.account(home: "l.t")),
        ], removals: [CacheEntryRemoval(.accessToken(kept))])
        try lock.whileLocked(context.location) {
            let error = try expectCacheError(without: [secret], "apply while the store is locked") { try impatient.apply(change) }
            try expect(error.message.lowercased().contains("lock"), "the error does not say the store is locked: \(error.message)")
        }
        try expectEqual(try store.readAll().accessTokens, [kept.key: kept], "access tokens after the failed change (nothing of it may be stored)")
        try expectEqual(try store.readAll().accounts.count, 0, "accounts after the failed change")
        try impatient.apply(change)
        let contents = try store.readAll()
        try expect(contents.accessTokens.count == 1 && contents.accessTokens.values.first?.secret == secret && contents.accounts.count == 1,
                   "the change applied after the lock was released is not stored whole")
        return .passed
    }

    // MARK: Helpers

    static let notShared = "the backend's instances never share state"

    /// What a check gets: the harness, its scratch directory and the location for stores.
    struct Context: Sendable {
        let harness: TokenCacheStoreHarness
        let check: String
        /// The check's private scratch directory.
        let scratch: String
        /// `<scratch>/store`.
        let location: String

        /// A store at ``location``.
        func make(group: String? = nil) throws -> any TokenCacheStore {
            try harness.makeStore(location, group)
        }
    }

    static func failure(_ message: String, fileID: String = #fileID, line: Int = #line) -> TokenCacheStoreConformanceFailure {
        TokenCacheStoreConformanceFailure(backend: "", check: "", message: message, fileID: fileID, line: line)
    }

    static func expect(_ condition: Bool, _ message: @autoclosure () -> String, fileID: String = #fileID, line: Int = #line) throws {
        guard condition else { throw failure(message(), fileID: fileID, line: line) }
    }

    static func expectEqual<T: Equatable>(_ actual: T, _ expected: T, _ what: String, fileID: String = #fileID, line: Int = #line) throws {
        guard actual == expected else {
            throw failure("\(what): expected \(expected), got \(actual)", fileID: fileID, line: line)
        }
    }

    /// Checks that `body` throws an `.internal(.cacheError)` whose message contains none of `secrets`.
    /// - Returns: the error.
    @discardableResult
    static func expectCacheError(
        without secrets: [String], _ what: String, fileID: String = #fileID, line: Int = #line, _ body: () throws -> Void
    ) throws -> MSALError {
        do {
            try body()
        } catch {
            return try expectCacheError(error, without: secrets, what, fileID: fileID, line: line)
        }
        throw failure("\(what) did not throw", fileID: fileID, line: line)
    }

    @discardableResult
    static func expectCacheError(
        _ error: any Error, without secrets: [String], _ what: String, fileID: String = #fileID, line: Int = #line
    ) throws -> MSALError {
        guard let error = error as? MSALError, error.code == .internal, error.internalCode == .cacheError else {
            throw failure("\(what) threw \(error), not .internal(.cacheError)", fileID: fileID, line: line)
        }
        try expect(!error.message.isEmpty, "\(what): the error has no message", fileID: fileID, line: line)
        for secret in secrets where error.message.contains(secret) || String(describing: error).contains(secret) {
            throw failure("\(what): the error message contains a token secret", fileID: fileID, line: line)
        }
        return error
    }

    /// Checks that every access token `w<worker>-<index>.t` written by the concurrency checks is there.
    static func expectAllWritten(_ contents: TokenCacheContents, workers: Int, perWorker: Int, _ reader: String,
                                 fileID: String = #fileID, line: Int = #line) throws {
        let homes = Set(contents.accessTokens.values.map(\.homeAccountID))
        let expected = Set((0..<workers).flatMap { worker in (0..<perWorker).map { "w\(worker)-\($0).t" } })
        let missing = expected.subtracting(homes)
        try expect(missing.isEmpty && homes.count == expected.count,
                   "\(reader) holds \(homes.count) access tokens; \(missing.count) of the \(expected.count) written are missing (e.g. \(missing.sorted().prefix(3)))",
                   fileID: fileID, line: line)
    }

    /// Runs `body(0..<count)` on `count` threads of their own (blocking store calls and spinning
    /// readers must not occupy the concurrency pool) and waits for all.
    /// - Throws: the first error a thread threw.
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) async throws {
        let errors = ConformanceErrors()
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                do { try body(index) } catch { errors.append(error) }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            group.notify(queue: .global()) { continuation.resume() }
        }
        if let error = errors.first { throw error }
    }
}

/// Entries for the conformance checks, and for other cache tests that need a few plausible entries.
public enum ConformanceSample {
    /// The entries' environment: `login.microsoftonline.com`.
    public static let environment = "login.microsoftonline.com"
    /// The entries' client ID.
    public static let clientID = "c11e0000-0000-4000-8000-000000000001"
    /// The entries' tenant (realm).
    public static let tenant = "aaaaaaaa-0000-4000-8000-00000000aaaa"
    /// When the entries were cached: 2023-11-14T22:13:20Z.
    public static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    /// An access token for `User.Read` of `home`, cached at ``t0``, expiring an hour later.
    public static func accessToken(home: String, secret: String) -> AccessTokenEntry {
        AccessTokenEntry(
            homeAccountID: home, environment: environment, clientID: clientID, realm: tenant, target: "User.Read",
            secret: secret, cachedAt: t0, expiresOn: t0.addingTimeInterval(3600))
    }

    static func account(home: String) -> AccountEntry {
        AccountEntry(homeAccountID: home, environment: environment, realm: tenant, localAccountID: home, username: "\(home)@example")
    }

    /// One entry of each kind, with optional fields and fields this version does not model.
    static func everyKind(home: String, secret: String) -> [CacheEntry] {
        var at = accessToken(home: home, secret: "AT-\(secret)")
        at.extendedExpiresOn = t0.addingTimeInterval(7200)
        at.refreshOn = t0.addingTimeInterval(1800)
        at.additionalFields = ["future": .object(["nested": .array([.bool(true), .null, .number(1.5)])])]
        return [
            .accessToken(at),
            .refreshToken(RefreshTokenEntry(homeAccountID: home, environment: environment, clientID: clientID, familyID: "1",
                                            secret: secret, target: "a b", additionalFields: ["last_modification_time": .string("1700000000")])),
            .idToken(IDTokenEntry(homeAccountID: home, environment: environment, clientID: clientID, realm: "r", secret: "ID-\(secret)")),
            .account(AccountEntry(homeAccountID: home, environment: environment, realm: "r", localAccountID: "l", username: "u",
                                  authorityType: "Other", accountSource: "device_code", name: "N", givenName: "G", familyName: "F",
                                  additionalFields: ["client_info": .string("abc")])),
            .appMetadata(AppMetadataEntry(clientID: clientID, environment: environment, familyID: "1", additionalFields: ["future": .number(2)])),
        ]
    }
}

/// A flag set once from another thread.
final class ConformanceFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// A value shared between threads under a lock.
final class ConformanceLocked<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<T>(_ body: (inout Value) -> T) -> T { value.withLock { body(&$0) } }
}

/// Errors collected from several threads.
final class ConformanceErrors: Sendable {
    private let errors = Mutex<[any Error]>([])
    func append(_ error: any Error) { errors.withLock { $0.append(error) } }
    var first: (any Error)? { errors.withLock { $0.first } }
}

/// Creates a fresh private directory (mode 0700) under the system's temporary directory.
/// - Returns: its path.
func makeScratchDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("msal-conformance-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    return path
}
