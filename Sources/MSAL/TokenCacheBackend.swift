import Foundation
public import MSALCache
public import MSALCacheEncryptedFile
import MSALCacheSQLite
public import MSALCore

/// Where a ``PublicClientApplication`` keeps its token cache: one of swift-msal's backends, or a
/// store of the app's own. The app's ``PublicClientApplicationConfiguration/accessGroup`` selects
/// the partition of the store it uses.
///
/// Choosing per deployment (see `Docs/CacheBackends.md`): a desktop session has a Secret Service
/// keyring (``keyring``); a headless server or container has none and wants ``encryptedFile(path:key:)``
/// or ``sqlite(path:)``; a tool that shares sign-in with the Azure CLI or an MSAL Python app wants
/// ``jsonFile(path:)`` (plaintext). MSAL for iOS/macOS always uses the keychain; this is its Linux
/// counterpart.
public enum TokenCacheBackend: Sendable {
    /// The Linux default chain: the Secret Service keyring; when the keyring cannot be used on this
    /// machine (no D-Bus session, no Secret Service, locked: `.internal(.cacheUnavailable)`), the
    /// encrypted file at ``EncryptedFileTokenCacheStore/defaultPath(environment:)`` with its key in
    /// the key file beside it (`msal_cache.bin.key`, mode 0600, created when missing); when that
    /// cannot be used either, ``PublicClientApplication/init(configuration:)`` throws
    /// `.internal(.cacheUnavailable)` telling the app to choose a backend.
    case platformDefault
    /// The Secret Service keyring (GNOME Keyring, KWallet, KeePassXC) over D-Bus: one item per
    /// credential in the default collection, with MSAL for iOS/macOS's keychain attributes.
    case keyring
    /// One file encrypted with AES-256-GCM. `path` defaults to
    /// ``EncryptedFileTokenCacheStore/defaultPath(environment:)``; see ``EncryptedFileKey`` for keys.
    case encryptedFile(path: String? = nil, key: EncryptedFileKey = .keyFile(path: nil))
    /// An SQLite database; `path` defaults to ``SQLiteTokenCacheStore/defaultPath()``. Tokens are
    /// plaintext inside a 0600 file: protect it with the file system (or use an encrypted volume).
    case sqlite(path: String? = nil)
    /// MSAL's JSON file (`msal_token_cache.json`), shared with MSAL Python, MSAL .NET and the Azure
    /// CLI. Plaintext: for interoperability only.
    case jsonFile(path: String)
    /// In memory: nothing survives the process.
    case inMemory
    /// A store the app opened itself; its ``TokenCacheStore/accessGroup`` must be the
    /// configuration's.
    case store(any TokenCacheStore)

    /// Opens the store this backend names, for `accessGroup`.
    /// - Parameters:
    ///   - accessGroup: the partition to use (``TokenCacheAccessGroup/default`` unless the app shares
    ///     another).
    ///   - logger: told which store the default chain chose and why it passed over the others
    ///     (paths are PII).
    /// - Returns: the store.
    /// - Throws: ``MSALError``: `.internal(.invalidParameter)` for an invalid access group or a
    ///   ``store(_:)`` of another group; `.internal(.cacheUnavailable)` when the keyring cannot be
    ///   used, or no backend of ``platformDefault`` can; `.internal(.cacheError)` when a file cannot
    ///   be created or opened, each message saying what to do. A SQLite file is checked here; the
    ///   JSON and encrypted files are read on first use, so a damaged, tampered or foreign file or a
    ///   wrong key is reported by the first call that uses the cache (a sign-in checks the cache
    ///   before it asks the user anything).
    public func makeStore(accessGroup: String, logger: Logger = .none) throws(MSALError) -> any TokenCacheStore {
        try TokenCacheAccessGroup.validate(accessGroup)
        switch self {
        case .platformDefault:
            return try Self.openDefaultChain(accessGroup: accessGroup, logger: logger)
        case .keyring:
            return try Self.openKeyring(accessGroup: accessGroup, logger: logger)
        case let .encryptedFile(path, key):
            let path = path ?? EncryptedFileTokenCacheStore.defaultPath()
            return try EncryptedFileTokenCacheStore(
                path: path, keySource: key.source(cachePath: path, accessGroup: accessGroup), accessGroup: accessGroup)
        case let .sqlite(path):
            return try SQLiteTokenCacheStore(path: path ?? SQLiteTokenCacheStore.defaultPath(), accessGroup: accessGroup, logger: logger)
        case let .jsonFile(path):
            return try JSONFileTokenCacheStore(path: path, accessGroup: accessGroup)
        case .inMemory:
            return InMemoryTokenCacheStore(accessGroup: accessGroup)
        case let .store(store):
            guard store.accessGroup == accessGroup else {
                throw .internal(
                    .invalidParameter,
                    "The cache store was opened for access group \(store.accessGroup), but the configuration's access group is \(accessGroup); open the store with the configuration's group.")
            }
            return store
        }
    }

    /// Keyring, else the encrypted file with a key file, else a `.cacheUnavailable` error.
    private static func openDefaultChain(accessGroup: String, logger: Logger) throws(MSALError) -> any TokenCacheStore {
        let keyringFailure: MSALError
        do {
            let store = try openKeyring(accessGroup: accessGroup, logger: logger)
            logger.info("Token cache: the Secret Service keyring.")
            return store
        } catch where error.internalCode == .cacheUnavailable {
            keyringFailure = error
        }
        let path = EncryptedFileTokenCacheStore.defaultPath()
        do {
            // The store makes its files on the first change: ask now whether it could.
            try EncryptedFileTokenCacheStore.checkCanCreateFiles(at: path)
            let store = try EncryptedFileTokenCacheStore(
                path: path, keySource: .keyFile(path: EncryptedFileTokenCacheStore.defaultKeyFilePath(forCachePath: path)),
                accessGroup: accessGroup)
            logger.info("Token cache: the encrypted file \(pii: path) (the keyring cannot be used here: \(keyringFailure.message))")
            return store
        } catch {
            throw .internal(
                .cacheUnavailable,
                "No token cache backend can be used on this machine. The Secret Service keyring: \(keyringFailure.message) The encrypted file: \(error.message) Choose one in PublicClientApplicationConfiguration.cacheBackend, for example .encryptedFile(path:key:) with a writable path, .sqlite(path:) or .inMemory.")
        }
    }
}

/// Where ``TokenCacheBackend/encryptedFile(path:key:)`` gets its 256-bit key.
///
/// Its ``description``, ``debugDescription`` and mirror never show a passphrase or key bytes (so
/// printing a configuration that holds one shows none).
public enum EncryptedFileKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A key file of 32 raw bytes, mode 0600, created with a random key when missing; `nil` means
    /// `<cache path>.key` beside the cache file. Protects the cache when only the cache file is
    /// copied (a backup, a container layer), not from someone who can read both.
    case keyFile(path: String?)
    /// A passphrase, stretched with scrypt (RFC 7914; salt and parameters in the file header).
    case passphrase(String)
    /// A key the app holds (for example from a hardware token or a secret manager).
    case key(EncryptedCacheKey)
    /// A random key kept in the Secret Service keyring (the secret `msal_cache key <cache path>` of
    /// the access group), created on first use: the file is useless without the user's unlocked
    /// keyring. Throws `.internal(.cacheUnavailable)` where the keyring cannot be used.
    case keyring

    /// The case, with a key file's path and the passphrase and key redacted: `keyFile(path: …)`,
    /// `passphrase(redacted)`, `key(redacted)`, `keyring`.
    public var description: String {
        switch self {
        case let .keyFile(path): "keyFile(path: \(path.map { "\"\($0)\"" } ?? "nil"))"
        case .passphrase: "passphrase(redacted)"
        case .key: "key(redacted)"
        case .keyring: "keyring"
        }
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// No children: `dump` and debuggers show ``description`` only.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }

    func source(cachePath: String, accessGroup: String) throws(MSALError) -> EncryptedFileTokenCacheStore.KeySource {
        switch self {
        case let .keyFile(path): .keyFile(path: path ?? EncryptedFileTokenCacheStore.defaultKeyFilePath(forCachePath: cachePath))
        case let .passphrase(passphrase): .passphrase(passphrase)
        case let .key(key): .key(key)
        case .keyring: .key(try Self.keyringKey(cachePath: cachePath, accessGroup: accessGroup))
        }
    }
}
