public import Foundation
public import MSALCore

/// A cache an ADAL-era app left behind, read (never written) so that its users move to MSAL
/// without signing in again.
///
/// MSAL's migration path (MSAL for iOS/macOS, "Migrate applications to MSAL for iOS and macOS",
/// *Migrating the account cache*): the app still knows its users by ADAL's `userId` (the UPN);
/// `PublicClientApplication.account(forUsername:)` looks that username up in the MSAL cache and in
/// every legacy cache the configuration names, and the first silent token request with the account
/// redeems the ADAL refresh token at the v2.0 endpoint, which writes MSAL entries. From then on the
/// app uses the MSAL account identifier.
///
/// Conformers: ``ADALPythonTokenCache`` (the `accessTokens.json` list ADAL for Python wrote for the
/// Azure CLI). ADAL's keyed items (`MSOpenTech.ADAL.1|…`), as MSAL for iOS/macOS keeps them beside
/// its own cache, are a second conformer of the same protocol.
///
/// An implementation guarantees:
/// - **Read-only.** ``read()`` never creates, changes, locks, renames or deletes anything where the
///   legacy cache lives.
/// - **Entry by entry.** An entry that cannot be used (malformed, a service principal, no user, no
///   refresh token) is left out of ``LegacyTokenCacheContents/entries`` and reported in
///   ``LegacyTokenCacheContents/skipped`` with its reason; the other entries are still returned.
/// - **No secrets in reasons or errors.** Reasons and error messages name fields and positions,
///   never a token's value, and never a user ID (reported in its own field, which is PII).
public protocol LegacyTokenCache: Sendable {
    /// What the cache is and where it is, for messages and logs, e.g.
    /// `ADAL for Python cache /home/alice/.azure/accessTokens.json`. Contains no secret.
    var name: String { get }

    /// Reads every entry.
    /// - Returns: the usable user entries, in the cache's order, and the entries left out with why.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the cache as a whole cannot be read: it
    ///   does not exist, cannot be opened, or is not a cache of this kind (the message says which
    ///   and what to do). A caller looking accounts up logs it and goes on without this cache.
    func read() throws(MSALError) -> LegacyTokenCacheContents
}

/// What a ``LegacyTokenCache`` holds: usable user entries and the entries left out.
public struct LegacyTokenCacheContents: Sendable {
    /// The entries of users with a refresh token, in the cache's order.
    public var entries: [LegacyTokenEntry]
    /// The entries left out, in the cache's order, each with its reason.
    public var skipped: [LegacySkippedEntry]

    /// Creates contents.
    public init(entries: [LegacyTokenEntry] = [], skipped: [LegacySkippedEntry] = []) {
        self.entries = entries
        self.skipped = skipped
    }
}

/// One user's tokens for one resource, as ADAL cached them: its refresh token is what a migration
/// redeems at the v2.0 endpoint.
///
/// Field names follow ADAL's (ADAL for Python `TokenResponseFields` and the `_authority`/`_clientId`
/// cache metadata). `description` never shows the refresh token.
public struct LegacyTokenEntry: Sendable, Hashable, CustomStringConvertible {
    /// The ``LegacyTokenCache/name`` of the cache the entry came from.
    public var source: String
    /// The entry's position in its cache, from 1 (the first element of an `accessTokens.json` list is 1).
    public var position: Int
    /// The authority ADAL used, as it wrote it (`_authority`), e.g.
    /// `https://login.microsoftonline.com/common` or `https://login.microsoftonline.com/<tenant ID>`.
    public var authority: String
    /// The application (client) ID the tokens were issued to (`_clientId`).
    public var clientID: String
    /// The v1 resource of the access token (`resource`), e.g. `https://management.core.windows.net/`;
    /// `nil` when the entry has none. ``ScopeSet/defaultScope(forResource:)`` turns it into a scope.
    public var resource: String?
    /// ADAL's user ID (`userId`): the UPN (`upn` claim), else the `email`, else the `sub`. The
    /// username an app that used ADAL kept. PII.
    public var userID: String
    /// Whether ADAL found `userID` displayable (`isUserIdDisplayable`: from `upn` or `email`);
    /// `nil` when the entry does not say.
    public var isUserIDDisplayable: Bool?
    /// The MSAL home account ID (`<uid>.<utid>` of `client_info`), when the legacy cache kept the
    /// client info (ADAL for iOS/macOS 2.6 and later did); `nil` for ADAL for Python.
    public var homeAccountID: String?
    /// The user's object ID (`oid`) in the token's tenant; `nil` when absent.
    public var objectID: String?
    /// The tenant ID of the token (`tenantId`, ADAL's copy of the `tid` claim); `nil` when absent
    /// (the Azure CLI leaves it out of the file).
    public var tenantID: String?
    /// `givenName` (`given_name` claim), if present.
    public var givenName: String?
    /// `familyName` (`family_name` claim), if present.
    public var familyName: String?
    /// `identityProvider` (`idp` claim), if present: the user is a guest from that provider.
    public var identityProvider: String?
    /// The refresh token. A secret: never logged, printed or shown in a description.
    public var refreshToken: String
    /// When the cached access token expires (`expiresOn`, which ADAL for Python writes in local
    /// time); `nil` when the entry has no expiry. Past expiries are normal: only the refresh token
    /// matters for a migration.
    public var expiresOn: Date?
    /// Seconds the access token was valid for when issued (`expiresIn`), if present.
    public var expiresIn: Int?
    /// The token type (`tokenType`), normally `Bearer`.
    public var tokenType: String?
    /// Whether the refresh token is a multi-resource refresh token (`isMRRT`): Entra ID's refresh
    /// tokens are, and redeem for any resource. `false` when the entry does not say.
    public var isMRRT: Bool
    /// The family (FOCI) the refresh token belongs to, when the legacy cache kept a family refresh
    /// token; `nil` otherwise (always for ADAL for Python).
    public var familyID: String?

    /// Creates an entry.
    public init(
        source: String, position: Int, authority: String, clientID: String, resource: String?, userID: String,
        refreshToken: String, isUserIDDisplayable: Bool? = nil, homeAccountID: String? = nil, objectID: String? = nil,
        tenantID: String? = nil, givenName: String? = nil, familyName: String? = nil, identityProvider: String? = nil,
        expiresOn: Date? = nil, expiresIn: Int? = nil, tokenType: String? = nil, isMRRT: Bool = false, familyID: String? = nil
    ) {
        self.source = source
        self.position = position
        self.authority = authority
        self.clientID = clientID
        self.resource = resource
        self.userID = userID
        self.refreshToken = refreshToken
        self.isUserIDDisplayable = isUserIDDisplayable
        self.homeAccountID = homeAccountID
        self.objectID = objectID
        self.tenantID = tenantID
        self.givenName = givenName
        self.familyName = familyName
        self.identityProvider = identityProvider
        self.expiresOn = expiresOn
        self.expiresIn = expiresIn
        self.tokenType = tokenType
        self.isMRRT = isMRRT
        self.familyID = familyID
    }

    /// The tenant the tokens belong to: ``tenantID`` when the entry has one, else the authority's
    /// tenant segment when it names one tenant (not `common`, `organizations` or `consumers`),
    /// lowercased; `nil` when neither tells.
    public var tenant: String? {
        if let tenantID, !tenantID.isEmpty { return tenantID.lowercased() }
        guard let segment = URL(string: authority)?.path.split(separator: "/").first.map({ $0.lowercased() }),
              !["common", "organizations", "consumers", "adfs"].contains(segment)
        else { return nil }
        return segment
    }

    /// The entry's authority as a Microsoft Entra ID authority with a tenant segment (`common`,
    /// `organizations`, a tenant ID or domain), the only kind a migration redeems at; `nil` for AD FS
    /// (`/adfs`) and anything that does not parse as one.
    public var entraAuthority: Authority? {
        let firstSegment = URL(string: authority)?.path.split(separator: "/").first?.lowercased()
        guard firstSegment != "adfs", let parsed = try? Authority(authority, type: .aad), parsed.tenant != nil else { return nil }
        return parsed
    }

    /// The entry without its refresh token: source, position, authority, client ID and resource.
    /// The user ID is PII and left out too.
    public var description: String {
        "LegacyTokenEntry(\(source) #\(position), authority: \(authority), clientID: \(clientID), resource: \(resource ?? "-"))"
    }
}

/// An entry of a legacy cache that is not a usable user entry, and why.
public struct LegacySkippedEntry: Sendable, Hashable, CustomStringConvertible {
    /// Why an entry was left out.
    public enum Reason: Sendable, Hashable {
        /// A service principal's credential (Azure CLI `servicePrincipalId`): an app, not a user;
        /// never read as a user.
        case servicePrincipal
        /// No user ID: an app-only token (client credentials), which has no user to migrate.
        case noUser
        /// A user entry without a refresh token: nothing to redeem; the user signs in again.
        case noRefreshToken
        /// Not an entry of this cache's format: the message says which field is wrong (never its value).
        case malformed(String)
    }

    /// The ``LegacyTokenCache/name`` of the cache.
    public var source: String
    /// The entry's position in its cache, from 1.
    public var position: Int
    /// Why it was left out.
    public var reason: Reason
    /// The entry's user ID when it has a readable one (PII), else `nil`.
    public var userID: String?
    /// The entry's `_authority` when it has a readable one.
    public var authority: String?
    /// The entry's `resource` when it has a readable one.
    public var resource: String?

    /// Creates a skipped entry.
    public init(source: String, position: Int, reason: Reason, userID: String? = nil, authority: String? = nil, resource: String? = nil) {
        self.source = source
        self.position = position
        self.reason = reason
        self.userID = userID
        self.authority = authority
        self.resource = resource
    }

    /// The reason as a sentence, without the user ID or any secret.
    public var message: String {
        switch reason {
        case .servicePrincipal: "a service principal's credential, not a user (service principals are not migrated)"
        case .noUser: "no userId: an app-only token with no user to migrate"
        case .noRefreshToken: "no refresh token: nothing to redeem, the user signs in again"
        case .malformed(let detail): "malformed: \(detail)"
        }
    }

    /// `<source> #<position>: <message>`.
    public var description: String { "\(source) #\(position): \(message)" }
}
