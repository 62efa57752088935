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
        let account: Account
        let tokenSource: TokenSource
        let authority: Authority
        let isExtendedLifetimeToken: Bool

        init(token: Token, account: Account, tokenSource: TokenSource, authority: Authority, isExtendedLifetimeToken: Bool) {
            self.token = token
            self.account = account
            self.tokenSource = tokenSource
            self.authority = authority
            self.isExtendedLifetimeToken = isExtendedLifetimeToken
        }
    }

    /// Where the token and what describes it come from.
    private enum Token: Sendable {
        /// Given: a token the provider just issued, with its ID token and claims (if any).
        case given(Given)
        /// A cached access token: its token, type, expiry and tenant (`realm`) are read from the
        /// entry (already read to find it) when asked, its scopes from the entry's `target` (split
        /// and sorted once per target, ``sortedScopes(ofTarget:)``), its ID token and claims from
        /// the account's profile for that tenant (an immutable value: the same answers as reading
        /// them up front, without reading them on every hit).
        case cached(AccessTokenEntry)
    }

    /// The fields of a result whose token was given.
    private struct Given: Sendable {
        let accessToken: String
        let tokenType: String
        let expiresOn: Date
        let scopes: [String]
        let tenantID: String
        let idToken: String?
        let claims: IDTokenClaims?
    }

    private let storage: Storage

    /// The access token, to send as `Authorization: Bearer <token>` (RFC 6750).
    public var accessToken: String {
        switch storage.token {
        case .given(let given): given.accessToken
        case .cached(let entry): entry.secret
        }
    }
    /// The token type, normally `Bearer`.
    public var tokenType: String {
        switch storage.token {
        case .given(let given): given.tokenType
        case .cached(let entry): entry.tokenType
        }
    }
    /// When the access token expires (absolute instant; render in UTC).
    public var expiresOn: Date {
        switch storage.token {
        case .given(let given): given.expiresOn
        case .cached(let entry): entry.expiresOn
        }
    }
    /// The scopes the access token was granted, as the server returned them.
    public var scopes: [String] {
        switch storage.token {
        case .given(let given): given.scopes
        case .cached(let entry): Self.sortedScopes(ofTarget: entry.target)
        }
    }
    /// The account the token belongs to.
    public var account: Account { storage.account }
    /// The tenant the token was issued in (`realm`): a tenant ID for Entra ID.
    public var tenantID: String {
        switch storage.token {
        case .given(let given): given.tenantID
        case .cached(let entry): entry.realm
        }
    }
    /// The raw ID token, if one is cached or was returned.
    public var idToken: String? {
        switch storage.token {
        case .given(let given): given.idToken
        case .cached: idTokenClaims?.rawValue
        }
    }
    /// The claims of the ID token, if one is cached or was returned.
    public var idTokenClaims: IDTokenClaims? {
        switch storage.token {
        case .given(let given): given.claims
        case .cached(let entry): storage.account.claims(ofTenant: entry.realm)
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
            token: .given(Given(
                accessToken: accessToken, tokenType: tokenType, expiresOn: expiresOn, scopes: scopes, tenantID: tenantID,
                idToken: idToken, claims: idTokenClaims)),
            account: account, tokenSource: tokenSource, authority: authority, isExtendedLifetimeToken: isExtendedLifetimeToken)
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
            token: .cached(entry), account: account, tokenSource: .cache, authority: authority, isExtendedLifetimeToken: isExtendedLifetimeToken)
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
