public import Foundation
public import MSALCache
public import MSALCore
public import MSALNetwork

/// How a ``PublicClientApplication`` is set up: the app's registration, its default authority,
/// where tokens are kept, and the parts a test or an app may replace (clock, logger, transport).
///
/// Source: MSAL for iOS/macOS `MSALPublicClientApplicationConfig`.
public struct PublicClientApplicationConfiguration: Sendable {
    /// The application (client) ID from the app registration.
    public var clientID: String
    /// The authority used when a request does not name one. MSAL's default is
    /// `https://login.microsoftonline.com/common`.
    public var authority: Authority
    /// Where the token cache is kept. Default ``TokenCacheBackend/platformDefault``: the Secret
    /// Service keyring, else an encrypted file with a key file, else an error telling the app to
    /// choose (MSAL for iOS/macOS: the keychain).
    public var cacheBackend: TokenCacheBackend
    /// The access group: the partition of the cache this app reads and writes. Apps (different client
    /// IDs, separate processes) with the same group share accounts and refresh tokens, family refresh
    /// tokens included; apps with different groups see nothing of each other. Default
    /// `com.microsoft.adalcache` (``TokenCacheAccessGroup/default``), as MSAL for iOS/macOS's
    /// `MSALCacheConfig.keychainSharingGroup`.
    public var accessGroup: String
    /// Caches an ADAL-era version of the app left behind, read (never written) so its users migrate
    /// without signing in again: ``PublicClientApplication/account(forUsername:)`` searches them
    /// besides the MSAL cache, and the first ``PublicClientApplication/acquireTokenSilent(with:)``
    /// with an account found only there redeems the ADAL refresh token at the v2.0 endpoint and
    /// writes MSAL entries (MSAL for iOS/macOS's migration path, Docs/Migration.md). Only entries
    /// issued to ``clientID`` (or family refresh tokens) at an Entra ID authority are used. Default empty: no legacy cache is
    /// read. For the Azure CLI's file: `[ADALPythonTokenCache(path: ADALPythonTokenCache.defaultPath())]`.
    /// Drop the caches once the users have migrated: ``PublicClientApplication/remove(account:)``
    /// never changes them, so a removed account would be found (and upgraded) there again.
    public var legacyCaches: [any LegacyTokenCache]
    /// Whether ADAL's keyed items (``ADALKeyedItem``) in the application's own cache store, in its
    /// access group, are read as one more legacy cache (``ADALKeyedTokenCache``), as MSAL for
    /// iOS/macOS reads the ADAL items it finds beside its own in the keychain access group. Default
    /// `false`. Needs a store that keeps such items (``ADALKeyedItemStore``: every backend of
    /// ``TokenCacheBackend`` does); see ``legacyCaches`` for what is read and when.
    public var readsADALKeyedItems: Bool
    /// Seconds before an access token's expiry from which the cache no longer serves it and a silent
    /// request refreshes instead. Default 300 (as MSAL for iOS/macOS `tokenExpirationBuffer`).
    public var tokenExpirationBuffer: TimeInterval
    /// Seconds of clock skew allowed when checking an ID token's `exp`. Default 300.
    public var allowedClockSkew: TimeInterval
    /// The source of "now". Default: the system clock.
    public var clock: any WallClock
    /// Where log lines go. Default: nowhere (``Logger/none``); PII is masked unless the logger opts in.
    public var logger: Logger
    /// The HTTP client. Default: ``URLSessionTransport`` with a 30 s timeout.
    public var transport: any HTTPTransport
    /// The redirect URI of interactive sign-in. Default `http://localhost`: the loopback listener
    /// binds 127.0.0.1 on a port the system chooses (RFC 8252 §7.3; Entra ID accepts any port for
    /// loopback redirect URIs). Use `http://127.0.0.1:<port>/<path>` for providers that match the
    /// registered URI exactly, or `msauth.<applicationID>://auth` / another private-use scheme
    /// delivered through ``PublicClientApplication/handleResponse(url:)``. Validated when the
    /// application is created (``RedirectURI``).
    public var redirectURI: String
    /// The app's reverse-DNS application ID (its desktop-file ID, e.g. `com.contoso.App`), which
    /// `msauth.<applicationID>://auth` redirect URIs must name. `nil` when the app has none.
    public var applicationID: String?
    /// When the provider is unavailable (a 5xx, a timeout, a network error) during a silent
    /// refresh, serve the cached access token until its extended expiry (`ext_expires_in`) and mark
    /// the result ``AuthenticationResult/isExtendedLifetimeToken``. Default `false` (MSAL for
    /// iOS/macOS `extendedLifetimeEnabled`).
    public var extendedLifetimeEnabled: Bool
    /// Capabilities of this client sent with every token request as the `xms_cc` claims request
    /// (e.g. `["cp1"]`: the app handles claims challenges of Continuous Access Evaluation).
    /// MSAL for iOS/macOS `clientApplicationCapabilities`.
    public var clientCapabilities: [String]
    /// Whether an Entra ID host that is not one of the well-known clouds is validated with Entra's
    /// instance discovery before it is used (`internal.failedAuthorityValidation` when Entra does
    /// not know it). Default `true`; turn it off only for private clouds and tests. Loopback hosts
    /// (local providers) are never validated.
    public var validateAuthority: Bool
    /// The host asked to validate unknown Entra hosts. Default `login.microsoftonline.com`.
    public var instanceDiscoveryHost: String
    /// How requests to the token endpoint are retried: once after 1 s on a 5xx without
    /// `Retry-After`, a timeout or a network error (MSAL.NET's policy). `RetryPolicy(maxRetries: 0)`
    /// turns retrying off.
    public var retryPolicy: RetryPolicy
    /// How the device-code flow waits between polls; replaceable so tests do not sleep.
    /// Receives seconds. Default: `Task.sleep`.
    public var sleep: @Sendable (TimeInterval) async throws -> Void

    /// Creates a configuration.
    /// - Parameters:
    ///   - clientID: the application (client) ID.
    ///   - authority: the default authority; see ``Authority``.
    ///   - cacheBackend: where tokens are kept; default ``TokenCacheBackend/platformDefault``.
    ///   - accessGroup: the cache partition; default ``TokenCacheAccessGroup/default``.
    public init(
        clientID: String,
        authority: Authority,
        cacheBackend: TokenCacheBackend = .platformDefault,
        accessGroup: String = TokenCacheAccessGroup.default
    ) {
        self.clientID = clientID
        self.authority = authority
        self.cacheBackend = cacheBackend
        self.accessGroup = accessGroup
        self.legacyCaches = []
        self.readsADALKeyedItems = false
        self.redirectURI = "http://localhost"
        self.applicationID = nil
        self.retryPolicy = .default
        self.validateAuthority = true
        self.instanceDiscoveryHost = "login.microsoftonline.com"
        self.extendedLifetimeEnabled = false
        self.clientCapabilities = []
        self.tokenExpirationBuffer = 300
        self.allowedClockSkew = 300
        self.clock = SystemWallClock()
        self.logger = .none
        self.transport = URLSessionTransport()
        self.sleep = { seconds in try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000)) }
    }

    /// Creates a configuration whose tokens go to a store the app opened itself
    /// (``TokenCacheBackend/store(_:)``); the access group is the store's.
    /// - Parameters:
    ///   - clientID: the application (client) ID.
    ///   - authority: the default authority; see ``Authority``.
    ///   - cacheStore: the store, for example `SQLiteTokenCacheStore(path:accessGroup:)`.
    public init(clientID: String, authority: Authority, cacheStore: any TokenCacheStore) {
        self.init(clientID: clientID, authority: authority, cacheBackend: .store(cacheStore), accessGroup: cacheStore.accessGroup)
    }
}
