public import Foundation
public import MSALCore
public import MSALNetwork

/// The authorization code grant with PKCE through the system browser (RFC 6749 §4.1, RFC 7636,
/// RFC 8252 §4.1): open the authorization URL, receive the code at the redirect URI, redeem it.
///
/// A thin I/O shell over ``LoopbackRedirectListener``, a ``BrowserLauncher`` and
/// ``OAuth2Client``. It does not check the ID token's `nonce`: the caller does that with
/// ``AuthorizationRequest/nonce`` after it decodes the ID token. It logs milestones at info,
/// never the authorization URL (it carries `state`, `nonce` and the challenge), the code, the
/// verifier or a token.
public struct AuthorizationCodeFlow: Sendable {
    /// The client that redeems the code at the token endpoint.
    public let client: OAuth2Client
    /// Opens the authorization URL.
    public let browser: any BrowserLauncher
    private let logger: Logger

    /// Creates a flow.
    /// - Parameters:
    ///   - client: redeems the code.
    ///   - browser: opens the authorization URL, e.g. ``SystemBrowserLauncher``.
    ///   - logger: default ``Logger/none``.
    public init(client: OAuth2Client, browser: any BrowserLauncher, logger: Logger = .none) {
        self.client = client
        self.browser = browser
        self.logger = logger
    }

    /// Signs in through the browser with a loopback redirect URI (RFC 8252 §7.3).
    ///
    /// Starts `listener` (if not yet started) BEFORE opening the browser, opens ``AuthorizationRequest/url``,
    /// calls `onAuthorizationURL` (so the app can show the URL when no browser opened), waits for
    /// the redirect, then redeems the code with ``AuthorizationRequest/tokenParameters(code:)``.
    /// The listener is closed on every way out (without waiting for idle browser connections).
    ///
    /// Build `request` with the redirect URI that ``LoopbackRedirectListener/start()`` returned
    /// (it carries the bound port), and the listener with `request.state`.
    /// - Parameters:
    ///   - request: the authorization request.
    ///   - listener: receives the redirect; one listener per sign-in.
    ///   - tokenEndpoint: where the code is redeemed.
    ///   - correlationID: sent as `client-request-id` and set on every error thrown.
    ///   - onAuthorizationURL: receives the authorization URL and whether a browser was
    ///     started; called once, after the browser launch, before waiting.
    /// - Returns: the token response (the caller validates the ID token and its `nonce`).
    /// - Throws: ``MSALError``: `.internal(.invalidRedirectURI)` when the request's redirect URI
    ///   is not the listener's bound redirect URI; the listener's errors from
    ///   ``LoopbackRedirectListener/start()`` (a port in use) and
    ///   ``LoopbackRedirectListener/waitForResponse()`` (`.internal(.timeout)`, `.userCanceled`
    ///   when the task is canceled); the response's error as ``AuthorizationResponse/error``
    ///   (`access_denied` → `.userCanceled`, others `.serverError` with the OAuth fields); the
    ///   token endpoint's error (see ``OAuth2Client``).
    public func run(
        request: AuthorizationRequest,
        listener: LoopbackRedirectListener,
        tokenEndpoint: URL,
        correlationID: String,
        onAuthorizationURL: @escaping @Sendable (URL, _ browserOpened: Bool) async -> Void
    ) async throws(MSALError) -> TokenResponse {
        defer { listener.close() }
        let boundRedirectURI: URL
        do {
            boundRedirectURI = try listener.start()
        } catch {
            throw withCorrelationID(error, correlationID)
        }
        guard Self.sameRedirectURI(request.redirectURI, boundRedirectURI) else {
            throw MSALError(
                .internal, internalCode: .invalidRedirectURI,
                message: "The authorization request's redirect URI (\(request.redirectURI.absoluteString)) is not the one the loopback listener bound (\(boundRedirectURI.absoluteString)); build the request with the URL that start() returns.",
                correlationID: correlationID
            )
        }
        logger.info("Authorization code flow: listening on loopback port \(boundRedirectURI.port.map(String.init) ?? "?"), correlation ID \(correlationID)")
        return try await run(
            request: request,
            awaitingResponse: { () async throws(MSALError) -> AuthorizationResponse in try await listener.waitForResponse() },
            tokenEndpoint: tokenEndpoint,
            correlationID: correlationID,
            onAuthorizationURL: onAuthorizationURL
        )
    }

    /// Signs in through the browser when something else receives the redirect: a private-use
    /// URI scheme (RFC 8252 §7.1) whose redirect the app hands to the facade's
    /// `handleResponse(url:)`.
    ///
    /// Opens ``AuthorizationRequest/url``, calls `onAuthorizationURL`, awaits
    /// `awaitingResponse`, then redeems the code with ``AuthorizationRequest/tokenParameters(code:)``.
    /// - Parameters:
    ///   - request: the authorization request.
    ///   - awaitingResponse: returns the authorization response once it arrived (it must check
    ///     `state`, e.g. with ``AuthorizationResponse/parse(url:expectedState:)``), or throws
    ///   (a timeout, `.userCanceled`). It should return promptly when the task is canceled.
    ///   - tokenEndpoint: where the code is redeemed.
    ///   - correlationID: sent as `client-request-id` and set on every error thrown.
    ///   - onAuthorizationURL: receives the authorization URL and whether a browser was
    ///     started; called once, after the browser launch, before waiting.
    /// - Returns: the token response (the caller validates the ID token and its `nonce`).
    /// - Throws: ``MSALError``: `.userCanceled` when the task is canceled; what
    ///   `awaitingResponse` throws; the response's error as ``AuthorizationResponse/error``
    ///   (`access_denied` → `.userCanceled`); the token endpoint's error (see ``OAuth2Client``).
    public func run(
        request: AuthorizationRequest,
        awaitingResponse: @escaping @Sendable () async throws(MSALError) -> AuthorizationResponse,
        tokenEndpoint: URL,
        correlationID: String,
        onAuthorizationURL: @escaping @Sendable (URL, _ browserOpened: Bool) async -> Void
    ) async throws(MSALError) -> TokenResponse {
        try checkCancellation(correlationID)
        let url = request.url
        let opened = await browser.open(url)
        logger.info("Authorization code flow: \(opened ? "opened the system browser" : "no browser could be started") for \(request.authorizationEndpoint.host ?? "the authorization endpoint")")
        await onAuthorizationURL(url, opened)
        try checkCancellation(correlationID)

        let response: AuthorizationResponse
        do {
            response = try await awaitingResponse()
        } catch {
            logger.info("Authorization code flow ended while waiting for the redirect: \(error.codeString)")
            throw withCorrelationID(error, correlationID)
        }
        if let failure = response.error {
            logger.info("Authorization code flow: the authorization server answered \(failure.oauthError ?? failure.codeString)")
            throw withCorrelationID(failure, correlationID)
        }
        guard case .code(let code) = response else {
            throw MSALError(.internal, internalCode: .unexpected, message: "An authorization response without an error carried no code.", correlationID: correlationID)
        }
        try checkCancellation(correlationID)
        logger.info("Authorization code flow: received the authorization code; redeeming it")
        do {
            let token = try await client.redeem(
                tokenEndpoint: tokenEndpoint, parameters: request.tokenParameters(code: code), correlationID: correlationID
            )
            logger.info("Authorization code flow: signed in")
            return token
        } catch {
            logger.info("Authorization code flow: redeeming the code failed: \(error.codeString)")
            throw withCorrelationID(error, correlationID)
        }
    }

    // MARK: - Helpers

    /// Same scheme, host, port and path (an empty path is `/`); the request must carry the
    /// listener's bound port.
    private static func sameRedirectURI(_ a: URL, _ b: URL) -> Bool {
        guard let ca = URLComponents(url: a, resolvingAgainstBaseURL: false),
              let cb = URLComponents(url: b, resolvingAgainstBaseURL: false)
        else { return false }
        let pathA = ca.path.isEmpty ? "/" : ca.path
        let pathB = cb.path.isEmpty ? "/" : cb.path
        return ca.scheme?.lowercased() == cb.scheme?.lowercased()
            && ca.host?.lowercased() == cb.host?.lowercased()
            && ca.port == cb.port
            && pathA == pathB
    }

    private func checkCancellation(_ correlationID: String) throws(MSALError) {
        if Task.isCancelled {
            throw MSALError(.userCanceled, message: "The interactive sign-in was canceled.", correlationID: correlationID)
        }
    }

    private func withCorrelationID(_ error: MSALError, _ correlationID: String) -> MSALError {
        var error = error
        if error.correlationID == nil { error.correlationID = correlationID }
        return error
    }
}
