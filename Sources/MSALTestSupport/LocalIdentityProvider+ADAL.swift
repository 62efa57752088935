public import Foundation
public import MSALCache
public import MSALCore
import Synchronization

// What an ADAL-era app holds: a refresh token issued by the v1.0 endpoint for a resource, which
// Entra ID also accepts at the v2.0 token endpoint (an ADAL refresh token is a multi-resource
// refresh token). The provider mints one directly — it has no v1.0 endpoints — so tests and
// `msal dev-provider` can build the caches ADAL left behind and migrate them.

extension LocalIdentityProvider {
    /// The tokens an ADAL-era app got from a v1.0 sign-in, as ADAL cached them.
    public struct LegacyTokens: Sendable, Hashable {
        /// The refresh token; the provider's v2.0 token endpoint redeems it for `clientID`.
        public var refreshToken: String
        /// The access token for ``resource`` (a random string, as every access token here).
        public var accessToken: String
        /// When the access token expires.
        public var expiresOn: Date
        /// Seconds the access token was valid for when issued.
        public var expiresIn: Int
        /// The user's sign-in name: ADAL's `userId` (the `upn` claim).
        public var username: String
        /// The user's object ID in ``tenantID`` (a guest object ID outside the home tenant).
        public var objectID: String
        /// The tenant the tokens were issued in.
        public var tenantID: String
        /// The home tenant of the user, when ``tenantID`` is another one (ADAL's `identityProvider`
        /// is then `https://sts.windows.net/<home tenant>/`); `nil` in the home tenant.
        public var homeTenantID: String?
        /// The client the tokens were issued to.
        public var clientID: String
        /// The v1 resource.
        public var resource: String
        /// The authority ADAL used: `http://127.0.0.1:PORT/<tenant>`.
        public var authority: String

        /// The ID token ADAL kept in the item's `userInformation` (unsigned, as this provider's ID
        /// tokens): `aud` the client, `iss` the tenant, `upn`, `oid`, `tid`, `sub`, and `idp` for a guest.
        public var rawIDToken: String {
            var claims: [String: JSONValue] = [
                "aud": .string(clientID), "iss": .string(authority), "upn": .string(username), "oid": .string(objectID),
                "tid": .string(tenantID), "sub": .string(objectID), "ver": .string("1.0"),
            ]
            if let homeTenantID { claims["idp"] = .string("https://sts.windows.net/\(homeTenantID)/") }
            return TokenMint.unsignedJWT(claims)
        }

        /// The item ADAL for iOS/macOS kept for these tokens (``ADALTokenCacheItem``): resource,
        /// authority, client ID, tokens, expiry and the ID token.
        public var adalTokenCacheItem: ADALTokenCacheItem {
            ADALTokenCacheItem(
                resource: resource, authority: authority, clientID: clientID, accessToken: accessToken, accessTokenType: "Bearer",
                refreshToken: refreshToken, expiresOn: expiresOn, rawIDToken: rawIDToken, userID: username, isUserIDDisplayable: true)
        }

        /// The keyed item ADAL for iOS/macOS stored for these tokens: service
        /// `MSOpenTech.ADAL.1|<authority>|<resource>|<client ID>`, account the user ID, the archived
        /// ``adalTokenCacheItem``. Holds the tokens.
        /// - Throws: ``MSALError`` if the item cannot be archived.
        public func adalKeyedItem() throws(MSALError) -> ADALKeyedItem {
            try ADALKeyedItemArchive.keyedItem(adalTokenCacheItem, userID: username)
        }

        /// The element of an `accessTokens.json` list that ADAL for Python writes for these tokens
        /// (ADAL for Python `TokenResponseFields`; `expiresOn` as `str()` of a local `datetime`).
        /// Holds the tokens: write it only where a token cache would go.
        /// - Parameter timeZone: the zone `expiresOn` is written in; default the machine's.
        /// - Returns: a JSON object.
        public func adalPythonEntry(timeZone: TimeZone = .current) -> JSONValue {
            var entry: [String: JSONValue] = [
                "tokenType": .string("Bearer"),
                "expiresIn": .number(Double(expiresIn)),
                "expiresOn": .string(LocalIdentityProvider.pythonLocalTime(expiresOn, timeZone: timeZone)),
                "resource": .string(resource),
                "accessToken": .string(accessToken),
                "refreshToken": .string(refreshToken),
                "oid": .string(objectID),
                "userId": .string(username),
                "isUserIdDisplayable": .bool(true),
                "isMRRT": .bool(true),
                "tenantId": .string(tenantID),
                "_clientId": .string(clientID),
                "_authority": .string(authority),
            ]
            if let homeTenantID { entry["identityProvider"] = .string("https://sts.windows.net/\(homeTenantID)/") }
            return .object(entry)
        }
    }

    /// Issues the refresh token (and access token) an ADAL-era app would hold after signing
    /// `username` in at the v1.0 endpoint of `tenant` for `resource`: a token the v2.0 token
    /// endpoint redeems for `clientID` at any tenant of the user, like any refresh token of this
    /// provider, until it expires (``refreshTokenLifetime``) or is revoked
    /// (``revokeRefreshToken(_:)``, ``revokeRefreshTokens(username:)``).
    /// - Parameters:
    ///   - username: a user of the provider, any case.
    ///   - clientID: the client; must be registered when the provider registers clients.
    ///   - resource: the v1 resource, e.g. `https://management.core.windows.net/`.
    ///   - tenant: the tenant ID or domain the user signed in at; default the user's home tenant.
    ///     Another known tenant makes the user a guest there (the guest object ID of
    ///     ``addGuest(username:tenantID:objectID:)``, or a derived one).
    /// - Returns: the tokens and what ADAL cached with them.
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when no user has this username, the
    ///   client is not registered, the resource is empty, or the tenant is unknown.
    public func issueLegacyRefreshToken(
        username: String, clientID: String, resource: String, tenant: String? = nil
    ) throws(MSALError) -> LegacyTokens {
        guard !resource.isEmpty else { throw .internal(.invalidParameter, "The resource must not be empty.") }
        let now = clock.now()
        let refreshToken = TokenMint.randomToken(bytes: 64)
        let tokens = try state.withLock { (state: inout ProviderState) throws(MSALError) -> LegacyTokens in
            let key = username.lowercased()
            guard let user = state.users[key] else {
                throw .internal(.invalidParameter, "The local identity provider has no user '\(username)'.")
            }
            guard state.registeredClients.isEmpty || state.registeredClients.contains(clientID.lowercased()) else {
                throw .internal(.invalidParameter, "The client '\(clientID)' is not registered with the local identity provider.")
            }
            let home = user.tenantID.lowercased()
            var tenantID = home
            if let tenant {
                let lower = tenant.lowercased()
                if state.tenants.contains(lower) { tenantID = lower }
                else if let mapped = state.domains[lower] { tenantID = mapped }
                else { throw .internal(.invalidParameter, "The local identity provider knows no tenant '\(tenant)'.") }
            }
            let objectID = tenantID == home
                ? user.objectID.lowercased()
                : state.guests[key]?[tenantID] ?? TokenMint.guestObjectID(user: user, tenantID: tenantID)
            state.refreshGrants[refreshToken] = ProviderState.RefreshGrant(
                username: key, clientID: clientID, scopes: ["openid", "profile", "offline_access", resource + "/.default"],
                issuedAt: now, expiresAt: now.addingTimeInterval(state.refreshTokenLifetime), revoked: false,
                familyID: state.families[clientID.lowercased()])
            let lifetime = Int(state.accessTokenLifetime.rounded())
            return LegacyTokens(
                refreshToken: refreshToken, accessToken: TokenMint.randomToken(bytes: 48),
                expiresOn: now.addingTimeInterval(TimeInterval(lifetime)), expiresIn: lifetime,
                username: user.username, objectID: objectID, tenantID: tenantID, homeTenantID: tenantID == home ? nil : home,
                clientID: clientID, resource: resource, authority: "http://127.0.0.1:\(state.port)/\(tenantID)")
        }
        notifyStateChange()
        return tokens
    }

    /// Revokes one refresh token (as an admin revoking a session would): redeeming it then gets
    /// `invalid_grant` with `suberror` `bad_token`. The user's other refresh tokens stay valid.
    /// - Returns: `true` when the provider had issued the token.
    @discardableResult
    public func revokeRefreshToken(_ refreshToken: String) -> Bool {
        let known = state.withLock { state in
            guard state.refreshGrants[refreshToken] != nil else { return false }
            state.refreshGrants[refreshToken]?.revoked = true
            return true
        }
        if known { notifyStateChange() }
        return known
    }

    /// `str()` of a naive Python `datetime` in `timeZone`: `YYYY-MM-DD HH:MM:SS.ffffff`, without the
    /// fraction when the microseconds are zero (what ADAL for Python writes as `expiresOn`).
    static func pythonLocalTime(_ date: Date, timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let whole = date.timeIntervalSince1970.rounded(.down)
        let microseconds = Int(((date.timeIntervalSince1970 - whole) * 1_000_000).rounded(.down))
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: whole))
        func pad(_ value: Int?, _ width: Int) -> String {
            let text = String(value ?? 0)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let base = "\(pad(parts.year, 4))-\(pad(parts.month, 2))-\(pad(parts.day, 2)) \(pad(parts.hour, 2)):\(pad(parts.minute, 2)):\(pad(parts.second, 2))"
        return microseconds == 0 ? base : base + "." + pad(microseconds, 6)
    }

    // MARK: - Control API

    /// `POST /_control/legacy/refresh-token {"username"?, "client_id"?, "resource"?, "tenant"?}` →
    /// `{"adal_entry": {...}}`: ``issueLegacyRefreshToken(username:clientID:resource:tenant:)`` with
    /// the default user, the only registered client (or ``demoClientID`` when none is registered)
    /// and `https://management.core.windows.net/` when not given; the answer is the
    /// `accessTokens.json` element ADAL for Python would have written (in the provider's time zone),
    /// so a script writes `[<adal_entry>]` to a file and migrates it; and `adal_keyed_item`
    /// (`{"service", "account", "value"}`, the value in base64): the keyed item ADAL for iOS/macOS
    /// would have stored (``LegacyTokens/adalKeyedItem()``). Both carry live tokens of this
    /// development provider.
    ///
    /// `POST /_control/revoke {"username"? | "refresh_token"?}` → `{"revoked": n}`: revokes every
    /// refresh token of the user (``revokeRefreshTokens(username:)``) or one token.
    func legacyControl(_ route: String, _ body: [String: JSONValue]) throws(MSALError) -> [String: JSONValue] {
        switch route {
        case "/legacy/refresh-token":
            guard let username = body["username"]?.stringValue ?? defaultUsername else {
                throw .internal(.invalidParameter, "'username' is required: the provider has no default user.")
            }
            let registered = registeredClientIDs
            guard let clientID = body["client_id"]?.stringValue ?? (registered.count <= 1 ? registered.first ?? Self.demoClientID : nil) else {
                throw .internal(.invalidParameter, "'client_id' is required: the provider registers \(registered.count) clients.")
            }
            let tokens = try issueLegacyRefreshToken(
                username: username, clientID: clientID,
                resource: body["resource"]?.stringValue ?? "https://management.core.windows.net/",
                tenant: body["tenant"]?.stringValue)
            let item = try tokens.adalKeyedItem()
            return [
                "adal_entry": tokens.adalPythonEntry(),
                "adal_keyed_item": .object([
                    "service": .string(item.service), "account": .string(item.account), "value": .string(item.value.base64EncodedString()),
                ]),
            ]
        default:  // "/revoke"
            if let token = body["refresh_token"]?.stringValue {
                return ["revoked": .number(revokeRefreshToken(token) ? 1 : 0)]
            }
            guard let username = body["username"]?.stringValue else {
                throw .internal(.invalidParameter, "Give 'username' (every refresh token of the user) or 'refresh_token' (one token).")
            }
            guard users.contains(where: { $0.username.lowercased() == username.lowercased() }) else {
                throw .internal(.invalidParameter, "The local identity provider has no user '\(username)'.")
            }
            let count = state.withLock { state in
                state.refreshGrants.values.filter { $0.username == username.lowercased() && !$0.revoked }.count
            }
            revokeRefreshTokens(username: username)
            return ["revoked": .number(Double(count))]
        }
    }

    /// The control routes of ``legacyControl(_:_:)``.
    static let legacyControlRoutes: Set<String> = ["/legacy/refresh-token", "/revoke"]
}
