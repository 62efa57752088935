public import Foundation
public import MSALCache
public import MSALCore
internal import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A token cache store in one encrypted file: the entries of MSAL's unified schema in the binary
/// layout of ``BinaryCacheDocument``, sealed with ``EncryptedCacheFormat`` (AES-256-GCM, a fresh
/// random nonce on every write, the header authenticated). Files of format version 1 (MSAL JSON
/// inside, as ``JSONFileTokenCacheStore`` writes it) are read, and rewritten as version 2 by their
/// first change.
///
/// - **Guarantees** (those of ``TokenCacheStore``), built on ``LockedFile`` exactly as
///   ``JSONFileTokenCacheStore``: every ``apply(_:)`` takes the exclusive lock on `<path>.lock`,
///   reads and decrypts the file, applies the change, seals it again and replaces the file
///   atomically (temporary file, `fsync`, rename, directory `fsync`); readers take no lock and see
///   one committed state. The file is written with mode 0600, missing directories with 0700.
/// - **Never overwrites what it cannot open.** A missing file is an empty cache. A file that does not
///   decrypt — wrong key or passphrase, altered, truncated (an empty file included), or not an
///   encrypted cache at all — is refused by ``readAll()`` and ``apply(_:)`` alike with
///   `.internal(.cacheError)`, and its bytes are left untouched, so a mistyped passphrase cannot
///   destroy the cache.
/// - **Keys.** See ``KeySource``: a key, a key file (32 raw bytes, mode 0600, created when missing)
///   or a passphrase (scrypt, with the salt in the file header).
/// - **Change detection.** ``changeStamp()`` hashes the file's inode, size and modification time
///   plus this store's own write count; it reads no content.
/// - **Access groups.** One file holds every group, each in its own block of the
///   ``BinaryCacheDocument`` (version 1: as ``AccessGroupPartitionedJSON`` describes); a store reads
///   only its group's entries, and stores of different groups on one file never see each other's.
///
/// Errors are ``MSALError`` `.internal(.cacheError)` whose message names the path, says what went
/// wrong and what to do; never a token or key.
///
/// Sources: the cache file layout of ``EncryptedCacheFormat`` (NIST SP 800-38D for GCM, RFC 7914
/// for scrypt); msal-extensions' `FilePersistenceWithDataProtection` / `LibsecretPersistence`
/// (an encrypted blob of MSAL's unified JSON behind a `<path>.lock` `CrossPlatLock`).
///
/// Its mirror (`dump`, debuggers) shows the path and the access group only, never the key or
/// passphrase it holds.
public final class EncryptedFileTokenCacheStore: TokenCacheStore, CustomReflectable {
    /// Where the file's key comes from. Its description and mirror never show a passphrase or key
    /// bytes.
    public enum KeySource: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// This key (e.g. from a keyring). The file header records KDF "raw key".
        case key(EncryptedCacheKey)
        /// A key file holding exactly 32 raw key bytes. It must be mode 0600 (no group or other
        /// permission bits) and is refused otherwise; when missing it is created with a random key
        /// (``EncryptedCacheKey/random()``), mode 0600, its missing directories 0700.
        case keyFile(path: String)
        /// A passphrase, stretched with scrypt (RFC 7914). The salt and parameters are stored in the
        /// file header: an existing file's are used to open and rewrite it; a new file gets a fresh
        /// 16-byte salt and `parameters`.
        case passphrase(String, parameters: ScryptParameters = .init())

        /// The case with the passphrase and key redacted: `key(redacted)`, `keyFile(path: "…")`,
        /// `passphrase(redacted, parameters: scrypt(N=…, r=…, p=…))`.
        public var description: String {
            switch self {
            case .key: "key(redacted)"
            case let .keyFile(path): "keyFile(path: \"\(path)\")"
            case let .passphrase(_, parameters): "passphrase(redacted, parameters: \(parameters))"
            }
        }

        /// The same as ``description``.
        public var debugDescription: String { description }

        /// No children: `dump` and debuggers show ``description`` only.
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }
    }

    /// The cache file's path.
    public var path: String { file.path }
    /// The access group whose entries this store reads and writes.
    public let accessGroup: String

    private let file: LockedFile
    private let source: ResolvedSource
    private let ownWrites = Atomic<UInt64>(0)
    /// The last passphrase-derived key and the KDF (parameters and salt) it was derived with.
    private let derived = Mutex<(kdf: KDFInfo, key: EncryptedCacheKey)?>(nil)

    private enum ResolvedSource: Sendable {
        case key(EncryptedCacheKey)
        /// Read each time a file needs it (32 bytes, against decrypting the whole cache), so a key
        /// file that was deleted or replaced is seen; created only with a new cache file.
        case keyFile(path: String)
        case passphrase(String, ScryptParameters)
    }

    /// Uses the encrypted cache file at `path`; creates no file until the first change. An existing
    /// key file of ``KeySource/keyFile(path:)`` is read and checked now; a missing one is created
    /// (with a random key) only when a change writes a new cache file: opening a store, or reading
    /// a missing cache, creates nothing, and an existing cache file whose key file is missing is
    /// refused instead of being given a new key that cannot open it.
    /// - Parameters:
    ///   - path: the cache file, e.g. `~/.local/share/msal/msal_token_cache.bin`.
    ///   - keySource: where the key comes from.
    ///   - accessGroup: the partition of the file this store uses; default ``TokenCacheAccessGroup/default``.
    ///   - lockTimeout: how long, in seconds, a change waits for another writer that holds the lock
    ///     without changing the file (default 10; see ``LockedFile/withExclusiveLock(_:)``).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the path is empty or not a regular file,
    ///   or the key file exists and is readable by group or others, is not 32 bytes, or cannot be
    ///   read; `.internal(.invalidParameter)` for invalid scrypt parameters or an invalid access
    ///   group. A key file missing beside an existing cache file, or one that cannot be created,
    ///   makes the read or change that needs it throw `.internal(.cacheError)`.
    public init(
        path: String, keySource: KeySource, accessGroup: String = TokenCacheAccessGroup.default, lockTimeout: TimeInterval = 10
    ) throws(MSALError) {
        self.accessGroup = try TokenCacheAccessGroup.validate(accessGroup)
        file = try LockedFile(path: path, lockTimeout: lockTimeout)
        switch keySource {
        case let .key(key):
            source = .key(key)
        case let .keyFile(keyPath):
            source = .keyFile(path: keyPath)
            // An existing key file is checked now (mode, length): its errors come at once.
            var info = stat()
            if stat(keyPath, &info) == 0 { _ = try Self.loadOrCreateKeyFile(keyPath) }
        case let .passphrase(passphrase, parameters):
            _ = try parameters.validatedMemoryLimit()
            source = .passphrase(passphrase, parameters)
        }
    }

    /// `path` and `accessGroup`; the key source is left out (it may hold a passphrase or key).
    public var customMirror: Mirror {
        Mirror(self, children: ["path": path, "accessGroup": accessGroup], displayStyle: .class)
    }

    /// The default location of the encrypted cache: `msal_cache.bin` in
    /// ``TokenCacheLocation/dataDirectory(environment:)`` (`$XDG_DATA_HOME/msal`, else
    /// `~/.local/share/msal`).
    /// - Parameter environment: the variables to read; default this process's environment.
    /// - Returns: an absolute path.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        TokenCacheLocation.dataDirectory(environment: environment) + "/msal_cache.bin"
    }

    /// Checks, creating nothing, that files can be made at `path` by this user: the nearest
    /// existing folder on the way to it is a directory this user can write to and enter, and `path`
    /// itself, when it exists, is not a directory. What the default backend chain asks before it
    /// picks the encrypted file (whose files are made only by the first change).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` saying which folder or file is in the way.
    package static func checkCanCreateFiles(at path: String) throws(MSALError) {
        var info = stat()
        if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            throw .internal(.cacheError, "The token cache path '\(path)' is a directory.")
        }
        var folder = (path as NSString).deletingLastPathComponent
        while !folder.isEmpty {
            if stat(folder, &info) == 0 {
                guard (info.st_mode & S_IFMT) == S_IFDIR else {
                    throw .internal(.cacheError, "The token cache '\(path)' cannot be created: '\(folder)' is not a directory.")
                }
                guard access(folder, W_OK | X_OK) == 0 else {
                    throw .internal(.cacheError, "The token cache '\(path)' cannot be created: this user cannot write to or enter '\(folder)'.")
                }
                return
            }
            let parent = (folder as NSString).deletingLastPathComponent
            if parent == folder { break }
            folder = parent
        }
    }

    /// The key file that goes with a cache file when none is named: `<cache path>.key`, beside it.
    /// - Returns: the path.
    public static func defaultKeyFilePath(forCachePath path: String) -> String {
        path + ".key"
    }

    // MARK: TokenCacheStore

    /// Reads, decrypts and parses the file (no lock needed: it is only ever replaced whole).
    /// - Returns: the contents; empty when the file is missing.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file cannot be read or decrypted
    ///   (wrong key or passphrase, altered, truncated, a format version this code does not read) or
    ///   its content is not a cache of its format version.
    public func readAll() throws(MSALError) -> TokenCacheContents {
        try decode(file.read()).contents
    }

    /// Locks, reads and decrypts, applies the change, seals and replaces the file atomically.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file cannot be opened (left
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

    /// Under the lock: decrypts the file (a file that does not open is never written over), lets
    /// `body` change this group's contents, and when it returns `true` seals and replaces the file.
    /// - Returns: the change stamps before and after.
    private func update(_ body: (inout TokenCacheContents) -> Bool) throws(MSALError) -> AppliedChangeStamps {
        try file.withExclusiveLock { () throws(MSALError) -> AppliedChangeStamps in
            let before = try changeStamp()
            var (document, contents, kdf, key) = try decode(file.read())
            guard body(&contents) else { return AppliedChangeStamps(before: before, after: before) }
            if kdf == nil { (kdf, key) = try newFileKey() }
            var binary: BinaryCacheDocument
            switch document {
            case .binary(let read): binary = read
            case .json(let read): binary = try BinaryCacheDocument(converting: read)  // a version 1 file is rewritten as version 2
            }
            try binary.replace(accessGroup: accessGroup, with: contents)
            try file.replace(with: EncryptedCacheFormat.seal(binary.serialized(), key: key!, kdf: kdf!))
            ownWrites.add(1, ordering: .acquiringAndReleasing)
            return AppliedChangeStamps(before: before, after: try changeStamp())
        }
    }

    // MARK: Helpers

    /// A file's plaintext document, by format version.
    private enum Document {
        /// Version 1: MSAL JSON.
        case json(AccessGroupPartitionedJSON)
        /// Version 2.
        case binary(BinaryCacheDocument)
    }

    /// Decrypts and parses `data`.
    /// - Returns: the whole plaintext document, this group's contents and, for an existing file, its KDF and key.
    private func decode(
        _ data: Data?
    ) throws(MSALError) -> (document: Document, contents: TokenCacheContents, kdf: KDFInfo?, key: EncryptedCacheKey?) {
        guard let data else { return (.binary(BinaryCacheDocument()), TokenCacheContents(), nil, nil) }
        var used: (KDFInfo, EncryptedCacheKey)?
        var missingKeyPath: String?
        let plaintext: Data
        let version: UInt8
        do {
            (plaintext, version) = try EncryptedCacheFormat.openVersioned(data) { (kdf: KDFInfo) throws(MSALError) -> EncryptedCacheKey in
                var info = stat()
                if case let .keyFile(keyPath) = self.source, kdf == .rawKey, stat(keyPath, &info) != 0 {
                    missingKeyPath = keyPath
                    throw self.missingKeyFile(keyPath)
                }
                let key = try self.key(for: kdf)
                used = (kdf, key)
                return key
            }
        } catch {
            // A format version this code does not read says what to do itself (upgrade); the key is not at fault.
            // A missing key file's error says what to do itself.
            if missingKeyPath != nil { throw error }
            let advice: String
            // Starts as a cache does (perhaps cut short), or is something else altogether.
            let startsAsCache = data.starts(with: EncryptedCacheFormat.magic) || EncryptedCacheFormat.magic.starts(with: data)
            if EncryptedCacheFormat.hasUnreadableVersion(data) {
                advice = ""
            } else if !startsAsCache {
                // Not a cache at all (another program's file, a JSON or SQLite cache): not ours to delete.
                advice = " Choose another path for the encrypted cache (or the backend that wrote this file)."
            } else if data.count < EncryptedCacheFormat.minimumLength {
                advice = ""  // truncated: its message says what to do
            } else {
                advice = " Use the right key or passphrase, or delete the file to start over; users will sign in again."
            }
            throw .internal(.cacheError, "Cannot open the encrypted token cache '\(path)': \(error.message) swift-msal left the file untouched.\(advice)")
        }
        do {
            if version == 1 {
                let document = try AccessGroupPartitionedJSON(data: plaintext)
                return (.json(document), try document.contents(accessGroup: accessGroup), used?.0, used?.1)
            }
            let document = try BinaryCacheDocument(data: plaintext)
            return (.binary(document), try document.contents(accessGroup: accessGroup), used?.0, used?.1)
        } catch _ {
            throw .internal(
                .cacheError,
                "The encrypted token cache '\(path)' decrypted, but its content is not a token cache of format version \(version), so swift-msal left it untouched. Delete the file if it is a damaged cache; users will sign in again.")
        }
    }

    /// The key for a file whose header says `kdf`.
    private func key(for kdf: KDFInfo) throws(MSALError) -> EncryptedCacheKey {
        switch source {
        case let .key(key):
            guard kdf == .rawKey else {
                throw .internal(.cacheError, "The file is protected by a passphrase, but this store was given a key or key file.")
            }
            return key
        case let .keyFile(keyPath):
            guard kdf == .rawKey else {
                throw .internal(.cacheError, "The file is protected by a passphrase, but this store was given a key or key file.")
            }
            return try keyFromFile(keyPath, creating: false)
        case let .passphrase(passphrase, _):
            guard case .scrypt = kdf else {
                throw .internal(.cacheError, "The file is protected by a key file or keyring key, but this store was given a passphrase.")
            }
            if let cached = derived.withLock({ $0 }), cached.kdf == kdf { return cached.key }
            let key = try kdf.deriveKey(passphrase: passphrase)
            derived.withLock { $0 = (kdf, key) }
            return key
        }
    }

    /// The KDF and key for a file written for the first time (a fresh salt for a passphrase).
    private func newFileKey() throws(MSALError) -> (KDFInfo?, EncryptedCacheKey?) {
        switch source {
        case let .key(key):
            return (.rawKey, key)
        case let .keyFile(keyPath):
            return (.rawKey, try keyFromFile(keyPath, creating: true))
        case let .passphrase(_, parameters):
            let kdf = try KDFInfo.freshScrypt(parameters: parameters)
            return (kdf, try key(for: kdf))
        }
    }

    /// The key of the key file at `keyPath`, read now; when `creating` (a new cache file is being
    /// written) a missing key file is created with a random key.
    private func keyFromFile(_ keyPath: String, creating: Bool) throws(MSALError) -> EncryptedCacheKey {
        var info = stat()
        if !creating, stat(keyPath, &info) != 0 { throw missingKeyFile(keyPath) }
        return try Self.loadOrCreateKeyFile(keyPath)
    }

    /// The error for an existing cache file whose key file is missing.
    private func missingKeyFile(_ keyPath: String) -> MSALError {
        .internal(
            .cacheError,
            "The key file '\(keyPath)' of the encrypted token cache '\(path)' does not exist, so the cache cannot be decrypted; swift-msal created no new key and left the cache file untouched. Restore the key file or name the right one (EncryptedFileKey.keyFile(path:), msal --cache-key-file), or delete the cache file to start over; users will sign in again.")
    }

    /// Reads the key file at `keyPath`, or creates it with a random key (0600; directories 0700).
    private static func loadOrCreateKeyFile(_ keyPath: String) throws(MSALError) -> EncryptedCacheKey {
        let keyFile = try LockedFile(path: keyPath)
        // Serialize creation with other processes starting at the same time.
        return try keyFile.withExclusiveLock { () throws(MSALError) -> EncryptedCacheKey in
            var info = stat()
            if stat(keyPath, &info) == 0 {
                let mode = info.st_mode & 0o777
                guard mode & 0o077 == 0 else {
                    throw .internal(
                        .cacheError,
                        "The key file '\(keyPath)' of the encrypted token cache has mode \(String(mode, radix: 8)), so other users may read it; swift-msal refuses to use it. Run `chmod 600 '\(keyPath)'`, or delete it and the cache file to start over.")
                }
                guard let data = try keyFile.read(), data.count == EncryptedCacheKey.byteCount else {
                    throw .internal(
                        .cacheError,
                        "The key file '\(keyPath)' of the encrypted token cache does not hold exactly \(EncryptedCacheKey.byteCount) bytes. Restore it, or delete it and the cache file to start over.")
                }
                return try EncryptedCacheKey(rawKey: [UInt8](data))
            }
            let key = try EncryptedCacheKey.random()
            try keyFile.replace(with: Data(key.bytes))
            return key
        }
    }
}

extension EncryptedFileTokenCacheStore: DocumentTokenCacheStore {
    /// Under the file's lock: reads this group's contents, lets `body` change them, and when it
    /// returns `true` decrypts, seals and replaces the file atomically (as ``apply(_:)``).
    /// - Throws: as ``apply(_:)``.
    public func updateContents(_ body: (inout TokenCacheContents) -> Bool) throws(MSALError) {
        _ = try update(body)
    }
}
