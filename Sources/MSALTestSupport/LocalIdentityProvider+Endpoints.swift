import Foundation
import MSALCore
import MSALWebAuth
import Synchronization

/// The tenant a request's first path segment names.
enum ResolvedTenant: Equatable {
    /// `common`, `organizations` or `consumers`: tokens go to the user's home tenant.
    case multi(String)
    /// One tenant, by ID (a domain has been mapped to its ID).
    case single(String)
}

/// The protocol dialect a request's path speaks.
enum Dialect: Equatable {
    /// Entra ID v2.0: `/{tenant}/oauth2/v2.0/…`.
    case entra
    /// Azure AD B2C: `/tfp/{tenant}/{policy}/oauth2/v2.0/…`, for this policy (as given in the path).
    case b2c(policy: String)
    /// AD FS: `/adfs/oauth2/…`.
    case adfs
}

/// The context of one request: what an error or a success response needs.
struct RequestContext {
    let correlationID: String
    let now: Date
    let base: String
}

/// A request's path, split into its segments.
private func pathSegments(_ path: String) -> [String] {
    path.split(separator: "/").map(String.init)
}

extension LocalIdentityProvider {
    // MARK: - Routing

    /// A path in Entra's layout (`[tenant, endpoint…]`) with its dialect. B2C's
    /// `tfp/{tenant}/{policy}/…` keeps the tenant and the v2.0 endpoint; AD FS's
    /// `adfs/.well-known/openid-configuration`, `adfs/oauth2/{authorize,token,devicecode}` and
    /// `adfs/discovery/keys` become `adfs` plus the v2.0 names; any other `adfs/…` path is empty (404).
    static func entraLayout(_ path: String) -> (Dialect, [String]) {
        let segments = pathSegments(path)
        if segments.count >= 4, segments[0].lowercased() == "tfp" {
            return (.b2c(policy: segments[2]), [segments[1]] + segments[3...])
        }
        if segments.first?.lowercased() == "adfs" {
            let rest = Array(segments.dropFirst())
            if rest == [".well-known", "openid-configuration"] { return (.adfs, ["adfs", "v2.0", ".well-known", "openid-configuration"]) }
            if rest == ["discovery", "keys"] { return (.adfs, ["adfs", "discovery", "v2.0", "keys"]) }
            if rest.count == 2, rest[0] == "oauth2", ["authorize", "token", "devicecode"].contains(rest[1]) {
                return (.adfs, ["adfs", "oauth2", "v2.0", rest[1]])
            }
            return (.adfs, [])
        }
        return (.entra, segments)
    }

    func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let context = RequestContext(
            correlationID: request.headers["client-request-id"].flatMap { $0.isEmpty ? nil : $0 } ?? UUID().uuidString.lowercased(),
            now: clock.now(),
            base: baseString
        )
        var response: HTTPServerResponse
        if request.path == "/_control" || request.path.hasPrefix("/_control/"), state.withLock({ $0.controlAPIEnabled }) {
            response = control(request, context)
        } else {
            record(request, at: context.now)
            response = route(request, context)
        }
        if request.headers["return-client-request-id"]?.lowercased() == "true" {
            response.headers["client-request-id"] = context.correlationID
        }
        response.headers["x-ms-request-id"] = response.headers["x-ms-request-id"] ?? UUID().uuidString.lowercased()
        logger.debug("LocalIdentityProvider: \(request.method) \(request.path) -> \(response.status)")
        return response
    }

    /// Appends the request to the log, with its endpoint and the clock's time.
    private func record(_ request: HTTPServerRequest, at now: Date) {
        let endpoint = LocalIdentityProvider.endpoint(forPath: request.path)
        let parameters = request.method == "POST" ? request.formParameters : request.queryItems
        let entry = RecordedRequest(
            method: request.method, path: request.path, grantType: endpoint == .token ? parameters["grant_type"] : nil,
            formParameters: parameters, headers: request.headers, endpoint: endpoint, receivedAt: now)
        state.withLock { $0.requests.append(entry) }
    }

    /// The Entra endpoint a path names (the same matching as the router's).
    static func endpoint(forPath path: String) -> RecordedRequest.Endpoint {
        let segments = entraLayout(path).1
        switch segments.count {
        case 1 where segments[0] == "devicelogin": return .deviceLogin
        case 3 where segments[1] == "discovery" && segments[2] == "instance": return .instanceDiscovery
        case 4 where segments[1] == "v2.0" && segments[2] == ".well-known" && segments[3] == "openid-configuration": return .openIDConfiguration
        case 4 where segments[1] == "discovery" && segments[2] == "v2.0" && segments[3] == "keys": return .keys
        case 4 where segments[1] == "oauth2" && segments[2] == "v2.0" && segments[3] == "devicecode": return .deviceCode
        case 4 where segments[1] == "oauth2" && segments[2] == "v2.0" && segments[3] == "authorize": return .authorize
        case 4 where segments[1] == "oauth2" && segments[2] == "v2.0" && segments[3] == "token": return .token
        default: return .other
        }
    }

    private func route(_ request: HTTPServerRequest, _ context: RequestContext) -> HTTPServerResponse {
        let (dialect, segments) = LocalIdentityProvider.entraLayout(request.path)
        if case .b2c(let policy) = dialect, !isB2CPolicy(policy) {
            return .text("Not found: the policy '\(policy)' does not exist in this B2C tenant.\n", status: 404)
        }
        func require(_ method: String, _ body: () -> HTTPServerResponse) -> HTTPServerResponse {
            guard request.method == method || (method == "GET" && request.method == "HEAD") else {
                var response = HTTPServerResponse.text("Method \(request.method) is not allowed here.\n", status: 405)
                response.headers["Allow"] = method
                return response
            }
            return body()
        }
        switch segments.count {
        case 1 where dialect == .entra && segments[0] == "devicelogin":
            if request.method == "POST" { return deviceLoginSubmit(request) }
            return require("GET") { deviceLoginPage(message: nil, status: 200) }
        case 3 where dialect == .entra && segments[1] == "discovery" && segments[2] == "instance":
            return require("GET") { instanceDiscovery(request, context) }
        case 4 where segments[1] == "v2.0" && segments[2] == ".well-known" && segments[3] == "openid-configuration":
            return require("GET") {
                switch dialect {
                case .entra: openIDConfiguration(tenantSegment: segments[0], context)
                case .b2c(let policy): b2cConfiguration(tenantSegment: segments[0], policy: policy, context)
                case .adfs: adfsConfiguration(context)
                }
            }
        case 4 where segments[1] == "discovery" && segments[2] == "v2.0" && segments[3] == "keys":
            return require("GET") { .json(["keys": .array([])]) }
        case 4 where segments[1] == "oauth2" && segments[2] == "v2.0" && segments[3] == "devicecode":
            return require("POST") { deviceAuthorization(request, tenantSegment: segments[0], dialect: dialect, context) }
        case 4 where segments[1] == "oauth2" && segments[2] == "v2.0" && segments[3] == "authorize":
            return require("GET") { authorize(request, tenantSegment: segments[0], dialect: dialect, context) }
        case 4 where segments[1] == "oauth2" && segments[2] == "v2.0" && segments[3] == "token":
            return require("POST") { token(request, tenantSegment: segments[0], dialect: dialect, context) }
        default:
            return .text("Not found: \(request.path)\n", status: 404)
        }
    }

    // MARK: - Tenants and errors

    /// The tenant a path's tenant segment names in its dialect: for B2C, the B2C tenant by name or
    /// ID; for AD FS, `adfs` (one tenant); for Entra, a group, a known tenant ID or a known domain.
    func resolveTenant(_ segment: String, dialect: Dialect = .entra) -> ResolvedTenant? {
        let lower = segment.lowercased()
        switch dialect {
        case .entra: break
        case .b2c:
            let tenant = LocalIdentityProvider.b2cTenant
            return lower == tenant.name || lower == tenant.id ? .single(tenant.id) : nil
        case .adfs:
            return lower == "adfs" ? .single("adfs") : nil
        }
        if ["common", "organizations", "consumers"].contains(lower) { return .multi(lower) }
        return state.withLock { state in
            if state.tenants.contains(lower) { return .single(lower) }
            if let id = state.domains[lower] { return .single(id) }
            return nil
        }
    }

    /// Entra's error body (RFC 6749 §5.2 plus `error_codes`, `timestamp`, `trace_id`,
    /// `correlation_id`, `error_uri`, `suberror`).
    func errorResponse(
        _ error: String,
        codes: [Int],
        message: String,
        subError: String? = nil,
        status: Int = 400,
        verbatimDescription: String? = nil,
        _ context: RequestContext
    ) -> HTTPServerResponse {
        let traceID = UUID().uuidString.lowercased()
        let timestamp = LocalIdentityProvider.entraTimestamp(context.now)
        let prefix = codes.first.map { "AADSTS\($0): " } ?? ""
        let description = verbatimDescription
            ?? "\(prefix)\(message)\r\nTrace ID: \(traceID)\r\nCorrelation ID: \(context.correlationID)\r\nTimestamp: \(timestamp)"
        var body: [String: JSONValue] = [
            "error": .string(error),
            "error_description": .string(description),
            "error_codes": .array(codes.map { .number(Double($0)) }),
            "timestamp": .string(timestamp),
            "trace_id": .string(traceID),
            "correlation_id": .string(context.correlationID),
        ]
        if let code = codes.first { body["error_uri"] = .string("\(context.base)/error?code=\(code)") }
        if let subError { body["suberror"] = .string(subError) }
        var response = HTTPServerResponse.json(body, status: status)
        response.headers["Cache-Control"] = "no-store"
        response.headers["Pragma"] = "no-cache"
        response.headers["x-ms-request-id"] = traceID
        return response
    }

    func unknownTenant(_ segment: String, _ context: RequestContext) -> HTTPServerResponse {
        errorResponse(
            "invalid_tenant", codes: [90002],
            message: "Tenant '\(segment)' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.",
            context)
    }

    /// Entra's answer for a client ID that is not registered (AADSTS700016), when clients are
    /// registered at all.
    func unknownClient(_ clientID: String, _ tenantSegment: String, _ context: RequestContext) -> HTTPServerResponse {
        errorResponse(
            "unauthorized_client", codes: [700016],
            message: LocalIdentityProvider.unknownClientMessage(clientID, tenantSegment), context)
    }

    static func unknownClientMessage(_ clientID: String, _ tenantSegment: String) -> String {
        "Application with identifier '\(clientID)' was not found in the directory '\(tenantSegment)'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant."
    }

    func isRegisteredClient(_ clientID: String) -> Bool {
        state.withLock { $0.registeredClients.isEmpty || $0.registeredClients.contains(clientID.lowercased()) }
    }

    func missingParameter(_ name: String, _ context: RequestContext) -> HTTPServerResponse {
        errorResponse(
            "invalid_request", codes: [900144],
            message: "The request body must contain the following parameter: '\(name)'.", context)
    }

    /// `yyyy-MM-dd HH:mm:ssZ` in UTC, the format of Entra's `timestamp` field.
    static func entraTimestamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ v: Int?) -> String { let v = v ?? 0; return v < 10 ? "0\(v)" : "\(v)" }
        return "\(c.year ?? 1970)-\(two(c.month))-\(two(c.day)) \(two(c.hour)):\(two(c.minute)):\(two(c.second))Z"
    }

    // MARK: - Discovery

    private func openIDConfiguration(tenantSegment: String, _ context: RequestContext) -> HTTPServerResponse {
        guard let tenant = resolveTenant(tenantSegment) else { return unknownTenant(tenantSegment, context) }
        let base = context.base
        let segment = tenantSegment
        let issuerTenant: String
        switch tenant {
        case .multi: issuerTenant = "{tenantid}"
        case .single(let id): issuerTenant = id
        }
        let strings: (([String]) -> JSONValue) = { .array($0.map(JSONValue.string)) }
        return .json([
            "issuer": .string("\(base)/\(issuerTenant)/v2.0"),
            "authorization_endpoint": .string("\(base)/\(segment)/oauth2/v2.0/authorize"),
            "token_endpoint": .string("\(base)/\(segment)/oauth2/v2.0/token"),
            "device_authorization_endpoint": .string("\(base)/\(segment)/oauth2/v2.0/devicecode"),
            "end_session_endpoint": .string("\(base)/\(segment)/oauth2/v2.0/logout"),
            "jwks_uri": .string("\(base)/\(segment)/discovery/v2.0/keys"),
            "response_types_supported": strings(["code", "id_token", "code id_token", "id_token token"]),
            "response_modes_supported": strings(["query", "fragment", "form_post"]),
            "scopes_supported": strings(["openid", "profile", "email", "offline_access"]),
            "subject_types_supported": strings(["pairwise"]),
            "id_token_signing_alg_values_supported": strings(["none"]),
            "token_endpoint_auth_methods_supported": strings(["client_secret_post", "client_secret_basic"]),
            "claims_supported": strings([
                "sub", "iss", "aud", "exp", "iat", "nbf", "name", "oid", "tid", "preferred_username", "ver",
            ]),
            "request_uri_parameter_supported": .bool(false),
            "http_logout_supported": .bool(true),
            "frontchannel_logout_supported": .bool(true),
            "tenant_region_scope": .null,
            "cloud_instance_name": .string("127.0.0.1"),
            "cloud_graph_host_name": .string("127.0.0.1"),
            "msgraph_host": .string("127.0.0.1"),
        ])
    }

    /// Entra's instance discovery (`/common/discovery/instance?api-version=1.1&authorization_endpoint=…`).
    /// The host of `authorization_endpoint` (this host when it is absent) must be this host or an
    /// alias of an added cloud; the answer's `metadata` lists this host first, then the added clouds,
    /// and `tenant_discovery_endpoint` is the endpoint's tenant on its own host. Any other host gets
    /// HTTP 400 `invalid_instance` (AADSTS50049), as from Entra.
    private func instanceDiscovery(_ request: HTTPServerRequest, _ context: RequestContext) -> HTTPServerResponse {
        let ownHost = String(context.base.dropFirst("http://".count))
        var base = context.base
        var host = ownHost
        var tenant = "common"
        if let endpoint = request.queryItems["authorization_endpoint"] {
            guard let components = URLComponents(string: endpoint), let scheme = components.scheme?.lowercased(),
                  let endpointHost = components.host?.lowercased(), !endpointHost.isEmpty
            else {
                return unknownInstance(context)
            }
            host = components.port.map { "\(endpointHost):\($0)" } ?? endpointHost
            base = "\(scheme)://\(host)"
            if let first = components.path.split(separator: "/").first { tenant = String(first) }
        }
        let metadata = state.withLock { state in
            state.instanceDiscoveryRequestCount += 1
            return [ProviderState.InstanceMetadata(preferredNetwork: ownHost, preferredCache: ownHost, aliases: [ownHost])]
                + state.instanceMetadata
        }
        guard metadata.contains(where: { $0.aliases.contains(host) }) else { return unknownInstance(context) }
        return .json([
            "tenant_discovery_endpoint": .string("\(base)/\(tenant)/v2.0/.well-known/openid-configuration"),
            "api-version": .string("1.1"),
            "metadata": .array(metadata.map { entry in
                .object([
                    "preferred_network": .string(entry.preferredNetwork),
                    "preferred_cache": .string(entry.preferredCache),
                    "aliases": .array(entry.aliases.map { .string($0) }),
                ])
            }),
        ])
    }

    /// Entra's answer for a host that is not one of its clouds.
    private func unknownInstance(_ context: RequestContext) -> HTTPServerResponse {
        errorResponse("invalid_instance", codes: [50049], message: "Unknown or invalid instance.", context)
    }

    // MARK: - Device authorization (RFC 8628 §3.1, §3.2)

    private func deviceAuthorization(
        _ request: HTTPServerRequest, tenantSegment: String, dialect: Dialect, _ context: RequestContext
    ) -> HTTPServerResponse {
        guard resolveTenant(tenantSegment, dialect: dialect) != nil else { return unknownTenant(tenantSegment, context) }
        let form = request.formParameters
        guard let clientID = form["client_id"], !clientID.isEmpty else { return missingParameter("client_id", context) }
        guard isRegisteredClient(clientID) else { return unknownClient(clientID, tenantSegment, context) }
        guard let scope = form["scope"], !scope.isEmpty else { return missingParameter("scope", context) }
        let deviceCode = TokenMint.randomToken(bytes: 64)
        let userCode = TokenMint.userCode()
        let verificationURI = "\(context.base)/devicelogin"
        let (lifetime, interval) = state.withLock { state in
            state.sequence += 1
            state.deviceAuthorizations[deviceCode] = ProviderState.DeviceAuthorization(
                userCode: userCode,
                clientID: clientID,
                scopes: TokenMint.scopes(scope),
                tenantSegment: tenantSegment,
                expiresAt: context.now.addingTimeInterval(state.deviceCodeLifetime),
                interval: state.deviceCodeInterval,
                lastPollAt: nil,
                status: .pending,
                sequence: state.sequence
            )
            return (state.deviceCodeLifetime, state.deviceCodeInterval)
        }
        return .json([
            "device_code": .string(deviceCode),
            "user_code": .string(userCode),
            "verification_uri": .string(verificationURI),
            "expires_in": .number(lifetime.rounded()),
            "interval": .number(interval.rounded()),
            "message": .string("To sign in, use a web browser to open the page \(verificationURI) and enter the code \(userCode) to authenticate."),
        ])
    }

    // MARK: - Token endpoint

    private func token(_ request: HTTPServerRequest, tenantSegment: String, dialect: Dialect, _ context: RequestContext) -> HTTPServerResponse {
        let form = request.formParameters
        let injected: Failure? = state.withLock { state in
            state.failures.isEmpty ? nil : state.failures.removeFirst()
        }
        if let injected { return respond(with: injected, context) }
        guard let tenant = resolveTenant(tenantSegment, dialect: dialect) else { return unknownTenant(tenantSegment, context) }
        guard let grantType = form["grant_type"], !grantType.isEmpty else { return missingParameter("grant_type", context) }
        guard let clientID = form["client_id"], !clientID.isEmpty else { return missingParameter("client_id", context) }
        guard isRegisteredClient(clientID) else { return unknownClient(clientID, tenantSegment, context) }
        let wantsClientInfo = form["client_info"] == "1"
        switch grantType {
        case "urn:ietf:params:oauth:grant-type:device_code":
            guard let deviceCode = form["device_code"], !deviceCode.isEmpty else { return missingParameter("device_code", context) }
            return deviceCodeGrant(deviceCode: deviceCode, clientID: clientID, tenant: tenant, dialect: dialect, wantsClientInfo: wantsClientInfo, context)
        case "authorization_code":
            return authorizationCodeGrant(form: form, clientID: clientID, tenant: tenant, dialect: dialect, wantsClientInfo: wantsClientInfo, context)
        case "refresh_token":
            guard let refreshToken = form["refresh_token"], !refreshToken.isEmpty else { return missingParameter("refresh_token", context) }
            return refreshTokenGrant(
                refreshToken: refreshToken, clientID: clientID, requestedScope: form["scope"], tenant: tenant, dialect: dialect,
                wantsClientInfo: wantsClientInfo, context)
        default:
            return errorResponse(
                "unsupported_grant_type", codes: [70003],
                message: "The app requested an unsupported grant type '\(grantType)'.", context)
        }
    }

    private func respond(with failure: Failure, _ context: RequestContext) -> HTTPServerResponse {
        switch failure {
        case .oauthError(let error, let subError, let description, let errorCodes, let status):
            let known = subError.flatMap(SubError.init(rawValue:))
            return errorResponse(
                error, codes: errorCodes, message: known?.message ?? "Injected failure.", subError: subError, status: status,
                verbatimDescription: description, context)
        case .serverError(let status):
            return .text("The service is unavailable (injected failure, status \(status)).\n", status: status)
        case .emptyBody(let status):
            return HTTPServerResponse(status: status)
        case .html(let status):
            return .html(
                "<!DOCTYPE html><html><head><title>\(status) \(HTTPServerResponse.reasonPhrase(for: status))</title></head>"
                    + "<body><h1>\(status) \(HTTPServerResponse.reasonPhrase(for: status))</h1><p>Injected failure.</p></body></html>",
                status: status)
        case .throttled(let status, let retryAfter):
            var response = HTTPServerResponse.text("\(HTTPServerResponse.reasonPhrase(for: status))\n", status: status)
            response.headers["Retry-After"] = retryAfter
            return response
        }
    }

    private enum DevicePoll {
        case error(String, [Int], String)
        case success(username: String, scopes: [String], tenantSegment: String)
    }

    /// RFC 8628 §3.4–§3.5 with Entra's error names (authorization_pending, authorization_declined,
    /// bad_verification_code, expired_token) and the RFC's `slow_down`.
    private func deviceCodeGrant(
        deviceCode: String, clientID: String, tenant: ResolvedTenant, dialect: Dialect, wantsClientInfo: Bool, _ context: RequestContext
    ) -> HTTPServerResponse {
        let now = context.now
        let outcome: DevicePoll = state.withLock { state in
            guard var authorization = state.deviceAuthorizations[deviceCode] else {
                return .error("bad_verification_code", [70018], "The device_code sent to the token endpoint was not recognized.")
            }
            guard authorization.clientID.lowercased() == clientID.lowercased() else {
                return .error("invalid_grant", [70000], "The device code was issued to another client.")
            }
            if authorization.status == .redeemed {
                return .error("invalid_grant", [70000], "The device code has already been redeemed.")
            }
            if authorization.expiresAt <= now {
                return .error("expired_token", [70019], "Verification code expired.")
            }
            defer { state.deviceAuthorizations[deviceCode] = authorization }
            if let last = authorization.lastPollAt, now.timeIntervalSince(last) < authorization.interval {
                authorization.lastPollAt = now
                authorization.interval += 5
                return .error("slow_down", [], "The client polled faster than the interval; wait \(Int(authorization.interval)) seconds between requests.")
            }
            authorization.lastPollAt = now
            switch authorization.status {
            case .pending:
                return .error("authorization_pending", [70016], "The provided request has not yet been authorized by the user. The user must input their code.")
            case .denied:
                return .error("authorization_declined", [70000], "The user declined the authorization request.")
            case .approved(let username):
                authorization.status = .redeemed
                return .success(username: username, scopes: authorization.scopes, tenantSegment: authorization.tenantSegment)
            case .redeemed:
                return .error("invalid_grant", [70000], "The device code has already been redeemed.")
            }
        }
        switch outcome {
        case .error(let error, let codes, let message):
            return errorResponse(error, codes: codes, message: message, context)
        case .success(let username, let scopes, _):
            return issueTokens(
                username: username, clientID: clientID, scopes: scopes, tenant: tenant, dialect: dialect,
                wantsClientInfo: wantsClientInfo, context)
        }
    }

    /// RFC 6749 §6. Refresh tokens work at any tenant of the user (Entra's refresh tokens are
    /// not bound to one tenant) and rotate: each success returns a new one; the old one stays
    /// valid until it expires, as on Entra.
    private func refreshTokenGrant(
        refreshToken: String, clientID: String, requestedScope: String?, tenant: ResolvedTenant, dialect: Dialect,
        wantsClientInfo: Bool, _ context: RequestContext
    ) -> HTTPServerResponse {
        let now = context.now
        let lookup: Result<ProviderState.RefreshGrant, RefreshFailure> = state.withLock { state in
            guard let grant = state.refreshGrants[refreshToken] else {
                return .failure(RefreshFailure(codes: [70000], message: "The provided value for the input parameter 'refresh_token' is not valid.", subError: nil))
            }
            if let family = grant.familyID {
                // A family refresh token: any client of the family may redeem it; another client
                // gets `client_mismatch`, on which MSAL falls back to the app's own token.
                guard grant.clientID.lowercased() == clientID.lowercased() || state.families[clientID.lowercased()] == family else {
                    return .failure(RefreshFailure(
                        codes: [70000], message: SubError.clientMismatch.message, subError: SubError.clientMismatch.rawValue))
                }
            } else if grant.clientID.lowercased() != clientID.lowercased() {  // client IDs are GUIDs: any case
                return .failure(RefreshFailure(codes: [70000], message: "The refresh token was issued to a different client.", subError: nil))
            }
            if grant.revoked {
                return .failure(RefreshFailure(codes: [70000], message: "The refresh token has been revoked.", subError: "bad_token"))
            }
            if grant.expiresAt <= now {
                return .failure(RefreshFailure(
                    codes: [700082],
                    message: "The refresh token has expired due to inactivity. The token was issued on \(LocalIdentityProvider.entraTimestamp(grant.issuedAt)).",
                    subError: "bad_token"))
            }
            return .success(grant)
        }
        switch lookup {
        case .failure(let failure):
            return errorResponse("invalid_grant", codes: failure.codes, message: failure.message, subError: failure.subError, context)
        case .success(let grant):
            let scopes = requestedScope.map(TokenMint.scopes).flatMap { $0.isEmpty ? nil : $0 } ?? grant.scopes
            return issueTokens(
                username: grant.username, clientID: clientID, scopes: scopes, tenant: tenant, dialect: dialect,
                wantsClientInfo: wantsClientInfo, context)
        }
    }

    private struct RefreshFailure: Error {
        var codes: [Int]
        var message: String
        var subError: String?
    }

    /// What a token response needs from the state, read under one lock.
    struct Issuance {
        var user: User
        var lifetime: TimeInterval
        var refreshLifetime: TimeInterval
        var extendedLifetime: TimeInterval?
        var refreshIn: TimeInterval?
        var familyID: String?
        var guestObjectID: String?
        var declined: Set<String>
    }

    /// A successful token response (RFC 6749 §5.1) in Entra's v2.0 shape: `token_type`, `scope`
    /// (the granted scopes: requested ones minus declined ones, as Entra leaves out scopes the
    /// user or admin has not consented to), `expires_in`, `ext_expires_in`, `refresh_in` when
    /// set, `access_token`, `id_token` for `openid`, `refresh_token` for `offline_access`,
    /// `client_info` when asked, and `foci` for a client of a family.
    /// `nonce` is copied into the ID token (OpenID Connect Core §3.1.3.6), as Entra does for a
    /// code whose authorize request carried one.
    func issueTokens(
        username: String, clientID: String, scopes: [String], tenant: ResolvedTenant, dialect: Dialect = .entra, wantsClientInfo: Bool,
        nonce: String? = nil, _ context: RequestContext
    ) -> HTTPServerResponse {
        let now = context.now
        let lookup: Result<Issuance, RefreshFailure> = state.withLock { state in
            guard let user = state.users[username] else {
                return .failure(RefreshFailure(codes: [50034], message: "The user account does not exist in the directory.", subError: nil))
            }
            let homeTenant = user.tenantID.lowercased()
            var guestObjectID: String?
            if dialect == .entra, case .single(let id) = tenant, id != homeTenant {
                guestObjectID = state.guests[username]?[id]
                if guestObjectID == nil && state.guestsMustBeInvited {
                    return .failure(RefreshFailure(
                        codes: [50020],
                        message: "User account '\(user.username)' from identity provider '\(context.base)/\(homeTenant)/' does not exist in tenant '\(id)' and cannot access the application '\(clientID)' in that tenant. The account needs to be added as an external user in the tenant first.",
                        subError: nil))
                }
            }
            var declined = state.declinedScopes
            if !state.declinedScopesOnce.isEmpty { declined.formUnion(state.declinedScopesOnce.removeFirst()) }
            return .success(Issuance(
                user: user, lifetime: state.accessTokenLifetime, refreshLifetime: state.refreshTokenLifetime,
                extendedLifetime: state.extendedExpiresIn, refreshIn: state.refreshIn,
                familyID: state.families[clientID.lowercased()], guestObjectID: guestObjectID, declined: declined))
        }
        let issuance: Issuance
        switch lookup {
        case .failure(let failure):
            return errorResponse("invalid_grant", codes: failure.codes, message: failure.message, subError: failure.subError, context)
        case .success(let value):
            issuance = value
        }
        let user = issuance.user
        let granted = scopes.filter { !issuance.declined.contains($0.lowercased()) }
        let homeTenant = user.tenantID.lowercased()
        let tokenTenant: String
        switch tenant {
        case .multi: tokenTenant = homeTenant
        case .single(let id): tokenTenant = id
        }
        if dialect != .entra {
            return issueTokens(
                user: user, clientID: clientID, granted: granted, dialect: dialect, wantsClientInfo: wantsClientInfo,
                nonce: nonce, issuance: issuance, context)
        }
        let objectID = tokenTenant == homeTenant
            ? user.objectID.lowercased()
            : issuance.guestObjectID ?? TokenMint.guestObjectID(user: user, tenantID: tokenTenant)
        var body: [String: JSONValue] = [
            "token_type": .string("Bearer"),
            "scope": .string(granted.joined(separator: " ")),
            "expires_in": .number(issuance.lifetime.rounded()),
            "ext_expires_in": .number((issuance.extendedLifetime ?? issuance.lifetime).rounded()),
            "access_token": .string(TokenMint.randomToken(bytes: 48)),
        ]
        if let refreshIn = issuance.refreshIn { body["refresh_in"] = .number(refreshIn.rounded()) }
        if let family = issuance.familyID { body["foci"] = .string(family) }
        if granted.contains("openid") {
            let issued = now.timeIntervalSince1970.rounded(.down)
            var claims: [String: JSONValue] = [
                "iss": .string("\(context.base)/\(tokenTenant)/v2.0"),
                "aud": .string(clientID),
                "sub": .string(TokenMint.pairwiseSubject(objectID: user.objectID.lowercased(), clientID: clientID)),
                "oid": .string(objectID),
                "tid": .string(tokenTenant),
                "preferred_username": .string(user.username),
                "name": .string(user.name),
                "iat": .number(issued),
                "nbf": .number(issued),
                "exp": .number(issued + 3600),
                "ver": .string("2.0"),
            ]
            if let nonce { claims["nonce"] = .string(nonce) }
            body["id_token"] = .string(TokenMint.unsignedJWT(claims))
        }
        if granted.contains("offline_access") {
            let refreshToken = TokenMint.randomToken(bytes: 64)
            state.withLock { state in
                state.refreshGrants[refreshToken] = ProviderState.RefreshGrant(
                    username: username, clientID: clientID, scopes: granted, issuedAt: now,
                    expiresAt: now.addingTimeInterval(issuance.refreshLifetime), revoked: false, familyID: issuance.familyID)
            }
            body["refresh_token"] = .string(refreshToken)
            notifyStateChange()
        }
        if wantsClientInfo {
            body["client_info"] = .string(ClientInfo(uniqueID: user.objectID.lowercased(), uniqueTenantID: homeTenant).encoded)
        }
        var response = HTTPServerResponse.json(body)
        response.headers["Cache-Control"] = "no-store"
        response.headers["Pragma"] = "no-cache"
        return response
    }

    // MARK: - The device login page

    /// The username the device login page offers: ``defaultUsername``, or empty.
    private var browserDefaultUsername: String {
        defaultUsername ?? ""
    }

    private func deviceLoginPage(message: String?, status: Int) -> HTTPServerResponse {
        let note = message.map { "<p>\(TokenMint.htmlEscaped($0))</p>" } ?? ""
        return .html("""
            <!DOCTYPE html>
            <html><head><meta charset="utf-8"><title>Local identity provider: device sign-in</title></head>
            <body><h1>Enter code</h1>\(note)
            <form method="post" action="/devicelogin">
            <label>Code <input name="user_code" autofocus></label>
            <label>Username <input name="username" value="\(TokenMint.htmlEscaped(browserDefaultUsername))"></label>
            <button name="action" value="approve">Sign in</button>
            <button name="action" value="deny">Decline</button>
            </form></body></html>
            """, status: status)
    }

    private func deviceLoginSubmit(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let form = request.formParameters
        let userCode = form["user_code"] ?? ""
        do throws(MSALError) {
            if form["action"] == "deny" {
                try denyDeviceCode(userCode: userCode)
                return deviceLoginPage(message: "You declined the sign-in. You can close this window.", status: 200)
            }
            try approveDeviceCode(userCode: userCode, as: form["username"] ?? browserDefaultUsername)
            return deviceLoginPage(message: "You have signed in. You can close this window.", status: 200)
        } catch {
            return deviceLoginPage(message: error.message, status: 400)
        }
    }
}
