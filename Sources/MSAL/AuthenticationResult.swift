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
    /// Everything but the correlation ID, in one shared object: a result is copied on every cache
    /// hit (the same token and account, a new correlation ID), and copying one reference costs less
    /// than copying a dozen fields.
    private final class Storage: Sendable {
        let accessToken: String
        let tokenType: String
        let expiresOn: Date
        let scopes: [String]
        let account: Account
        let tenantID: String
        let rawIDToken: RawIDToken
        let idTokenClaims: IDTokenClaims?
        let tokenSource: TokenSource
        let authority: Authority
        let isExtendedLifetimeToken: Bool

        init(
            accessToken: String, tokenType: String, expiresOn: Date, scopes: [String], account: Account, tenantID: String,
            rawIDToken: RawIDToken, idTokenClaims: IDTokenClaims?, tokenSource: TokenSource, authority: Authority, isExtendedLifetimeToken: Bool
        ) {
            self.accessToken = accessToken
            self.tokenType = tokenType
            self.expiresOn = expiresOn
            self.scopes = scopes
            self.account = account
            self.tenantID = tenantID
            self.rawIDToken = rawIDToken
            self.idTokenClaims = idTokenClaims
            self.tokenSource = tokenSource
            self.authority = authority
            self.isExtendedLifetimeToken = isExtendedLifetimeToken
        }
    }

    /// Where ``idToken`` comes from: a result from the cache reads it from its claims, so it holds
    /// one reference for both.
    enum RawIDToken: Sendable {
        case absent
        case ofClaims
        case separate(String)
    }

    private let storage: Storage

    /// The access token, to send as `Authorization: Bearer <token>` (RFC 6750).
    public var accessToken: String { storage.accessToken }
    /// The token type, normally `Bearer`.
    public var tokenType: String { storage.tokenType }
    /// When the access token expires (absolute instant; render in UTC).
    public var expiresOn: Date { storage.expiresOn }
    /// The scopes the access token was granted, as the server returned them.
    public var scopes: [String] { storage.scopes }
    /// The account the token belongs to.
    public var account: Account { storage.account }
    /// The tenant the token was issued in (`realm`): a tenant ID for Entra ID.
    public var tenantID: String { storage.tenantID }
    /// The raw ID token, if one is cached or was returned.
    public var idToken: String? {
        switch storage.rawIDToken {
        case .absent: nil
        case .ofClaims: storage.idTokenClaims?.rawValue
        case .separate(let token): token
        }
    }
    /// The claims of the ID token, if one is cached or was returned.
    public var idTokenClaims: IDTokenClaims? { storage.idTokenClaims }
    /// The correlation ID of the request that produced the token: for a cache hit, this call's; for
    /// a call that waited on a refresh another concurrent call made for the same account and scopes
    /// (one network request serves them all), that request's, which is the one the provider logged.
    public internal(set) var correlationID: String
    /// Whether the token came from the cache or from the identity provider.
    public var tokenSource: TokenSource { storage.tokenSource }
    /// The authority the token was requested from.
    public var authority: Authority { storage.authority }
    /// Whether this is a cached access token past its expiry but within its extended lifetime
    /// (`ext_expires_in`), served because the provider is unavailable
    /// (``PublicClientApplicationConfiguration/extendedLifetimeEnabled``). MSAL for iOS/macOS
    /// `MSALResult.extendedLifeTimeToken`.
    public var isExtendedLifetimeToken: Bool { storage.isExtendedLifetimeToken }

    /// Creates a result.
    public init(
        accessToken: String, tokenType: String, expiresOn: Date, scopes: [String], account: Account,
        tenantID: String, idToken: String?, idTokenClaims: IDTokenClaims?, correlationID: String,
        tokenSource: TokenSource, authority: Authority, isExtendedLifetimeToken: Bool = false
    ) {
        let rawIDToken: RawIDToken
        if let idToken {
            // `==` on one storage compares no bytes.
            rawIDToken = idToken == idTokenClaims?.rawValue ? .ofClaims : .separate(idToken)
        } else {
            rawIDToken = .absent
        }
        self.init(
            accessToken: accessToken, tokenType: tokenType, expiresOn: expiresOn, scopes: scopes, account: account,
            tenantID: tenantID, rawIDToken: rawIDToken, idTokenClaims: idTokenClaims, correlationID: correlationID,
            tokenSource: tokenSource, authority: authority, isExtendedLifetimeToken: isExtendedLifetimeToken)
    }

    /// Creates a result whose ID token is `idTokenClaims`' own (``IDTokenClaims/rawValue``), or absent.
    init(
        accessToken: String, tokenType: String, expiresOn: Date, scopes: [String], account: Account,
        tenantID: String, idTokenClaims: IDTokenClaims?, correlationID: String,
        tokenSource: TokenSource, authority: Authority, isExtendedLifetimeToken: Bool
    ) {
        self.init(
            accessToken: accessToken, tokenType: tokenType, expiresOn: expiresOn, scopes: scopes, account: account,
            tenantID: tenantID, rawIDToken: idTokenClaims == nil ? .absent : .ofClaims, idTokenClaims: idTokenClaims,
            correlationID: correlationID, tokenSource: tokenSource, authority: authority, isExtendedLifetimeToken: isExtendedLifetimeToken)
    }

    private init(
        accessToken: String, tokenType: String, expiresOn: Date, scopes: [String], account: Account,
        tenantID: String, rawIDToken: RawIDToken, idTokenClaims: IDTokenClaims?, correlationID: String,
        tokenSource: TokenSource, authority: Authority, isExtendedLifetimeToken: Bool
    ) {
        storage = Storage(
            accessToken: accessToken, tokenType: tokenType, expiresOn: expiresOn, scopes: scopes, account: account,
            tenantID: tenantID, rawIDToken: rawIDToken, idTokenClaims: idTokenClaims, tokenSource: tokenSource,
            authority: authority, isExtendedLifetimeToken: isExtendedLifetimeToken)
        self.correlationID = correlationID
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
