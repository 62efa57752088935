public import Foundation
public import MSALCore
import MSALWebAuth
import Synchronization

/// A local, in-process identity provider that speaks the Microsoft Entra ID v2.0 protocol over
/// real HTTP on `127.0.0.1`, for tests, the `msal demo` command and benchmarks.
///
/// It serves, for `{tenant}` = `common`, `organizations`, `consumers`, a known tenant ID or a known
/// domain (Entra's endpoint layout, "Microsoft identity platform and OpenID Connect protocol"):
/// - `GET /{tenant}/v2.0/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4),
/// - `GET /common/discovery/instance` (Entra instance discovery, `api-version` 1.1): this host and
///   the clouds added by ``addInstanceMetadata(preferredNetwork:preferredCache:aliases:)`` are
///   known, any other host gets `invalid_instance`,
/// - `GET /{tenant}/discovery/v2.0/keys` (an empty JWK set: ID tokens are unsigned, `alg` `none`),
/// - `POST /{tenant}/oauth2/v2.0/devicecode` (RFC 8628 §3.1–§3.2),
/// - `GET /{tenant}/oauth2/v2.0/authorize`: the authorization code request with PKCE
///   (RFC 6749 §4.1.1–§4.1.2, RFC 7636 §4.3), where the provider plays the user as
///   ``setNextUserAction(_:)`` says,
/// - `POST /{tenant}/oauth2/v2.0/token` with the `authorization_code` (RFC 6749 §4.1.3,
///   RFC 7636 §4.5–§4.6), `device_code` (RFC 8628 §3.4–§3.5) and `refresh_token` (RFC 6749 §6)
///   grants,
/// - `GET`/`POST /devicelogin`: a small page where a person can approve a user code as a user.
///
/// Errors have Entra's body: `error`, `error_description` (`AADSTSnnnn: …` followed by the trace
/// ID, correlation ID and timestamp lines), `error_codes`, `timestamp`, `trace_id`,
/// `correlation_id`, `error_uri` and, when relevant, `suberror`. The correlation ID echoes the
/// request's `client-request-id` header; the header is echoed back when the request sends
/// `return-client-request-id: true` (Entra's documented behaviour for MSAL's telemetry headers).
///
/// All state sits behind a mutex; every time comes from the injected ``WallClock``. The tokens it
/// issues are for tests only: access tokens are random opaque strings and ID tokens are unsigned
/// JWTs (header `alg` `none`).
public final class LocalIdentityProvider: Sendable {
    /// A user who can sign in.
    public struct User: Sendable, Hashable {
        /// The sign-in name, e.g. `alice@contoso.example`; matched case-insensitively. Becomes
        /// the `preferred_username` claim.
        public var username: String
        /// The object ID (`oid`) in the home tenant, a GUID string.
        public var objectID: String
        /// The home tenant ID (`utid` of `client_info`), a GUID string.
        public var tenantID: String
        /// The display name (`name` claim).
        public var name: String

        /// Creates a user.
        public init(username: String, objectID: String, tenantID: String, name: String) {
            self.username = username
            self.objectID = objectID
            self.tenantID = tenantID
            self.name = name
        }
    }

    /// One request the provider received, kept for assertions and the control API's log.
    ///
    /// Every request to an Entra endpoint is recorded, in the order received; requests to the
    /// control API (`/_control/…`) are not.
    public struct RecordedRequest: Sendable, Hashable {
        /// Which of Entra's endpoints a request went to, from its path.
        public enum Endpoint: String, Sendable, Hashable, CaseIterable {
            /// `GET /{tenant}/v2.0/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4).
            case openIDConfiguration = "openid-configuration"
            /// `GET /common/discovery/instance` (Entra instance discovery).
            case instanceDiscovery = "instance-discovery"
            /// `GET /{tenant}/discovery/v2.0/keys` (the JWK set).
            case keys
            /// `POST /{tenant}/oauth2/v2.0/devicecode` (RFC 8628 §3.1).
            case deviceCode = "devicecode"
            /// `GET /{tenant}/oauth2/v2.0/authorize` (RFC 6749 §4.1.1).
            case authorize
            /// `POST /{tenant}/oauth2/v2.0/token` (RFC 6749 §3.2).
            case token
            /// `GET`/`POST /devicelogin`, the page where a person enters a user code.
            case deviceLogin = "devicelogin"
            /// Any other path (answered 404).
            case other
        }

        /// The HTTP method, e.g. `POST` at the token endpoint, `GET` at the authorize endpoint.
        public var method: String
        /// The percent-decoded path, e.g. `/common/oauth2/v2.0/token`.
        public var path: String
        /// The `grant_type` form parameter, if sent; `nil` for requests other than token requests.
        public var grantType: String?
        /// For a `POST`, the form parameters of the body; otherwise the query parameters.
        /// Contains secrets (device codes, refresh tokens, code verifiers): see ``redacted()``.
        public var formParameters: [String: String]
        /// The request headers, names lowercased.
        public var headers: [String: String]
        /// The endpoint the path names.
        public var endpoint: Endpoint
        /// When the request arrived, from the provider's ``WallClock``.
        public var receivedAt: Date

        /// Creates a record.
        public init(
            method: String, path: String, grantType: String?, formParameters: [String: String], headers: [String: String],
            endpoint: Endpoint = .other, receivedAt: Date = Date(timeIntervalSince1970: 0)
        ) {
            self.method = method
            self.path = path
            self.grantType = grantType
            self.formParameters = formParameters
            self.headers = headers
            self.endpoint = endpoint
            self.receivedAt = receivedAt
        }

        /// Parameters whose values are secrets: codes, tokens, verifiers, assertions, passwords.
        public static let secretParameters: Set<String> = [
            "code", "code_verifier", "code_challenge", "device_code", "refresh_token", "access_token", "id_token",
            "client_secret", "client_assertion", "assertion", "password",
        ]

        /// Headers whose values are secrets.
        public static let secretHeaders: Set<String> = ["authorization", "cookie", "proxy-authorization"]

        /// This record with the value of every parameter in ``secretParameters`` and every header
        /// in ``secretHeaders`` replaced by `<redacted>`, as the control API's log shows it (a
        /// log must never carry a token or a code, as MSAL's logging rules say).
        public func redacted() -> RecordedRequest {
            var copy = self
            for key in copy.formParameters.keys where Self.secretParameters.contains(key) { copy.formParameters[key] = "<redacted>" }
            for key in copy.headers.keys where Self.secretHeaders.contains(key) { copy.headers[key] = "<redacted>" }
            return copy
        }
    }

    /// How an injected token-endpoint failure answers.
    public enum Failure: Sendable, Hashable {
        /// An OAuth error body with Entra's fields (RFC 6749 §5.2). When `description` is nil it
        /// reads `AADSTS<first code>: Injected failure.` plus the trace lines.
        case oauthError(error: String, subError: String? = nil, description: String? = nil, errorCodes: [Int] = [], status: Int = 400)
        /// The status with a short `text/plain` body (e.g. 500, 503).
        case serverError(status: Int)
        /// The status with a 0-byte body.
        case emptyBody(status: Int)
        /// The status with a `text/html` error page, as a proxy or gateway might answer.
        case html(status: Int)
        /// The status (e.g. 429 or 503) with a `Retry-After` header carrying `retryAfter` exactly
        /// as given (delta-seconds such as `"30"`, an HTTP-date, or anything invalid), and the short
        /// `text/plain` body Entra ID sends with a 429 (`Too Many Requests`). RFC 9110 §10.2.3.
        case throttled(status: Int, retryAfter: String)
    }

    /// The demo tenant's ID: a fixed GUID.
    public static let demoTenantID = "8f2b7c1e-4d3a-4b6f-9e0d-2a5c7b9e1f34"
    /// The demo tenant's domain, mapped to ``demoTenantID``.
    public static let demoTenantDomain = "contoso.example"
    /// The demo client ID: a fixed GUID. Any client ID is accepted; this one is for examples.
    public static let demoClientID = "4a1d9e3b-7c2f-4e8a-b5d6-0f3e9c2a7b18"
    /// The user the provider starts with: `alice@contoso.example` in ``demoTenantID``.
    public static let demoUser = User(
        username: "alice@contoso.example",
        objectID: "2d6e8f0a-3b5c-4d7e-8f9a-1b3c5d7e9f02",
        tenantID: demoTenantID,
        name: "Alice Example"
    )

    let clock: any WallClock
    let logger: Logger
    let state: Mutex<ProviderState>
    private let server = Mutex<LoopbackHTTPServer?>(nil)
    let stateChangeHandler = Mutex<(@Sendable () -> Void)?>(nil)

    /// Creates a provider with these users (by default ``demoUser``, whose domain
    /// `contoso.example` maps to ``demoTenantID``). Nothing listens until ``start(port:)``.
    /// - Parameters:
    ///   - clock: the source of "now" for token lifetimes, ID token claims and device-code expiry.
    ///   - logger: receives one debug line per request (method, path, status).
    ///   - users: the users who can sign in; the first is ``defaultUsername``. Each brings its
    ///     home tenant and domain, as ``addUser(_:)`` says.
    public init(clock: any WallClock = SystemWallClock(), logger: Logger = .none, users: [User] = [LocalIdentityProvider.demoUser]) {
        self.clock = clock
        self.logger = logger
        var initial = ProviderState()
        for user in users { initial.add(user) }
        initial.defaultUsername = users.first?.username.lowercased()
        state = Mutex(initial)
    }

    deinit {
        stop()
    }

    /// Starts serving on `127.0.0.1`. Calling it while running does nothing; after ``stop()`` it
    /// starts again (on a new port when `port` is 0), keeping users and tokens.
    /// - Parameter port: the TCP port; 0 (the default) lets the system choose one, read it from
    ///   ``baseURL``.
    /// - Throws: ``MSALError`` `.internal(.networkError)` when the socket cannot be bound (the
    ///   port is in use).
    public func start(port: UInt16 = 0) throws(MSALError) {
        try server.withLock { (server: inout LoopbackHTTPServer?) throws(MSALError) in
            if server != nil { return }
            let http = LoopbackHTTPServer(port: port, readTimeout: 10) { [weak self] request in
                guard let self else { return .text("The identity provider is gone.\n", status: 503) }
                return self.handle(request)
            }
            let port = try http.start()
            state.withLock { $0.port = port }
            server = http
        }
    }

    /// Stops serving and waits for requests in flight. Idempotent.
    public func stop() {
        let running = server.withLock { server in
            defer { server = nil }
            return server
        }
        running?.stop()
        state.withLock { $0.port = 0 }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash; the port is 0 until ``start()``.
    public var baseURL: URL {
        URL(string: baseString)!
    }

    var baseString: String { "http://127.0.0.1:\(state.withLock { $0.port })" }

    /// The authority for a tenant: `http://127.0.0.1:PORT/<tenant>`.
    /// - Parameter tenant: `common` (default), `organizations`, `consumers`, a tenant ID or a domain.
    /// - Returns: the authority URL as a string, for `Authority(_:type: .aad)`.
    public func authority(tenant: String = "common") -> String {
        "\(baseString)/\(tenant)"
    }

    /// Adds a user (or replaces the one with the same username). Its home tenant becomes known,
    /// and the domain after `@` in its username maps to that tenant unless already mapped.
    public func addUser(_ user: User) {
        state.withLock { $0.add(user) }
        notifyStateChange()
    }

    /// Maps a domain (e.g. `fabrikam.example`) to a tenant ID, which becomes known.
    public func addTenant(_ tenantID: String, domain: String? = nil) {
        state.withLock { state in
            state.tenants.insert(tenantID.lowercased())
            if let domain { state.domains[domain.lowercased()] = tenantID.lowercased() }
        }
    }

    /// Seconds an access token is valid (`expires_in`, `ext_expires_in`). Default 3600, Entra's
    /// default access-token lifetime.
    public var accessTokenLifetime: TimeInterval {
        get { state.withLock { $0.accessTokenLifetime } }
        set { state.withLock { $0.accessTokenLifetime = newValue } }
    }

    /// Seconds a refresh token is valid after it is issued. Default 90 days, Entra's
    /// inactivity lifetime for refresh tokens of public clients.
    public var refreshTokenLifetime: TimeInterval {
        get { state.withLock { $0.refreshTokenLifetime } }
        set { state.withLock { $0.refreshTokenLifetime = newValue } }
    }

    /// Seconds a device code is valid (`expires_in` of the device authorization response).
    /// Default 900, as Entra sends.
    public var deviceCodeLifetime: TimeInterval {
        get { state.withLock { $0.deviceCodeLifetime } }
        set { state.withLock { $0.deviceCodeLifetime = newValue } }
    }

    /// Seconds a client must wait between polls (`interval`). Default 5, as Entra sends; tests set
    /// 0. Polling sooner gets `slow_down`, which adds 5 seconds for that device code (RFC 8628 §3.5).
    public var deviceCodeInterval: TimeInterval {
        get { state.withLock { $0.deviceCodeInterval } }
        set { state.withLock { $0.deviceCodeInterval = newValue } }
    }

    /// The user codes waiting for a person, oldest first (not yet approved, denied or expired).
    public var pendingUserCodes: [String] {
        let now = clock.now()
        return state.withLock { state in
            state.deviceAuthorizations.values
                .filter { $0.status == .pending && $0.expiresAt > now }
                .sorted { $0.sequence < $1.sequence }
                .map(\.userCode)
        }
    }

    /// Plays the user: signs in as `username` and approves the user code, so the next poll with
    /// its device code succeeds.
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when no pending device code has this
    ///   user code (case-insensitive) or no user has this username; `.internal(.deviceCodeExpired)`
    ///   when the device code has expired.
    public func approveDeviceCode(userCode: String, as username: String) throws(MSALError) {
        let now = clock.now()
        try state.withLock { (state: inout ProviderState) throws(MSALError) in
            guard let user = state.users[username.lowercased()] else {
                throw .internal(.invalidParameter, "The local identity provider has no user '\(username)'.")
            }
            let deviceCode = try state.pendingDeviceCode(userCode: userCode, now: now)
            state.deviceAuthorizations[deviceCode]?.status = .approved(username: user.username.lowercased())
        }
    }

    /// Plays the user declining the sign-in: the next poll gets `authorization_declined`.
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when no pending device code has this
    ///   user code; `.internal(.deviceCodeExpired)` when it has expired.
    public func denyDeviceCode(userCode: String) throws(MSALError) {
        let now = clock.now()
        try state.withLock { (state: inout ProviderState) throws(MSALError) in
            let deviceCode = try state.pendingDeviceCode(userCode: userCode, now: now)
            state.deviceAuthorizations[deviceCode]?.status = .denied
        }
    }

    /// Makes the next `count` token-endpoint responses fail as `failure` (queued after failures
    /// already waiting). The requests are still recorded in ``tokenRequests`` and ``requests``.
    public func failNextTokenRequests(with failure: Failure, count: Int = 1) {
        guard count > 0 else { return }
        state.withLock { $0.failures.append(contentsOf: repeatElement(failure, count: count)) }
    }

    /// Revokes every refresh token issued to the user (as a password reset or an admin's
    /// "revoke sessions" does): using one then gets `invalid_grant` with `suberror` `bad_token`.
    public func revokeRefreshTokens(username: String) {
        let key = username.lowercased()
        state.withLock { state in
            for (token, grant) in state.refreshGrants where grant.username == key {
                state.refreshGrants[token]?.revoked = true
            }
        }
        notifyStateChange()
    }

    /// Every request received at a token endpoint, oldest first.
    public var tokenRequests: [RecordedRequest] {
        state.withLock { $0.requests.filter { $0.endpoint == .token } }
    }

    /// Makes instance discovery (`GET /common/discovery/instance`) know another cloud, as Entra
    /// knows its national clouds: an `authorization_endpoint` on any of `aliases` is answered with
    /// the metadata, which lists this cloud after the provider's own host. Hosts are matched
    /// case-insensitively, with `:port` when the endpoint names one. Unknown hosts get
    /// `invalid_instance` (AADSTS50049), as from Entra.
    /// - Parameters:
    ///   - preferredNetwork: `preferred_network`, e.g. `login.sovereign.example`.
    ///   - preferredCache: `preferred_cache`.
    ///   - aliases: `aliases`; should include the two preferred hosts.
    public func addInstanceMetadata(preferredNetwork: String, preferredCache: String, aliases: [String]) {
        state.withLock {
            $0.instanceMetadata.append(ProviderState.InstanceMetadata(
                preferredNetwork: preferredNetwork.lowercased(),
                preferredCache: preferredCache.lowercased(),
                aliases: aliases.map { $0.lowercased() }
            ))
        }
    }

    /// How many instance discovery requests the provider has answered (with metadata or an error).
    public var instanceDiscoveryRequestCount: Int {
        state.withLock { $0.instanceDiscoveryRequestCount }
    }
}

/// The mutable state of a ``LocalIdentityProvider``.
struct ProviderState {
    enum DeviceStatus: Equatable {
        case pending
        case approved(username: String)
        case denied
        case redeemed
    }

    struct DeviceAuthorization {
        var userCode: String
        var clientID: String
        var scopes: [String]
        var tenantSegment: String
        var expiresAt: Date
        var interval: TimeInterval
        var lastPollAt: Date?
        var status: DeviceStatus
        var sequence: Int
    }

    struct RefreshGrant {
        var username: String
        var clientID: String
        var scopes: [String]
        var issuedAt: Date
        var expiresAt: Date
        var revoked: Bool
        /// The family (`foci`) the token was issued in; any client of the family may redeem it.
        var familyID: String? = nil
    }

    /// An authorization code issued by the authorize endpoint (RFC 6749 §4.1.2), waiting for the
    /// token endpoint.
    struct AuthorizationCodeGrant {
        var username: String
        var clientID: String
        var redirectURI: String
        var scopes: [String]
        var codeChallenge: String
        var nonce: String?
        var clientInfo: Bool
        var expiresAt: Date
        var redeemed: Bool
    }

    var port: UInt16 = 0
    var users: [String: LocalIdentityProvider.User] = [:]
    var domains: [String: String] = [:]
    var tenants: Set<String> = []
    var accessTokenLifetime: TimeInterval = 3600
    var refreshTokenLifetime: TimeInterval = 90 * 24 * 3600
    var deviceCodeLifetime: TimeInterval = 900
    var deviceCodeInterval: TimeInterval = 5
    var deviceAuthorizations: [String: DeviceAuthorization] = [:]
    var refreshGrants: [String: RefreshGrant] = [:]
    var failures: [LocalIdentityProvider.Failure] = []
    /// Every request to an Entra endpoint, oldest first.
    var requests: [LocalIdentityProvider.RecordedRequest] = []
    var authorizationCodes: [String: AuthorizationCodeGrant] = [:]
    var authorizationCodeLifetime: TimeInterval = 600
    var registeredRedirectURIs: Set<String> = []
    var nextUserAction: LocalIdentityProvider.UserAction?
    /// The user signed in to the browser session (the SSO cookie), lowercased; `nil` when none.
    var sessionUsername: String?
    var sessionState = UUID().uuidString.lowercased()
    var sequence = 0
    /// Clouds instance discovery knows besides the provider's own host.
    var instanceMetadata: [InstanceMetadata] = []
    var instanceDiscoveryRequestCount = 0
    /// The user a person signs in as when nothing says who, lowercased.
    var defaultUsername: String?
    /// Family of client IDs: client ID (lowercased) → family ID.
    var families: [String: String] = [:]
    /// Registered client IDs, lowercased; when empty, every client ID is accepted.
    var registeredClients: Set<String> = []
    /// Guest accounts: username (lowercased) → tenant ID (lowercased) → guest object ID.
    var guests: [String: [String: String]] = [:]
    var guestsMustBeInvited = false
    /// Scopes always left out of `scope`, lowercased.
    var declinedScopes: Set<String> = []
    /// Scopes left out of the next successful token responses, one entry per response.
    var declinedScopesOnce: [Set<String>] = []
    var refreshIn: TimeInterval?
    var extendedExpiresIn: TimeInterval?
    var controlAPIEnabled = false
    /// The B2C policies served, lowercased → as added.
    var b2cPolicies: [String: String] = [:]

    /// One `metadata` entry of an instance discovery answer; hosts lowercased.
    struct InstanceMetadata {
        var preferredNetwork: String
        var preferredCache: String
        var aliases: [String]
    }

    mutating func add(_ user: LocalIdentityProvider.User) {
        let tenant = user.tenantID.lowercased()
        users[user.username.lowercased()] = user
        tenants.insert(tenant)
        if let at = user.username.lastIndex(of: "@") {
            let domain = user.username[user.username.index(after: at)...].lowercased()
            if !domain.isEmpty && domains[domain] == nil { domains[domain] = tenant }
        }
    }

    func pendingDeviceCode(userCode: String, now: Date) throws(MSALError) -> String {
        let wanted = userCode.uppercased()
        guard let (deviceCode, authorization) = deviceAuthorizations.first(where: { $0.value.userCode == wanted }),
              authorization.status == .pending
        else {
            throw .internal(.invalidParameter, "No device code waiting for approval has the user code '\(userCode)'.")
        }
        guard authorization.expiresAt > now else {
            throw .internal(.deviceCodeExpired, "The device code with user code '\(userCode)' has expired.")
        }
        return deviceCode
    }
}
