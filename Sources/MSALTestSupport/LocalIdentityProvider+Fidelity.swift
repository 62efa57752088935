public import Foundation
public import MSALCore
import Synchronization

// More of Entra ID's behaviour: family of client IDs (FOCI), `refresh_in` and `ext_expires_in`,
// declined scopes, registered clients, invited guests, the suberror table, one request log for
// every endpoint, and a reset.

extension LocalIdentityProvider {
    // MARK: - Suberrors

    /// The `suberror` values Entra sends with `invalid_grant` (and `unauthorized_client`) that
    /// MSAL reads, each with a representative AADSTS code and message.
    ///
    /// The names are the ones Entra's token endpoint sends and MSAL classifies ("Handle errors and
    /// exceptions in MSAL": `UiRequiredExceptionClassification`; MSAL for Android's
    /// `OAuth2SubErrorCode`); the codes are representative members of Entra's AADSTS table, not
    /// the only codes Entra pairs with each suberror. ``failure`` makes an injectable failure.
    public enum SubError: String, Sendable, Hashable, CaseIterable {
        /// The user can fix it during interactive sign-in, e.g. multi-factor authentication is
        /// required (`AADSTS50076`).
        case basicAction = "basic_action"
        /// The user must fix it outside the sign-in, e.g. the device must become compliant
        /// (`AADSTS53000`).
        case additionalAction = "additional_action"
        /// Interactive sign-in only shows a message, e.g. the account is disabled (`AADSTS50057`).
        case messageOnly = "message_only"
        /// The user or an administrator has not consented to the app (`AADSTS65001`).
        case consentRequired = "consent_required"
        /// The user's password has expired (`AADSTS50055`).
        case userPasswordExpired = "user_password_expired"
        /// The refresh token is not valid: revoked, or expired from inactivity (`AADSTS70000`,
        /// `AADSTS700082`); MSAL deletes it.
        case badToken = "bad_token"
        /// The refresh token expired by a sign-in frequency policy (`AADSTS70043`).
        case tokenExpired = "token_expired"
        /// A family refresh token was sent by a client outside the family; MSAL falls back to the
        /// app's own refresh token (`AADSTS70000`).
        case clientMismatch = "client_mismatch"
        /// The app must enforce Intune app protection policies (`unauthorized_client`,
        /// `AADSTS53005`), MSAL's "server protection policies required".
        case protectionPolicyRequired = "protection_policy_required"

        /// The OAuth `error` Entra sends with it: `unauthorized_client` for
        /// ``protectionPolicyRequired``, else `invalid_grant`.
        public var error: String {
            self == .protectionPolicyRequired ? "unauthorized_client" : "invalid_grant"
        }

        /// The representative AADSTS code.
        public var code: Int {
            switch self {
            case .basicAction: 50076
            case .additionalAction: 53000
            case .messageOnly: 50057
            case .consentRequired: 65001
            case .userPasswordExpired: 50055
            case .badToken: 70000
            case .tokenExpired: 70043
            case .clientMismatch: 70000
            case .protectionPolicyRequired: 53005
            }
        }

        /// The message after `AADSTSnnnn: ` in `error_description`.
        public var message: String {
            switch self {
            case .basicAction:
                "Due to a configuration change made by your administrator, or because you moved to a new location, you must use multi-factor authentication to access the resource."
            case .additionalAction: "Device is not in required device state: compliant. Conditional Access policy requires a compliant device, and the device is not compliant."
            case .messageOnly: "The user account is disabled."
            case .consentRequired: "The user or administrator has not consented to use the application. Send an interactive authorization request for this user and resource."
            case .userPasswordExpired: "The password is expired."
            case .badToken: "The provided value for the input parameter 'refresh_token' is not valid."
            case .tokenExpired: "The refresh token has expired or is invalid due to sign-in frequency checks by conditional access."
            case .clientMismatch: "The family refresh token was issued to a client of another family; the client is not a member of the token's family."
            case .protectionPolicyRequired: "Application needs to enforce Intune protection policies."
            }
        }

        /// The failure for ``LocalIdentityProvider/failNextTokenRequests(with:count:)``: HTTP 400
        /// with ``error``, this suberror, ``code`` and Entra's description built from ``message``.
        public var failure: Failure {
            .oauthError(error: error, subError: rawValue, errorCodes: [code], status: 400)
        }
    }

    // MARK: - Family of client IDs (FOCI)

    /// Makes a client a member of a family of client IDs, as Microsoft's first-party apps are.
    ///
    /// Token responses to the client carry `foci: "<familyID>"`; its refresh tokens become family
    /// refresh tokens, which any client of the same family may redeem at the token endpoint. A
    /// family refresh token sent by a client outside the family gets HTTP 400 `invalid_grant`
    /// with `suberror` `client_mismatch` (MSAL then uses the app's own refresh token).
    /// - Parameters:
    ///   - clientID: the application (client) ID, matched case-insensitively.
    ///   - familyID: the family; Entra has one, `"1"`.
    public func addFamilyClient(_ clientID: String, familyID: String = "1") {
        state.withLock { $0.families[clientID.lowercased()] = familyID }
    }

    /// The family members: client ID (lowercased) → family ID.
    public var familyClients: [String: String] {
        state.withLock { $0.families }
    }

    // MARK: - Registered clients

    /// Registers an application (client) ID. Once any client is registered, requests from other
    /// client IDs get `unauthorized_client` with `AADSTS700016` ("Application with identifier …
    /// was not found in the directory") at the device authorization and token endpoints, and an
    /// error page at the authorize endpoint, as from Entra. With none registered (the default)
    /// every client ID is accepted.
    public func registerClient(_ clientID: String) {
        _ = state.withLock { $0.registeredClients.insert(clientID.lowercased()) }
    }

    /// The registered client IDs, lowercased and sorted; empty when every client ID is accepted.
    public var registeredClientIDs: [String] {
        state.withLock { $0.registeredClients.sorted() }
    }

    // MARK: - Guests

    /// Invites a user as a guest into another tenant (Entra B2B collaboration): the tenant
    /// becomes known, and tokens for the user at that tenant carry its `tid`, `iss`, and the
    /// guest's own `oid`, while `client_info` keeps the home `uid`/`utid`.
    ///
    /// Without an invitation a user can still sign in at any known tenant (with a derived guest
    /// `oid`) unless ``guestsMustBeInvited`` is set.
    /// - Parameters:
    ///   - username: a user added before; matched case-insensitively.
    ///   - tenantID: the resource tenant, a GUID string.
    ///   - objectID: the guest's object ID in that tenant; by default a stable GUID derived from
    ///     the user and the tenant.
    /// - Returns: the guest object ID.
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when no user has this username.
    @discardableResult
    public func addGuest(username: String, tenantID: String, objectID: String? = nil) throws(MSALError) -> String {
        let key = username.lowercased()
        let tenant = tenantID.lowercased()
        let guestID = try state.withLock { (state: inout ProviderState) throws(MSALError) -> String in
            guard let user = state.users[key] else {
                throw .internal(.invalidParameter, "The local identity provider has no user '\(username)'.")
            }
            let guestID = objectID?.lowercased() ?? TokenMint.guestObjectID(user: user, tenantID: tenant)
            state.tenants.insert(tenant)
            state.guests[key, default: [:]][tenant] = guestID
            return guestID
        }
        notifyStateChange()
        return guestID
    }

    /// When `true`, a user signing in or refreshing at a tenant other than home that they were
    /// not invited to with ``addGuest(username:tenantID:objectID:)`` gets `invalid_grant` with
    /// `AADSTS50020` ("User account … does not exist in tenant"), as from Entra. Default `false`.
    public var guestsMustBeInvited: Bool {
        get { state.withLock { $0.guestsMustBeInvited } }
        set { state.withLock { $0.guestsMustBeInvited = newValue } }
    }

    // MARK: - Token response fields

    /// Seconds after which the client should refresh proactively, sent as `refresh_in` in token
    /// responses, as Entra does for long-lived access tokens (MSAL refreshes in the background
    /// once it has passed). Default `nil`: no `refresh_in`.
    public var refreshIn: TimeInterval? {
        get { state.withLock { $0.refreshIn } }
        set { state.withLock { $0.refreshIn = newValue } }
    }

    /// Seconds of the extended lifetime, sent as `ext_expires_in`: how long the access token
    /// stays usable when Entra is unavailable (the resilience extension). Default `nil`: the
    /// same as ``accessTokenLifetime``.
    public var extendedExpiresIn: TimeInterval? {
        get { state.withLock { $0.extendedExpiresIn } }
        set { state.withLock { $0.extendedExpiresIn = newValue } }
    }

    // MARK: - Declined scopes

    /// Sets the scopes every token response leaves out of `scope` (matched case-insensitively),
    /// as Entra silently leaves out requested scopes that are not consented; the response is
    /// still HTTP 200, and MSAL reports the difference as declined scopes. Pass `[]` to grant all.
    public func declineScopes(_ scopes: [String]) {
        state.withLock { $0.declinedScopes = Set(scopes.map { $0.lowercased() }) }
    }

    /// The scopes every token response leaves out, lowercased and sorted.
    public var declinedScopes: [String] {
        state.withLock { $0.declinedScopes.sorted() }
    }

    /// Leaves `scopes` out of the `scope` of the next `count` successful token responses only
    /// (added to ``declinedScopes``). Error responses do not use them up.
    public func declineScopesInNextTokenResponses(_ scopes: [String], count: Int = 1) {
        guard count > 0 else { return }
        let set = Set(scopes.map { $0.lowercased() })
        state.withLock { $0.declinedScopesOnce.append(contentsOf: repeatElement(set, count: count)) }
    }

    // MARK: - Users and tenants

    /// The user a person signs in as when nothing else says who (no ``UserAction``, no known
    /// `login_hint`), and the one the device login page offers: the first user the provider was
    /// created with, lowercased; `nil` when it has no users. Setting a username nobody has makes
    /// such sign-ins stay on the sign-in page (`AADSTS50034`).
    public var defaultUsername: String? {
        get { state.withLock { $0.defaultUsername } }
        set { state.withLock { $0.defaultUsername = newValue?.lowercased() } }
    }

    /// Every user, sorted by username.
    public var users: [User] {
        state.withLock { $0.users.values.sorted { $0.username.lowercased() < $1.username.lowercased() } }
    }

    /// Every known tenant ID (lowercased, sorted) with the domains mapped to it (sorted).
    public var tenants: [(tenantID: String, domains: [String])] {
        state.withLock { state in
            state.tenants.sorted().map { id in (id, state.domains.filter { $0.value == id }.keys.sorted()) }
        }
    }

    // MARK: - The request log

    /// Every request to an Entra endpoint (discovery, instance discovery, keys, device
    /// authorization, authorize, token, the device login page, and unknown paths), oldest first.
    /// Requests to the control API are not recorded.
    public var requests: [RecordedRequest] {
        state.withLock { $0.requests }
    }

    /// How many recorded requests had exactly this percent-decoded path, e.g.
    /// `/common/oauth2/v2.0/token`.
    public func requestCount(path: String) -> Int {
        state.withLock { $0.requests.reduce(0) { $0 + ($1.path == path ? 1 : 0) } }
    }

    /// How many recorded requests went to this endpoint.
    public func requestCount(endpoint: RecordedRequest.Endpoint) -> Int {
        state.withLock { $0.requests.reduce(0) { $0 + ($1.endpoint == endpoint ? 1 : 0) } }
    }

    // MARK: - Reset

    /// Forgets what sign-ins left behind: issued device codes, authorization codes and refresh
    /// tokens, the browser session, the request log and the instance discovery count, queued
    /// failures, queued declined scopes and the next user action. Keeps users, guests, tenants,
    /// clients, families, redirect URIs and every setting.
    public func reset() {
        state.withLock { state in
            state.requests = []
            state.failures = []
            state.declinedScopesOnce = []
            state.nextUserAction = nil
            state.sessionUsername = nil
            state.sessionState = UUID().uuidString.lowercased()
            state.deviceAuthorizations = [:]
            state.authorizationCodes = [:]
            state.refreshGrants = [:]
            state.instanceDiscoveryRequestCount = 0
        }
        notifyStateChange()
    }

    // MARK: - Persistence

    /// Calls `handler` after each change to what ``persistentState()`` holds (a refresh token
    /// issued or revoked, a user or guest added, a reset), on the thread that made it, outside
    /// the provider's lock; replaces the handler set before. Pass `nil` to stop.
    public func onStateChange(_ handler: (@Sendable () -> Void)?) {
        stateChangeHandler.withLock { $0 = handler }
    }

    func notifyStateChange() {
        stateChangeHandler.withLock { $0 }?()
    }

    /// The users, guests, tenants, domains and refresh tokens, as JSON (schema `version` 1), for
    /// ``restorePersistentState(_:)`` in a later process. Contains live refresh tokens: store it
    /// like a token cache.
    public func persistentState() -> Data {
        let snapshot = state.withLock { state in
            PersistentState(
                version: 1,
                users: state.users.values.sorted { $0.username < $1.username }.map {
                    .init(username: $0.username, objectID: $0.objectID, tenantID: $0.tenantID, name: $0.name)
                },
                tenants: state.tenants.sorted(),
                domains: state.domains,
                guests: state.guests,
                refreshTokens: state.refreshGrants.sorted { $0.key < $1.key }.map { token, grant in
                    .init(refreshToken: token, username: grant.username, clientID: grant.clientID, scopes: grant.scopes,
                          issuedAt: grant.issuedAt.timeIntervalSince1970, expiresAt: grant.expiresAt.timeIntervalSince1970,
                          revoked: grant.revoked, familyID: grant.familyID)
                })
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? encoder.encode(snapshot)) ?? Data("{}".utf8)
    }

    /// Adds what ``persistentState()`` saved: users (replacing those with the same username),
    /// guests, tenants, domains and refresh tokens (which work again, until they expire).
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when the data is not such JSON.
    public func restorePersistentState(_ data: Data) throws(MSALError) {
        let snapshot: PersistentState
        do {
            snapshot = try JSONDecoder().decode(PersistentState.self, from: data)
        } catch {
            throw .internal(.invalidParameter, "The saved provider state is not valid: \(error).")
        }
        guard snapshot.version == 1 else {
            throw .internal(.invalidParameter, "The saved provider state has version \(snapshot.version); this provider reads version 1.")
        }
        state.withLock { state in
            for user in snapshot.users {
                state.add(User(username: user.username, objectID: user.objectID, tenantID: user.tenantID, name: user.name))
            }
            state.tenants.formUnion(snapshot.tenants.map { $0.lowercased() })
            state.domains.merge(snapshot.domains) { _, saved in saved }
            for (username, tenants) in snapshot.guests { state.guests[username, default: [:]].merge(tenants) { _, saved in saved } }
            for saved in snapshot.refreshTokens {
                state.refreshGrants[saved.refreshToken] = ProviderState.RefreshGrant(
                    username: saved.username, clientID: saved.clientID, scopes: saved.scopes,
                    issuedAt: Date(timeIntervalSince1970: saved.issuedAt), expiresAt: Date(timeIntervalSince1970: saved.expiresAt),
                    revoked: saved.revoked, familyID: saved.familyID)
            }
        }
    }
}

/// The JSON of ``LocalIdentityProvider/persistentState()``. Package-visible so that `msal
/// dev-provider` names the field a damaged state file gets wrong, from this one schema.
package struct PersistentState: Codable {
    struct SavedUser: Codable {
        var username: String
        var objectID: String
        var tenantID: String
        var name: String
        enum CodingKeys: String, CodingKey {
            case username, name
            case objectID = "object_id"
            case tenantID = "tenant_id"
        }
    }

    struct SavedRefreshToken: Codable {
        var refreshToken: String
        var username: String
        var clientID: String
        var scopes: [String]
        /// Seconds since 1970, UTC.
        var issuedAt: Double
        var expiresAt: Double
        var revoked: Bool
        var familyID: String?
        enum CodingKeys: String, CodingKey {
            case username, scopes, revoked
            case refreshToken = "refresh_token"
            case clientID = "client_id"
            case issuedAt = "issued_at"
            case expiresAt = "expires_at"
            case familyID = "family_id"
        }
    }

    package var version: Int
    var users: [SavedUser]
    var tenants: [String]
    var domains: [String: String]
    /// username → tenant ID → guest object ID.
    var guests: [String: [String: String]]
    var refreshTokens: [SavedRefreshToken]
    enum CodingKeys: String, CodingKey {
        case version, users, tenants, domains, guests
        case refreshTokens = "refresh_tokens"
    }
}
