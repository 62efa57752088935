public import Foundation
public import MSALCore
import MSALNetwork
import MSALWebAuth
internal import Synchronization

extension PublicClientApplication {
    /// Signs a user in interactively: the authorization code grant with PKCE (RFC 6749 §4.1,
    /// RFC 7636) in the system browser, redirected to a loopback listener (RFC 8252 §7.3) or, for a
    /// private-use scheme, delivered by the app through ``handleResponse(url:)``.
    ///
    /// The user always sees the provider's page (MSAL semantics: use ``acquireTokenSilent(with:)``
    /// first). `state` and `nonce` carry at least 128 random bits from OpenSSL; the ID token's
    /// `nonce` must match. The tokens are cached as for the device code.
    ///
    /// - Returns: the result, with ``AuthenticationResult/tokenSource`` `.identityProvider`.
    /// - Throws: ``MSALError``: `.userCanceled` when the user declines (`access_denied`) or the task
    ///   is canceled; `.internal(.timeout)` when no redirect arrives within
    ///   ``InteractiveTokenParameters/timeout``; `.internal(.networkError)` when the listener's port
    ///   is taken or the provider is down; `.internal(.invalidScope)`; `.internal(.invalidIDToken)`
    ///   for a nonce mismatch; `.serverError` for any other error in the redirect or at the token
    ///   endpoint; `.serverDeclinedScopes`.
    public func acquireToken(with parameters: InteractiveTokenParameters) async throws(MSALError) -> AuthenticationResult {
        let correlationID = (parameters.correlationID ?? UUID()).uuidString.lowercased()
        do {
            return try await interactiveSignIn(parameters, correlationID: correlationID)
        } catch {
            throw Self.interactiveFailure(error).filling(correlationID: correlationID)
        }
    }

    /// Completes a pending interactive sign-in whose redirect URI is a private-use scheme: pass the
    /// URL the system handed to the app (through its `x-scheme-handler` desktop entry).
    ///
    /// - Returns: `true` when the URL's `state` belongs to a sign-in of this application that is
    ///   waiting; `false` otherwise (the URL is not for swift-msal, or the sign-in already ended).
    public func handleResponse(url: URL) -> Bool {
        pendingAuthorizations.deliver(url)
    }

    /// An error redirect saying the user must interact (`prompt=none` answered with
    /// `login_required`, `interaction_required` or `consent_required`, OpenID Connect Core
    /// §3.1.2.6) is `interactionRequired`, as for a silent request; everything else is unchanged.
    static func interactiveFailure(_ error: MSALError) -> MSALError {
        guard error.code == .serverError,
              let oauthError = error.oauthError,
              ["login_required", "interaction_required", "consent_required", "account_selection_required"].contains(oauthError)
        else { return error }
        var mapped = error
        mapped.code = .interactionRequired
        mapped.internalCode = nil
        return mapped
    }

    private func interactiveSignIn(_ parameters: InteractiveTokenParameters, correlationID: String) async throws(MSALError) -> AuthenticationResult {
        let scopes = try ScopeSet.validatedRequest(parameters.scopes)
        let extraScopes = parameters.extraScopesToConsent.isEmpty ? ScopeSet() : try ScopeSet.validatedRequest(parameters.extraScopesToConsent)
        let authority = parameters.authority ?? configuration.authority
        logger.info("interactive sign-in at \(authority.environment), correlation \(correlationID)")
        let openID = try await discovery.configuration(for: authority, correlationID: correlationID)
        var request = try AuthorizationRequest(
            authorizationEndpoint: openID.authorizationEndpoint,
            clientID: configuration.clientID,
            redirectURI: redirectURI.url,
            scopes: scopes.union(extraScopes).union(ScopeSet.reservedOIDCScopes),
            prompt: parameters.promptType,
            loginHint: parameters.loginHint ?? parameters.account?.username,
            domainHint: parameters.domainHint,
            claims: parameters.claims,
            includeClientInfo: authority.type == .aad,
            extraQueryParameters: parameters.extraQueryParameters)
        let flow = AuthorizationCodeFlow(client: client, browser: parameters.browser, logger: logger)
        let onURL = parameters.authorizationURLHandler ?? { _, _ in }
        let response: TokenResponse
        if redirectURI.isLoopback {
            // Bind first: with port 0 the request must carry the port the system chose.
            let listener = LoopbackRedirectListener(redirectURI: redirectURI.url, expectedState: request.state, timeout: parameters.timeout)
            request.redirectURI = try listener.start()
            response = try await flow.run(
                request: request, listener: listener, tokenEndpoint: openID.tokenEndpoint,
                correlationID: correlationID, onAuthorizationURL: onURL)
        } else {
            let pending = pendingAuthorizations
            let state = request.state
            let timeout = parameters.timeout
            response = try await flow.run(
                request: request,
                awaitingResponse: { () async throws(MSALError) -> AuthorizationResponse in
                    try await pending.wait(state: state, timeout: timeout)
                },
                tokenEndpoint: openID.tokenEndpoint, correlationID: correlationID, onAuthorizationURL: onURL)
        }
        return try await handle(
            response,
            context: ResponseContext(
                authority: authority, openID: openID, requestedScopes: scopes, correlationID: correlationID,
                expectedHomeAccountID: nil, knownRealm: nil, accountSource: "authorization_code", nonce: request.nonce))
    }
}

/// Interactive sign-ins waiting for a redirect to a private-use scheme, keyed by `state`.
/// ``PublicClientApplication/handleResponse(url:)`` resumes the one whose state the URL carries.
final class PendingAuthorizations: Sendable {
    private let waiters = Mutex<[String: CheckedContinuation<AuthorizationResponse, any Error>]>([:])

    /// Waits for the redirect carrying `state`.
    /// - Throws: `.internal(.timeout)` after `timeout` seconds; `.userCanceled` when the task is canceled.
    func wait(state: String, timeout: TimeInterval) async throws(MSALError) -> AuthorizationResponse {
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    waiters.withLock { $0[state] = continuation }
                    Task { [weak self] in
                        try? await Task.sleep(nanoseconds: UInt64(max(0, timeout) * 1_000_000_000))
                        self?.finish(state: state, with: .failure(MSALError.internal(.timeout, "No redirect arrived within \(Int(timeout)) seconds; the sign-in was abandoned.")))
                    }
                    if Task.isCancelled {
                        finish(state: state, with: .failure(MSALError(.userCanceled, message: "The sign-in was canceled.")))
                    }
                }
            } onCancel: {
                finish(state: state, with: .failure(MSALError(.userCanceled, message: "The sign-in was canceled.")))
            }
        } catch let error as MSALError {
            throw error
        } catch {
            throw MSALError.internal(.unexpected, "Waiting for the redirect failed: \(error).")
        }
    }

    /// Resumes the waiter of the URL's `state`.
    /// - Returns: whether a waiter took it.
    func deliver(_ url: URL) -> Bool {
        guard let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems,
              let state = items.first(where: { $0.name == "state" })?.value,
              waiters.withLock({ $0[state] != nil }),
              let response = AuthorizationResponse.parse(url: url, expectedState: state)
        else { return false }
        return finish(state: state, with: .success(response))
    }

    @discardableResult
    private func finish(state: String, with result: Result<AuthorizationResponse, MSALError>) -> Bool {
        guard let continuation = waiters.withLock({ $0.removeValue(forKey: state) }) else { return false }
        continuation.resume(with: result.mapError { $0 as any Error })
        return true
    }
}
