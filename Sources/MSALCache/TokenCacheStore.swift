public import MSALCore
internal import Synchronization

/// Where a token cache lives: the persistence contract every backend (in memory, SQLite, keyring,
/// encrypted file) implements, and the only thing ``TokenCache`` needs from one.
///
/// An implementation guarantees:
/// - **Atomicity.** Each ``apply(_:)`` is all or nothing: after it returns, every removal and upsert
///   of the change is stored; when it throws, none is. Removals are applied first, then upserts,
///   each under its own ``CacheEntry/key``. There is never a partial write, also not when the
///   process dies mid-way.
/// - **Isolation.** A reader (``readAll()``) in this or another process sees the store either
///   before or after a change, never in between.
/// - **Concurrent writers.** Writers in this and in other processes are serialized; each change is
///   applied to the state left by the previous one, so nothing is lost. When two changes touch the
///   same entry key, the last writer wins for that key.
/// - **Change detection.** ``changeStamp()`` returns a different value after any commit by any
///   process or connection (including this one), so a cache layer can tell cheaply that it must reload.
/// - **Errors.** Every method throws only ``MSALError`` with code `.internal` and internal code
///   `.cacheError`, whose message says what happened and what to do: the directory is missing or not
///   writable, the store is locked by another process beyond the backend's busy timeout, the file is
///   corrupt, the file is not a database of this library, or it was written by a newer version. A
///   message never contains a secret (token).
/// - **Thread safety.** A store may be called from any thread concurrently.
///
/// Source: the contract of MSAL's token cache serialization callbacks (MSAL Python
/// `SerializableTokenCache`, msal-extensions' cross-process lock), made explicit.
public protocol TokenCacheStore: Sendable {
    /// The access group whose entries this store reads and writes (see ``TokenCacheAccessGroup``).
    /// Every backend is partitioned by group: a store never reads or writes another group's entries,
    /// even when both live in one file or one keyring.
    var accessGroup: String { get }

    /// Reads every entry of the store.
    /// - Returns: the contents as of one committed state.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    func readAll() throws(MSALError) -> TokenCacheContents

    /// Applies one change atomically (see the protocol's guarantees).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the change could not be stored; then
    ///   nothing of it was stored.
    func apply(_ change: TokenCacheChange) throws(MSALError)

    /// A cheap value that changes whenever any process commits a change to the store (SQLite:
    /// `PRAGMA data_version` plus this connection's own write counter). Compare for equality only.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be reached.
    func changeStamp() throws(MSALError) -> UInt64

    /// Applies one change atomically and reports the ``changeStamp()`` just before and just after it,
    /// both read while the change held the store's write lock.
    ///
    /// ``TokenCache`` uses it to update its in-memory copy without reloading: when `before` equals the
    /// stamp it loaded, nobody else changed the store in between. The default implementation reads
    /// the stamps around ``apply(_:)`` without holding a lock, so another process's commit at that
    /// moment may go unnoticed until the next change; backends should implement it.
    /// - Returns: the stamps before and after the change.
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
/// want tokens on disk. Every change is atomic under a lock; ``changeStamp()`` counts changes.
public final class InMemoryTokenCacheStore: TokenCacheStore {
    /// The access group this store stands for. An in-memory store is one process's only, so the group
    /// names it and nothing else.
    public let accessGroup: String

    private struct State {
        var contents: TokenCacheContents
        var stamp: UInt64
    }

    private let state: Mutex<State>

    /// Creates a store holding `contents` (empty by default).
    /// - Parameters:
    ///   - contents: the initial entries.
    ///   - accessGroup: the group the store reports; default ``TokenCacheAccessGroup/default``.
    public init(contents: TokenCacheContents = .init(), accessGroup: String = TokenCacheAccessGroup.default) {
        self.accessGroup = accessGroup
        state = Mutex(State(contents: contents, stamp: 0))
    }

    /// Returns a copy of the contents.
    public func readAll() throws(MSALError) -> TokenCacheContents {
        state.withLock { $0.contents }
    }

    /// Applies the change under the lock; never throws.
    public func apply(_ change: TokenCacheChange) throws(MSALError) {
        _ = applyLocked(change)
    }

    /// Returns the number of changes applied so far.
    public func changeStamp() throws(MSALError) -> UInt64 {
        state.withLock { $0.stamp }
    }

    /// Applies the change and reads both stamps under one lock; never throws.
    public func applyReportingStamps(_ change: TokenCacheChange) throws(MSALError) -> AppliedChangeStamps {
        applyLocked(change)
    }

    private func applyLocked(_ change: TokenCacheChange) -> AppliedChangeStamps {
        state.withLock { state in
            let before = state.stamp
            state.contents.apply(change)
            state.stamp &+= 1
            return AppliedChangeStamps(before: before, after: state.stamp)
        }
    }
}
