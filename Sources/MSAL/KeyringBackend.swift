import MSALCache
import MSALCacheKeyring
import MSALCacheEncryptedFile
import MSALCore

extension TokenCacheBackend {
    /// Opens the Secret Service keyring store of `accessGroup`.
    static func openKeyring(accessGroup: String, logger: Logger) throws(MSALError) -> any TokenCacheStore {
        try KeyringTokenCacheStore(accessGroup: accessGroup, logger: logger)
    }
}

extension EncryptedFileKey {
    /// The encrypted file's key kept in the keyring as the secret named `msal_cache key <cache path>`
    /// of the access group, created with OpenSSL's random generator on first use (under the group's
    /// lock, so processes starting together agree on one key).
    static func keyringKey(cachePath: String, accessGroup: String) throws(MSALError) -> EncryptedCacheKey {
        let candidate = try EncryptedCacheKey.random()
        let bytes = try KeyringSecret.loadOrStore(candidate.exportRawKey(), name: "msal_cache key \(cachePath)", accessGroup: accessGroup)
        return try EncryptedCacheKey(rawKey: bytes)
    }
}
