import Foundation
import MSALCore
import MSALWebAuth
import Synchronization

/// Azure AD B2C and AD FS dialects of the local provider.
///
/// B2C (one tenant, ``b2cTenant``, with the policies added by ``addB2CPolicy(_:)``), under
/// `/tfp/{tenant name or ID}/{policy}`:
/// - `GET …/v2.0/.well-known/openid-configuration`, issuer `http://127.0.0.1:PORT/<tenant ID>/v2.0/`
///   (with the trailing slash, as B2C's issuer),
/// - `GET …/oauth2/v2.0/authorize`, `POST …/oauth2/v2.0/token`, `POST …/oauth2/v2.0/devicecode`.
///   The ID token has `tfp` (the policy), `sub` = `oid` (B2C's default subject), `tid`, `name` and
///   `emails`, and no `preferred_username` (B2C sends none by default); with `client_info=1` the
///   response's `client_info` is `uid` = `<oid>-<policy lowercased>`, `utid` = the tenant ID, as
///   B2C answers MSAL. Real B2C has no device authorization endpoint; this one is for tests.
///
/// AD FS (2019 and later) under `/adfs`: `GET /adfs/.well-known/openid-configuration` (issuer
/// `http://127.0.0.1:PORT/adfs`), `GET /adfs/oauth2/authorize`, `POST /adfs/oauth2/token`,
/// `POST /adfs/oauth2/devicecode`, `GET /adfs/discovery/keys`. The ID token has `sub`, `upn` and
/// `unique_name`, no `tid` or `oid`; `client_info` is never sent (AD FS does not know it).
extension LocalIdentityProvider {
    /// The local B2C tenant: its name (`contosob2c.onmicrosoft.com`) and ID (a fixed GUID), both
    /// accepted as the tenant segment of a B2C authority.
    public static let b2cTenant = (name: "contosob2c.onmicrosoft.com", id: "5c1e7a2d-9b3f-4e6a-8d0c-7f2b4a6e9c13")

    /// Serves a B2C policy (user flow or custom policy, e.g. `B2C_1_SignUpSignIn`), matched
    /// case-insensitively. Any user of the provider can sign in through it.
    public func addB2CPolicy(_ policy: String) {
        state.withLock { $0.b2cPolicies[policy.lowercased()] = policy }
    }

    /// Whether ``addB2CPolicy(_:)`` added this policy (ignoring case).
    func isB2CPolicy(_ policy: String) -> Bool {
        state.withLock { $0.b2cPolicies[policy.lowercased()] != nil }
    }

    /// The B2C authority of a policy: `http://127.0.0.1:PORT/tfp/<tenant name>/<policy>`, for
    /// `Authority(_:type:knownAuthorities:)` with `127.0.0.1:PORT` in `knownAuthorities`.
    /// - Parameter policy: a policy added with ``addB2CPolicy(_:)``.
    public func b2cAuthority(policy: String) -> String {
        "\(baseString)/tfp/\(Self.b2cTenant.name)/\(policy)"
    }

    /// The AD FS authority: `http://127.0.0.1:PORT/adfs`, for `Authority(_:type: .adfs)`.
    public func adfsAuthority() -> String {
        "\(baseString)/adfs"
    }

    // MARK: - Discovery

    func b2cConfiguration(tenantSegment: String, policy: String, _ context: RequestContext) -> HTTPServerResponse {
        guard resolveTenant(tenantSegment, dialect: .b2c(policy: policy)) != nil else { return unknownTenant(tenantSegment, context) }
        let prefix = "\(context.base)/tfp/\(tenantSegment)/\(policy)"
        return .json(Self.discoveryDocument(
            issuer: "\(context.base)/\(Self.b2cTenant.id)/v2.0/",
            authorization: "\(prefix)/oauth2/v2.0/authorize", token: "\(prefix)/oauth2/v2.0/token",
            device: "\(prefix)/oauth2/v2.0/devicecode", keys: "\(prefix)/discovery/v2.0/keys",
            claims: ["sub", "iss", "aud", "exp", "iat", "nbf", "name", "oid", "tid", "emails", "tfp"]))
    }

    func adfsConfiguration(_ context: RequestContext) -> HTTPServerResponse {
        let base = "\(context.base)/adfs"
        return .json(Self.discoveryDocument(
            issuer: base, authorization: "\(base)/oauth2/authorize/", token: "\(base)/oauth2/token/",
            device: "\(base)/oauth2/devicecode", keys: "\(base)/discovery/keys",
            claims: ["aud", "iss", "iat", "exp", "sub", "upn", "unique_name", "nonce", "apptype", "appid", "ver"]))
    }

    private static func discoveryDocument(
        issuer: String, authorization: String, token: String, device: String, keys: String, claims: [String]
    ) -> [String: JSONValue] {
        let strings: (([String]) -> JSONValue) = { .array($0.map(JSONValue.string)) }
        return [
            "issuer": .string(issuer),
            "authorization_endpoint": .string(authorization),
            "token_endpoint": .string(token),
            "device_authorization_endpoint": .string(device),
            "jwks_uri": .string(keys),
            "response_types_supported": strings(["code", "id_token", "code id_token"]),
            "response_modes_supported": strings(["query", "fragment", "form_post"]),
            "scopes_supported": strings(["openid", "offline_access"]),
            "subject_types_supported": strings(["pairwise"]),
            "id_token_signing_alg_values_supported": strings(["none"]),
            "claims_supported": strings(claims),
        ]
    }

    // MARK: - Tokens

    /// A token response of the B2C or AD FS dialect (see the extension's summary for the claims).
    func issueTokens(
        user: User, clientID: String, granted: [String], dialect: Dialect, wantsClientInfo: Bool, nonce: String?,
        issuance: Issuance, _ context: RequestContext
    ) -> HTTPServerResponse {
        let issued = context.now.timeIntervalSince1970.rounded(.down)
        let objectID = user.objectID.lowercased()
        var body: [String: JSONValue] = [
            "token_type": .string("Bearer"),
            "scope": .string(granted.joined(separator: " ")),
            "expires_in": .number(issuance.lifetime.rounded()),
            "access_token": .string(TokenMint.randomToken(bytes: 48)),
        ]
        var claims: [String: JSONValue] = [
            "aud": .string(clientID), "iat": .number(issued), "exp": .number(issued + 3600),
        ]
        switch dialect {
        case .b2c(let policy):
            let tenantID = Self.b2cTenant.id
            let canonicalPolicy = state.withLock { $0.b2cPolicies[policy.lowercased()] } ?? policy
            claims.merge([
                "iss": .string("\(context.base)/\(tenantID)/v2.0/"), "sub": .string(objectID), "oid": .string(objectID),
                "tid": .string(tenantID), "name": .string(user.name), "emails": .array([.string(user.username)]),
                "tfp": .string(canonicalPolicy), "nbf": .number(issued), "ver": .string("1.0"),
            ]) { _, new in new }
            if wantsClientInfo {
                body["client_info"] = .string(ClientInfo(uniqueID: "\(objectID)-\(canonicalPolicy.lowercased())", uniqueTenantID: tenantID).encoded)
            }
        case .adfs:
            claims.merge([
                "iss": .string("\(context.base)/adfs"),
                "sub": .string(TokenMint.pairwiseSubject(objectID: objectID, clientID: clientID)),
                "upn": .string(user.username), "unique_name": .string(user.username),
                "apptype": .string("Public"), "appid": .string(clientID), "ver": .string("1.0"),
            ]) { _, new in new }
        case .entra:
            preconditionFailure("Entra responses are built by issueTokens(username:…)")
        }
        if let nonce { claims["nonce"] = .string(nonce) }
        if granted.contains("openid") { body["id_token"] = .string(TokenMint.unsignedJWT(claims)) }
        if granted.contains("offline_access") {
            let refreshToken = TokenMint.randomToken(bytes: 64)
            let now = context.now
            state.withLock { state in
                state.refreshGrants[refreshToken] = ProviderState.RefreshGrant(
                    username: user.username.lowercased(), clientID: clientID, scopes: granted, issuedAt: now,
                    expiresAt: now.addingTimeInterval(issuance.refreshLifetime), revoked: false)
            }
            body["refresh_token"] = .string(refreshToken)
            notifyStateChange()
        }
        var response = HTTPServerResponse.json(body)
        response.headers["Cache-Control"] = "no-store"
        response.headers["Pragma"] = "no-cache"
        return response
    }
}
