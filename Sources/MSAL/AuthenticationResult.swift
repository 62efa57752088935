public import Foundation
public import MSALCore
import MSALCache

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
public struct AuthenticationResult: Sendable, CustomStringConvertible, CustomReflectable {
    /// Everything but the correlation ID, in one shared object: a result is copied on every cache
    /// hit (the same token and account, a new correlation ID), and copying one reference costs less
    /// than copying a dozen fields.
    private final class Storage: Sendable {
        let token: Token
        let tokenType: String
        let expiresOn: Date
        let scopes: Scopes
        let account: Account
        let tenantID: String
        let identity: Identity
        let tokenSource: TokenSource
        let authority: Authority
        let isExtendedLifetimeToken: Bool

        init(
            token: Token, tokenType: String, expiresOn: Date, scopes: Scopes, account: Account, tenantID: String,
            identity: Identity, tokenSource: TokenSource, authority: Authority, isExtendedLifetimeToken: Bool
        ) {
            self.token = token
            self.tokenType = tokenType
            self.expiresOn = expiresOn
            self.scopes = scopes
            self.account = account
            self.tenantID = tenantID
            self.identity = identity
            self.tokenSource = tokenSource
            self.authority = authority
            self.isExtendedLifetimeToken = isExtendedLifetimeToken
        }
    }

    /// Where ``accessToken`` comes from: a result from the cache holds the cache entry (already read
    /// to find it) and reads the token from it when asked.
    private enum Token: Sendable {
        case value(String)
        case entry(AccessTokenEntry)
    }

    /// Where ``scopes`` come from: a result from the cache splits and sorts its entry's `target` when
    /// asked (kept per target for the process, ``sortedScopes(ofTarget:)``).
    private enum Scopes: Sendable {
        case value([String])
        case ofTarget(String)
    }

    /// Where ``idToken`` and ``idTokenClaims`` come from: a result from the cache reads them, when
    /// asked, from its account's profile for ``tenantID`` (an immutable value: the same answer as
    /// reading them up front, without reading them on every hit).
    private enum Identity: Sendable {
        /// The ID token and claims given.
        case given(idToken: String?, claims: IDTokenClaims?)
        /// The claims of the account's profile for the result's tenant, and their JWT.
        case ofAccountTenant
    }

    private let storage: Storage

    /// The access token, to send as `Authorization: Bearer <token>` (RFC 6750).
    public var accessToken: String {
        switch storage.token {
        case .value(let token): token
        case .entry(let entry): entry.secret
        }
    }
    /// The token type, normally `Bearer`.
    public var tokenType: String { storage.tokenType }
    /// When the access token expires (absolute instant; render in UTC).
    public var expiresOn: Date { storage.expiresOn }
    /// The scopes the access token was granted, as the server returned them.
    public var scopes: [String] {
        switch storage.scopes {
        case .value(let scopes): scopes
        case .ofTarget(let target): Self.sortedScopes(ofTarget: target)
        }
    }
    /// The account the token belongs to.
    public var account: Account { storage.account }
    /// The tenant the token was issued in (`realm`): a tenant ID for Entra ID.
    public var tenantID: String { storage.tenantID }
    /// The raw ID token, if one is cached or was returned.
    public var idToken: String? {
        switch storage.identity {
        case .given(let idToken, _): idToken
        case .ofAccountTenant: idTokenClaims?.rawValue
        }
    }
    /// The claims of the ID token, if one is cached or was returned.
    public var idTokenClaims: IDTokenClaims? {
        switch storage.identity {
        case .given(_, let claims): claims
        case .ofAccountTenant: storage.account.claims(ofTenant: storage.tenantID)
        }
    }
    /// The correlation ID of the request that produced the token: for a cache hit, this call's; for
    /// a call that waited on a refresh another concurrent call made for the same account and scopes
    /// (one network request serves them all), that request's, which is the one the provider logged.
    public internal(set) var correlationID: String {
        get { correlation.string }
        set { correlation = .given(newValue) }
    }
    /// ``correlationID``, written out when it is read.
    var correlation: RequestCorrelationID
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
        storage = Storage(
            token: .value(accessToken), tokenType: tokenType, expiresOn: expiresOn, scopes: .value(scopes), account: account,
            tenantID: tenantID, identity: .given(idToken: idToken, claims: idTokenClaims), tokenSource: tokenSource,
            authority: authority, isExtendedLifetimeToken: isExtendedLifetimeToken)
        correlation = .given(correlationID)
    }

    /// Creates the result of a cached access token: its token, type, expiry and tenant (`realm`)
    /// come from `entry`, its scopes from the entry's `target` (sorted); its ID token and claims are
    /// those of `account`'s profile for that tenant (``Account/claims(ofTenant:)``), or absent.
    init(
        cached entry: AccessTokenEntry, account: Account, correlation: RequestCorrelationID,
        authority: Authority, isExtendedLifetimeToken: Bool
    ) {
        storage = Storage(
            token: .entry(entry), tokenType: entry.tokenType, expiresOn: entry.expiresOn, scopes: .ofTarget(entry.target),
            account: account, tenantID: entry.realm, identity: .ofAccountTenant, tokenSource: .cache, authority: authority,
            isExtendedLifetimeToken: isExtendedLifetimeToken)
        self.correlation = correlation
    }

    /// The scopes of an access token's space-delimited `target`, sorted, as a cached result reports
    /// them. Kept per target for every application in the process (at most 1,024 targets; a
    /// target's scopes are the same for all).
    static func sortedScopes(ofTarget target: String) -> [String] {
        targetScopes.value(for: target) { ScopeSet.sortedScopes(spaceDelimited: target) }
    }

    private static let targetScopes = KeptValues<String, [String]>(limit: 1_024)

    /// The fields, with the access token and the raw ID token shown as `<redacted>` (`dump`,
    /// debuggers): printing a result never shows a token.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "accessToken": "<redacted>", "tokenType": tokenType, "expiresOn": expiresOn, "scopes": scopes, "account": account,
            "tenantID": tenantID, "idToken": (idToken == nil ? nil : "<redacted>") as Any, "idTokenClaims": idTokenClaims as Any,
            "correlationID": correlationID, "tokenSource": tokenSource, "authority": authority,
            "isExtendedLifetimeToken": isExtendedLifetimeToken,
        ], displayStyle: .struct)
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
