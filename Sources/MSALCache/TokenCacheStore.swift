public import MSALCore
internal import Synchronization

/// Where a token cache lives: the persistence contract every backend (in memory, SQLite, JSON file,
/// encrypted file, Secret Service keyring) implements, and the only thing ``TokenCache`` needs from one.
///
/// A store is opened at a *location* (a file, a keyring collection) for one access group. An
/// implementation guarantees:
///
/// - **Atomic per change.** Each ``apply(_:)`` (and ``applyReportingStamps(_:)``) is all or nothing:
///   when it returns, every removal and upsert of the change is stored; when it throws, none is.
///   Within a change removals come first, then upserts, each under its own ``CacheEntry/key``, so an
///   upsert of a key the change also removes wins; removing a key that is not stored is no error.
///   No call leaves a partial write behind — not a failed call, not a process killed mid-way: the
///   next reader finds the state before the change or the state after it.
/// - **An empty change changes nothing.** A change without upserts and removals
///   (``TokenCacheChange/isEmpty``) stores nothing and leaves ``changeStamp()`` as it is.
/// - **Readers.** ``readAll()``, in this or another process, returns one committed state: the store
///   before or after any change, never in between.
/// - **Concurrent writers, also in other processes.** Changes from every thread, instance and process
///   sharing a location are serialized: a writer that finds another one committing waits for it (up
///   to the backend's lock or busy timeout) and then applies its change to the state that writer
///   left, so nothing is lost. When two changes touch the same key, the later one wins for that key;
///   entries neither touched keep their values.
/// - **Change detection.** ``changeStamp()`` returns another value after any commit of a non-empty
///   change at the location,
///   by this instance or by any other thread, instance or process, so a cache layer can tell cheaply
///   that it must reload. Values are compared for equality only.
/// - **Access groups.** A store reads and writes the entries of its ``accessGroup`` only. Stores of
///   different groups at one location never see, change or remove each other's entries, even when
///   they use the same keys; stores of the same group at one location share them. A store made
///   without a group uses ``TokenCacheAccessGroup/default``.
/// - **Missing locations.** A location that does not exist yet is an empty cache: reading it returns
///   no entries, and the backend creates it at the latest with the first change (file backends create
///   missing directories with mode 0700 and files with mode 0600).
/// - **Errors.** Every method throws only ``MSALError`` `.internal` errors whose message says what
///   happened and what to do, and never contains a secret (token, key, passphrase):
///   - `.cacheError` when the location cannot be created or used (a path component is not a
///     directory, no permission, disk full); when it stays locked by another writer beyond the
///     backend's timeout (then nothing of the change is stored; the message says so); when the
///     stored data is corrupt or was tampered with, cannot be decrypted, or is not a cache of this
///     library (another program's file, a newer swift-msal's format). Such data is never
///     overwritten: the store leaves its bytes as they are — or, a backend that documents it (SQLite)
///     moves a damaged file aside when opening it, keeps its bytes under another name, reports that
///     and starts empty.
///   - `.cacheUnavailable` when the backend cannot be used on this machine at all (no D-Bus session or
///     Secret Service provider, a keyring that stays locked); an app may fall back to another store.
///   Access-group names are checked when a store is made: `.invalidParameter` (see
///   ``TokenCacheAccessGroup/validate(_:)``).
/// - **Thread safety.** A store may be called from any thread concurrently.
///
/// Every backend runs the same executable form of this contract, the conformance suite in
/// `MSALTestSupport` (`TokenCacheStoreConformance`).
///
/// Source: the contract of MSAL's token cache serialization callbacks (MSAL Python
/// `SerializableTokenCache`, msal-extensions' cross-process lock), and MSAL for iOS/macOS keychain
/// access groups, made explicit.
public protocol TokenCacheStore: Sendable {
    /// The access group whose entries this store reads and writes (see ``TokenCacheAccessGroup``):
    /// the group it was made with, ``TokenCacheAccessGroup/default`` unless told otherwise. Every
    /// backend is partitioned by group: a store never reads or writes another group's entries, even
    /// when both live in one file or one keyring.
    var accessGroup: String { get }

    /// Reads every entry of the store's access group.
    /// - Returns: the contents as of one committed state; empty when the location does not exist yet.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read (locked beyond
    ///   the timeout, corrupt, not a cache of this library); `.internal(.cacheUnavailable)` when the
    ///   backend cannot be used on this machine.
    func readAll() throws(MSALError) -> TokenCacheContents

    /// Applies one change atomically (see the protocol's guarantees): removals first, then upserts.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the change could not be stored (locked
    ///   beyond the timeout, corrupt or foreign data, not writable); `.internal(.cacheUnavailable)`
    ///   when the backend cannot be used on this machine. Then nothing of the change was stored.
    func apply(_ change: TokenCacheChange) throws(MSALError)

    /// A cheap value that changes whenever any thread, instance or process commits a non-empty change
    /// at the store's location (SQLite: `PRAGMA data_version` plus this connection's own write
    /// counter). Compare for equality only.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be reached;
    ///   `.internal(.cacheUnavailable)` when the backend cannot be used on this machine.
    func changeStamp() throws(MSALError) -> UInt64

    /// Applies one change atomically and reports the ``changeStamp()`` just before and just after it,
    /// both read while the change held the store's write lock.
    ///
    /// ``TokenCache`` uses it to update its in-memory copy without reloading: when `before` equals the
    /// stamp it loaded, nobody else changed the store in between. The default implementation reads
    /// the stamps around ``apply(_:)`` without holding a lock, so another process's commit at that
    /// moment may go unnoticed until the next change; backends should implement it.
    /// - Returns: the stamps before and after the change; equal for an empty change.
    /// - Throws: as ``apply(_:)``.
    func applyReportingStamps(_ change: TokenCacheChange) throws(MSALError) -> AppliedChangeStamps
}

/// The ``TokenCacheStore/changeStamp()`` values around one applied change.
public struct AppliedChangeStamps: Sendable, Hashable {
    /// The stamp of the state the change was applied to.
    public var before: UInt64
    /// The stamp of the state the change produced.
    public var after: UInt64

    /// Creates the pair.
    public init(before: UInt64, after: UInt64) {
        self.before = before
        self.after = after
    }
}

extension TokenCacheStore {
    /// Reads the stamps around ``apply(_:)`` (not atomically; see the requirement).
    public func applyReportingStamps(_ change: TokenCacheChange) throws(MSALError) -> AppliedChangeStamps {
        let before = try changeStamp()
        try apply(change)
        return AppliedChangeStamps(before: before, after: try changeStamp())
    }
}

/// A token cache store that lives only as long as the process: for tests, and for apps that do not
/// want tokens on disk. Every change is atomic under a lock; ``changeStamp()`` counts non-empty
/// changes. Each instance is its own location: two instances never share entries. A ``TokenCache``
/// over it keeps no second copy of the entries: its index and the store share one.
public final class InMemoryTokenCacheStore: TokenCacheStore {
    /// The access group this store stands for. An in-memory store is one process's only, so the group
    /// names it and nothing else.
    public let accessGroup: String

    private struct State {
        var contents: TokenCacheContents
        var stamp: UInt64
        /// Shares the identifiers that entries repeat (see ``StringInterner``).
        var interner = StringInterner()
    }

    private let state: Mutex<State>
    /// ``State/stamp``, written under the lock and read without it: every cache lookup asks for it.
    private let publishedStamp = Atomic<UInt64>(0)

    /// Creates a store holding `contents` (empty by default). Entries keep one shared copy of each
    /// repeated identifier (home account ID, environment, client ID, realm, target), as every
    /// entry stored later does.
    /// - Parameters:
    ///   - contents: the initial entries.
    ///   - accessGroup: the group the store reports; default ``TokenCacheAccessGroup/default``.
    public init(contents: TokenCacheContents = .init(), accessGroup: String = TokenCacheAccessGroup.default) {
        self.accessGroup = accessGroup
        var interner = StringInterner()
        var shared = contents
        shared.internIdentifiers(&interner)
        state = Mutex(State(contents: shared, stamp: 0, interner: interner))
    }

    /// Returns a copy of the contents.
    public func readAll() throws(MSALError) -> TokenCacheContents {
        state.withLock { $0.contents }
    }

    /// Applies the change under the lock; never throws.
    public func apply(_ change: TokenCacheChange) throws(MSALError) {
        _ = applyLocked(change)
    }

    /// Returns the number of non-empty changes applied so far.
    public func changeStamp() throws(MSALError) -> UInt64 {
        publishedStamp.load(ordering: .acquiring)
    }

    /// Applies the change and reads both stamps under one lock; never throws.
    public func applyReportingStamps(_ change: TokenCacheChange) throws(MSALError) -> AppliedChangeStamps {
        applyLocked(change)
    }

    /// Runs `body` on the contents under the lock; the stamp moves when it returns `true` (it changed something).
    func update(_ body: (inout TokenCacheContents) -> Bool) {
        state.withLock { state in
            if body(&state.contents) {
                state.stamp &+= 1
                publishedStamp.store(state.stamp, ordering: .releasing)
            }
        }
    }

    /// Applies `change` to this store and to `index`, a token cache's index of this store's entries
    /// as they were at stamp `loadedAt`, so that both keep one copy of the entries: the store lets
    /// go of its tables while the index changes them in place, then takes the index's. Applying the
    /// change to each separately would do the work twice, and the first change after a load would
    /// copy every table the two share (the whole cache). The entries are stored with their
    /// identifiers shared, as ``apply(_:)`` stores them.
    ///
    /// When the store changed since `loadedAt` (another cache wrote to it), the change is applied to
    /// the store alone and `index` is left as it was: it no longer describes the store.
    /// - Returns: the stamps around the change, and whether it was applied to `index` too.
    func apply(
        _ change: TokenCacheChange, sharingWith index: inout CacheIndex, loadedAt stamp: UInt64,
        touching homes: inout [HomeEnvironment]
    ) -> (stamps: AppliedChangeStamps, appliedToIndex: Bool) {
        state.withLock { state in
            let before = state.stamp
            if change.isEmpty { return (AppliedChangeStamps(before: before, after: before), before == stamp) }
            let appliedToIndex = before == stamp
            if appliedToIndex {
                // What the index does not hold (it keeps readable entries only), put back after.
                let unknownSections = state.contents.unknownSections
                var unreadableEntries = state.contents.unreadableEntries
                // Let go of the tables, so the index changes them in place (unless contents read
                // from the store meanwhile hold them too: then it copies them, as any value does).
                state.contents = TokenCacheContents()
                index.apply(change, storing: { state.interner.intern($0) }, touching: &homes)
                state.contents = index.contents
                state.contents.unknownSections = unknownSections
                if !unreadableEntries.isEmpty {
                    TokenCacheContents.forgetUnreadable(in: &unreadableEntries, replacedBy: change)
                    state.contents.unreadableEntries = unreadableEntries
                }
            } else {
                state.contents.apply(change, interning: &state.interner)
            }
            state.stamp &+= 1
            publishedStamp.store(state.stamp, ordering: .releasing)
            return (AppliedChangeStamps(before: before, after: state.stamp), appliedToIndex)
        }
    }

    /// Runs `body` on `index`, a token cache's index of this store's entries as they were at stamp
    /// `loadedAt`, with this store's tables let go of meanwhile (as
    /// ``apply(_:sharingWith:loadedAt:touching:)`` does), then keeps the index's: for a change that
    /// only replaces stored entries by equal-keyed ones, made in place.
    /// - Parameter writesOverUnreadable: whether the change, planned, would write a key under which
    ///   the store holds an entry it could not read (an ``TokenCacheContents/unreadableEntries``
    ///   table, never empty when asked): a planned change forgets those, so this one is not made.
    /// - Returns: the stamps around the change; `nil`, with nothing changed, when the store changed
    ///   since `loadedAt` or `writesOverUnreadable` holds (`body` is not run then), or `body`
    ///   returned `false` (it changed nothing).
    func replaceInPlace(
        sharingWith index: inout CacheIndex, loadedAt stamp: UInt64,
        writesOverUnreadable: ([String: [String: JSONValue]]) -> Bool, _ body: (inout CacheIndex) -> Bool
    ) -> AppliedChangeStamps? {
        state.withLock { state in
            guard state.stamp == stamp else { return nil }
            if !state.contents.unreadableEntries.isEmpty, writesOverUnreadable(state.contents.unreadableEntries) { return nil }
            let unknownSections = state.contents.unknownSections, unreadableEntries = state.contents.unreadableEntries
            state.contents = TokenCacheContents()
            let replaced = body(&index)
            state.contents = index.contents
            state.contents.unknownSections = unknownSections
            state.contents.unreadableEntries = unreadableEntries
            guard replaced else { return nil }
            let before = state.stamp
            state.stamp &+= 1
            publishedStamp.store(state.stamp, ordering: .releasing)
            return AppliedChangeStamps(before: before, after: state.stamp)
        }
    }

    private func applyLocked(_ change: TokenCacheChange) -> AppliedChangeStamps {
        state.withLock { state in
            let before = state.stamp
            if change.isEmpty { return AppliedChangeStamps(before: before, after: before) }
            state.contents.apply(change, interning: &state.interner)
            state.stamp &+= 1
            publishedStamp.store(state.stamp, ordering: .releasing)
            return AppliedChangeStamps(before: before, after: state.stamp)
        }
    }
}
