public import Foundation
public import MSALCore
internal import Synchronization

/// A token cache store in one plain JSON file in MSAL's unified schema: the format MSAL Python's
/// `SerializableTokenCache`, MSAL .NET's `SerializeMsalV3` and the Azure CLI (`msal_token_cache.json`)
/// write, so those tools and swift-msal can share one cache.
///
/// - Important: the file is **plaintext**: anyone who can read it can use the refresh tokens in it.
///   Use it for interoperability only; prefer the SQLite or encrypted-file store otherwise. The file
///   is written with mode 0600 and missing directories are created with 0700.
/// - **Guarantees** (those of ``TokenCacheStore``), built on ``LockedFile``: every ``apply(_:)``
///   takes the exclusive lock on `<path>.lock`, reads the file, applies the change and replaces the
///   file atomically (temporary file, `fsync`, rename), so writers in this and other processes
///   (msal-extensions uses the same `<path>.lock` convention) never lose each other's changes, and
///   readers, which take no lock, see one committed state.
/// - **Keeps what it does not know.** Unknown top-level sections, unknown fields of entries and
///   entries it cannot read are written back unchanged (see ``TokenCacheContents/init(msalJSON:)``).
/// - **Never overwrites what is not a cache.** A missing or empty file is an empty cache; a file that
///   is not MSAL JSON is refused with an error and left untouched.
/// - **Change detection.** ``changeStamp()`` hashes the file's inode, size and modification time
///   (nanoseconds), plus this store's own write count; no read of the content.
/// - **Access groups.** The default group (`com.microsoft.adalcache`) lives in MSAL's top-level
///   sections, so MSAL Python, MSAL .NET and the Azure CLI share it; every other group lives in the
///   section `swift-msal.AccessGroups` (see ``AccessGroupPartitionedJSON``), which those tools keep
///   but do not read. Stores of different groups on one file never see each other's entries.
///
/// Errors are ``MSALError`` `.internal(.cacheError)` whose message names the path, says what went
/// wrong and what to do; never a token.
public final class JSONFileTokenCacheStore: TokenCacheStore {
    /// The cache file's path.
    public var path: String { file.path }
    /// The access group whose entries this store reads and writes.
    public let accessGroup: String

    private let file: LockedFile
    private let ownWrites = Atomic<UInt64>(0)

    /// Uses the JSON cache file at `path`; creates nothing until the first change.
    /// - Parameters:
    ///   - path: the cache file, e.g. `~/.azure/msal_token_cache.json`.
    ///   - accessGroup: the partition of the file this store uses; default
    ///     ``TokenCacheAccessGroup/default`` (the one other MSALs read).
    ///   - lockTimeout: how long, in seconds, a change waits for another writer that holds the lock
    ///     without changing the file (default 10; see ``LockedFile/withExclusiveLock(_:)``).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the path is empty or names something that
    ///   is not a regular file; `.internal(.invalidParameter)` for an invalid access group.
    public init(path: String, accessGroup: String = TokenCacheAccessGroup.default, lockTimeout: TimeInterval = 10) throws(MSALError) {
        self.accessGroup = try TokenCacheAccessGroup.validate(accessGroup)
        file = try LockedFile(path: path, lockTimeout: lockTimeout)
    }

    // MARK: TokenCacheStore

    /// Reads and parses the file (no lock needed: it is only ever replaced whole).
    /// - Returns: the contents; empty when the file is missing or empty.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file cannot be read or is not MSAL JSON.
    public func readAll() throws(MSALError) -> TokenCacheContents {
        try group(of: parse(file.read()))
    }

    /// Locks, reads, applies the change and replaces the file atomically.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file is not MSAL JSON (left
    ///   untouched), stays locked beyond the timeout, or cannot be written; then nothing was stored.
    public func apply(_ change: TokenCacheChange) throws(MSALError) {
        _ = try applyReportingStamps(change)
    }

    /// A hash of the file's (inode, size, modification time) plus this store's own write count.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file cannot be examined.
    public func changeStamp() throws(MSALError) -> UInt64 {
        try file.contentStamp() &+ ownWrites.load(ordering: .acquiring)
    }

    /// Applies the change under the lock and reads both stamps while holding it.
    /// - Returns: the change stamps before and after the change.
    /// - Throws: as ``apply(_:)``.
    public func applyReportingStamps(_ change: TokenCacheChange) throws(MSALError) -> AppliedChangeStamps {
        if change.isEmpty {
            return try file.withExclusiveLock { () throws(MSALError) -> AppliedChangeStamps in
                let stamp = try changeStamp()
                return AppliedChangeStamps(before: stamp, after: stamp)
            }
        }
        return try update { contents in
            contents.apply(change)
            return true
        }
    }

    /// Under the lock: reads the group's contents, lets `body` change them, and when it returns `true`
    /// replaces the file atomically.
    /// - Returns: the change stamps before and after.
    private func update(_ body: (inout TokenCacheContents) -> Bool) throws(MSALError) -> AppliedChangeStamps {
        try file.withExclusiveLock { () throws(MSALError) -> AppliedChangeStamps in
            let before = try changeStamp()
            var document = try parse(file.read())
            var contents = try group(of: document)
            guard body(&contents) else { return AppliedChangeStamps(before: before, after: before) }
            document.replace(accessGroup: accessGroup, with: contents)
            try file.replace(with: document.serialized())
            ownWrites.add(1, ordering: .acquiringAndReleasing)
            return AppliedChangeStamps(before: before, after: try changeStamp())
        }
    }

    // MARK: Helpers

    private func parse(_ data: Data?) throws(MSALError) -> AccessGroupPartitionedJSON {
        do {
            return try AccessGroupPartitionedJSON(data: data)
        } catch _ {
            // Parsed again on this path only, to say which of the two it is.
            let isJSON = data.map { JSONValue(parsing: $0) != nil } ?? true
            throw notMSALJSON(isJSON ? Self.wrongShape : "it is not JSON text: cut short, not UTF-8, or not JSON at all")
        }
    }

    private func group(of document: AccessGroupPartitionedJSON) throws(MSALError) -> TokenCacheContents {
        do {
            return try document.contents(accessGroup: accessGroup)
        } catch _ {
            throw notMSALJSON(Self.wrongShape)
        }
    }

    /// Why a file that is JSON is not a cache.
    private static let wrongShape = "expected a JSON object of sections such as \"AccessToken\" and \"RefreshToken\""

    /// The error for a file that is not a cache; `reason` says what is wrong with it (never its content).
    private func notMSALJSON(_ reason: String) -> MSALError {
        .internal(
            .cacheError,
            "The file '\(path)' is not an MSAL JSON token cache (\(reason)), so swift-msal left it untouched. Choose another path, or delete the file if it is a damaged cache; users will sign in again.")
    }
}

extension JSONFileTokenCacheStore: DocumentTokenCacheStore {
    /// Under the file's lock: reads this group's contents, lets `body` change them, and when it
    /// returns `true` replaces the file atomically (as ``apply(_:)``).
    /// - Throws: as ``apply(_:)``.
    public func updateContents(_ body: (inout TokenCacheContents) -> Bool) throws(MSALError) {
        _ = try update(body)
    }
}
