public import Foundation
public import MSALCore

/// The OAuth 2.0 requests swift-msal makes to a token endpoint and a device authorization
/// endpoint: form posts with MSAL's telemetry headers, JSON answers, errors mapped to ``MSALError``.
///
/// Every request carries `client-request-id: <correlationID>`, `return-client-request-id: true`,
/// `x-client-SKU: MSAL.Swift.Linux`, `x-client-Ver` (``libraryVersion``) and
/// `Accept: application/json`, as MSAL for iOS/macOS sends its own SKU and version.
///
/// Error mapping (RFC 6749 §5.2 plus Entra ID's `suberror`, `error_codes`, `correlation_id`):
/// a JSON body with `error` gives an ``MSALError`` carrying `oauthError`, `oauthErrorDescription`,
/// `subError`, `errorCodes`, `correlationID` and `httpStatusCode`, with code `.interactionRequired`
/// for `invalid_grant`, `interaction_required`, `login_required` and `consent_required`, and
/// `.serverError` for everything else (including `authorization_pending` and `slow_down`, which
/// the device-code flow reads from `oauthError`). An empty, HTML or non-JSON body, or a 2xx answer
/// without the required fields, gives `.serverError` with internal code `.invalidResponse` and
/// the HTTP status. A non-2xx answer with a valid `Retry-After` header (RFC 9110 §10.2.3) sets
/// ``MSALError/retryAfter`` on the error, for ``ThrottlingState`` to record. Transport failures pass through (`.internal(.networkError)`,
/// `.internal(.timeout)`, `.userCanceled`).
///
/// The `scopes` passed are sent exactly; the caller adds `openid`, `profile` and
/// `offline_access` when it wants them. `extraParameters` are added to the form body but never
/// replace a parameter the request sets itself.
public struct OAuth2Client: Sendable {
    /// The value of `x-client-SKU`.
    public static let sku = "MSAL.Swift.Linux"
    /// The value of `x-client-Ver`.
    public static let libraryVersion = "0.1.0"
    /// The `grant_type` of the device authorization grant (RFC 8628 §3.4).
    public static let deviceCodeGrantType = "urn:ietf:params:oauth:grant-type:device_code"

    /// The transport every request goes through.
    public let transport: any HTTPTransport
    /// Where request milestones go (debug level; no secret is ever logged).
    public let logger: Logger
    /// The source of "now" for an HTTP-date `Retry-After` when a response has no `Date` header.
    public let clock: any WallClock

    /// Creates a client.
    /// - Parameters:
    ///   - transport: sends the requests, e.g. ``URLSessionTransport``.
    ///   - logger: receives one debug line per request; default ``Logger/none``.
    ///   - clock: the source of "now"; default ``SystemWallClock``.
    public init(transport: any HTTPTransport, logger: Logger = .none, clock: any WallClock = SystemWallClock()) {
        self.transport = transport
        self.logger = logger
        self.clock = clock
    }

    /// The headers MSAL sends with every request to an identity provider.
    /// - Returns: `client-request-id`, `return-client-request-id`, `x-client-SKU`, `x-client-Ver`, `Accept`.
    public static func standardHeaders(correlationID: String?) -> [String: String] {
        var headers = [
            "return-client-request-id": "true",
            "x-client-SKU": sku,
            "x-client-Ver": libraryVersion,
            "Accept": "application/json",
        ]
        if let correlationID { headers["client-request-id"] = correlationID }
        return headers
    }

    /// Asks for a device code and a user code (RFC 8628 §3.1–3.2).
    ///
    /// Sends `client_id` and `scope` (the scopes space-joined, RFC 6749 §3.3) plus `extraParameters`.
    /// - Returns: the device code, user code, verification URI, `expires_in` and `interval` (5 s
    ///   when absent).
    /// - Throws: ``MSALError`` as described on ``OAuth2Client`` (e.g. `.serverError` with
    ///   `oauthError` `invalid_client` or `invalid_scope`); `.serverError` with `.invalidResponse`
    ///   when a required field is missing.
    public func requestDeviceAuthorization(
        endpoint: URL,
        clientID: String,
        scopes: ScopeSet,
        extraParameters: [String: String] = [:],
        correlationID: String
    ) async throws(MSALError) -> DeviceAuthorizationResponse {
        var parameters = extraParameters
        parameters["client_id"] = clientID
        parameters["scope"] = scopes.joined
        let (object, response) = try await post(endpoint, parameters, "device authorization endpoint", correlationID)
        let correlation = ServerResponse.correlationID(object, response, requestCorrelationID: correlationID)
        return try DeviceAuthorizationResponse(json: object, host: Self.host(of: endpoint), status: response.statusCode, correlationID: correlation)
    }

    /// Redeems a device code at the token endpoint: one poll of the device authorization grant
    /// (RFC 8628 §3.4, `grant_type=urn:ietf:params:oauth:grant-type:device_code`).
    /// - Returns: the tokens once the user has approved.
    /// - Throws: ``MSALError`` `.serverError` with `oauthError` `authorization_pending`,
    ///   `slow_down`, `expired_token` or `access_denied` while or when the user does not finish
    ///   (RFC 8628 §3.5), and the other errors described on ``OAuth2Client``.
    public func redeemDeviceCode(
        tokenEndpoint: URL,
        clientID: String,
        deviceCode: String,
        extraParameters: [String: String] = [:],
        correlationID: String
    ) async throws(MSALError) -> TokenResponse {
        var parameters = extraParameters
        parameters["grant_type"] = Self.deviceCodeGrantType
        parameters["client_id"] = clientID
        parameters["device_code"] = deviceCode
        return try await token(tokenEndpoint, parameters, correlationID)
    }

    /// Redeems a refresh token for new tokens (RFC 6749 §6).
    /// - Returns: the new tokens; the response may or may not carry a new refresh token.
    /// - Throws: ``MSALError`` `.interactionRequired` when the refresh token is rejected with
    ///   `invalid_grant`; `.serverError` with `.invalidResponse` when the server answers with an
    ///   empty or non-JSON body (Glewlwyd's answer to a revoked refresh token: HTTP 400, empty);
    ///   and the other errors described on ``OAuth2Client``.
    public func redeemRefreshToken(
        tokenEndpoint: URL,
        clientID: String,
        refreshToken: String,
        scopes: ScopeSet,
        extraParameters: [String: String] = [:],
        correlationID: String
    ) async throws(MSALError) -> TokenResponse {
        var parameters = extraParameters
        parameters["grant_type"] = "refresh_token"
        parameters["client_id"] = clientID
        parameters["refresh_token"] = refreshToken
        parameters["scope"] = scopes.joined
        return try await token(tokenEndpoint, parameters, correlationID)
    }

    /// Posts any grant to the token endpoint (e.g. `authorization_code` with PKCE, RFC 6749
    /// §4.1.3 and RFC 7636 §4.5): the caller supplies every form parameter.
    /// - Returns: the tokens.
    /// - Throws: ``MSALError`` as described on ``OAuth2Client``.
    public func redeem(
        tokenEndpoint: URL,
        parameters: [String: String],
        correlationID: String
    ) async throws(MSALError) -> TokenResponse {
        try await token(tokenEndpoint, parameters, correlationID)
    }

    private func token(_ endpoint: URL, _ parameters: [String: String], _ correlationID: String) async throws(MSALError) -> TokenResponse {
        let name = "token endpoint"
        let response = try await send(endpoint, parameters, name, correlationID)
        // The usual answer, read member by member; anything else through the dictionary, which
        // throws what an error answer means.
        if let tokens = TokenResponse(readingSuccess: response, requestCorrelationID: correlationID) { return tokens }
        let object = try ServerResponse.jsonObject(
            response, endpoint: name, host: Self.host(of: endpoint), requestCorrelationID: correlationID, now: clock.now())
        let correlation = ServerResponse.correlationID(object, response, requestCorrelationID: correlationID)
        return try TokenResponse(json: object, host: Self.host(of: endpoint), status: response.statusCode, correlationID: correlation)
    }

    private func post(
        _ endpoint: URL,
        _ parameters: [String: String],
        _ name: String,
        _ correlationID: String
    ) async throws(MSALError) -> ([String: JSONValue], HTTPResponse) {
        let response = try await send(endpoint, parameters, name, correlationID)
        let object = try ServerResponse.jsonObject(
            response, endpoint: name, host: Self.host(of: endpoint), requestCorrelationID: correlationID, now: clock.now())
        return (object, response)
    }

    /// Posts the form and returns the answer, whatever its status.
    private func send(
        _ endpoint: URL,
        _ parameters: [String: String],
        _ name: String,
        _ correlationID: String
    ) async throws(MSALError) -> HTTPResponse {
        // Read only for a message (a URL's host costs more than the rest of building the request).
        func host() -> String { Self.host(of: endpoint) }
        let request = HTTPRequest.formPost(url: endpoint, parameters: parameters, headers: Self.standardHeaders(correlationID: correlationID))
        logger.debug("POST \(name) \(host())\(parameters["grant_type"].map { " (grant_type \($0))" } ?? ""), correlation ID \(correlationID)")
        let started = Date()
        let response: HTTPResponse
        do {
            response = try await transport.send(request)
        } catch {
            logger.debug("\(name) \(host()) failed: \(error.codeString)")
            throw error
        }
        logger.debug("\(name) \(host()) answered HTTP \(response.statusCode) in \(String(format: "%.3f", Date().timeIntervalSince(started))) s")
        return response
    }

    /// The endpoint's host, or the whole URL when it has none: how messages name it.
    private static func host(of endpoint: URL) -> String { endpoint.host ?? endpoint.absoluteString }
}
