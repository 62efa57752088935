import MSALCache
import MSALCore

extension TokenCacheBackend {
    /// The keyring backend arrives with the MSALCacheKeyring target (issue 5, in progress).
    static func openKeyring(accessGroup: String, logger: Logger) throws(MSALError) -> any TokenCacheStore {
        throw .internal(.cacheUnavailable, "This build of swift-msal has no Secret Service keyring backend yet.")
    }
}
