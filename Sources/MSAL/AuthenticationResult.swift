public import Foundation
public import MSALCore

/// Where the access token of a result came from.
///
/// Source: MSAL.NET `TokenSource` (`Cache`, `IdentityProvider`).
public enum TokenSource: String, Sendable, Hashable {
    /// Served from the token cache without a network request.
    case cache
    /// Issued by the identity provider during this call.
    case identityProvider = "identity_provider"
}

/// The outcome of a successful token request.
///
/// Source: MSAL for iOS/macOS `MSALResult`. Its `description` hides the tokens.
public struct AuthenticationResult: Sendable, CustomStringConvertible {
    /// The access token, to send as `Authorization: Bearer <token>` (RFC 6750).
    public let accessToken: String
    /// The token type, normally `Bearer`.
    public let tokenType: String
    /// When the access token expires (absolute instant; render in UTC).
    public let expiresOn: Date
    /// The scopes the access token was granted, as the server returned them.
    public let scopes: [String]
    /// The account the token belongs to.
    public let account: Account
    /// The tenant the token was issued in (`realm`): a tenant ID for Entra ID.
    public let tenantID: String
    /// The raw ID token, if one is cached or was returned.
    public let idToken: String?
    /// The claims of the ID token, if one is cached or was returned.
    public let idTokenClaims: IDTokenClaims?
    /// The correlation ID of the request that produced the token (for cache hits, of this call).
    public internal(set) var correlationID: String
    /// Whether the token came from the cache or from the identity provider.
    public let tokenSource: TokenSource
    /// The authority the token was requested from.
    public let authority: Authority
    /// Whether this is a cached access token past its expiry but within its extended lifetime
    /// (`ext_expires_in`), served because the provider is unavailable
    /// (``PublicClientApplicationConfiguration/extendedLifetimeEnabled``). MSAL for iOS/macOS
    /// `MSALResult.extendedLifeTimeToken`.
    public let isExtendedLifetimeToken: Bool

    /// Creates a result.
    public init(
        accessToken: String, tokenType: String, expiresOn: Date, scopes: [String], account: Account,
        tenantID: String, idToken: String?, idTokenClaims: IDTokenClaims?, correlationID: String,
        tokenSource: TokenSource, authority: Authority, isExtendedLifetimeToken: Bool = false
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresOn = expiresOn
        self.scopes = scopes
        self.account = account
        self.tenantID = tenantID
        self.idToken = idToken
        self.idTokenClaims = idTokenClaims
        self.correlationID = correlationID
        self.tokenSource = tokenSource
        self.authority = authority
        self.isExtendedLifetimeToken = isExtendedLifetimeToken
    }

    /// A summary without the tokens.
    public var description: String {
        "AuthenticationResult(account: \(account.identifier), scopes: \(scopes.joined(separator: " ")), expiresOn: \(expiresOn), source: \(tokenSource.rawValue), correlationID: \(correlationID))"
    }
}

extension MSALError {
    /// For ``MSALError/Code/serverDeclinedScopes``: the result for the scopes the server granted
    /// (its token is also cached), so an app that can work with fewer scopes goes on with it.
    public var declinedScopesResult: AuthenticationResult? { partialResult as? AuthenticationResult }
}
