public import Foundation
public import MSALCore
import MSALCache
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
    /// - Throws: ``MSALError``: `.internal(.sessionCanceled)` after
    ///   ``cancelCurrentInteractiveSession()``; `.internal(.invalidState)` when a private-use-scheme
    ///   redirect with a missing or foreign `state` is handed to ``handleResponse(url:)``;
    ///   `.internal(.interactiveSessionAlreadyRunning)` when another
    ///   interactive sign-in of this application has not ended; `.internal(.mismatchedUser)` when
    ///   ``InteractiveTokenParameters/account`` was given and another user signed in (nothing is
    ///   cached); `.userCanceled` when the user declines (`access_denied`) or the task
    ///   is canceled; `.internal(.timeout)` when no redirect arrives within
    ///   ``InteractiveTokenParameters/timeout``; `.internal(.networkError)` when the listener's port
    ///   is taken or the provider is down; `.internal(.invalidScope)`; `.internal(.invalidIDToken)`
    ///   for a nonce mismatch; `.serverError` for any other error in the redirect or at the token
    ///   endpoint; `.serverDeclinedScopes`; `.internal(.cacheError)` (or `.cacheUnavailable`) when the
    ///   cache cannot be read, before the browser opens.
    public func acquireToken(with parameters: InteractiveTokenParameters) async throws(MSALError) -> AuthenticationResult {
        let correlationID = (parameters.correlationID ?? UUID()).uuidString.lowercased()
        let started = interactiveSession.withLock { running in
            if running { return false }
            running = true
            return true
        }
        guard started else {
            throw MSALError(
                .internal, internalCode: .interactiveSessionAlreadyRunning,
                message: "An interactive sign-in of this application is already running; wait for it to end.",
                correlationID: correlationID)
        }
        interactiveSessionCanceled.withLock { $0 = false }
        defer { interactiveSession.withLock { $0 = false } }
        do {
            return try await interactiveSignIn(parameters, correlationID: correlationID)
        } catch {
            if interactiveSessionCanceled.withLock({ $0 }) {
                throw MSALError(.internal, internalCode: .sessionCanceled, message: "The application canceled the interactive sign-in.", correlationID: correlationID)
            }
            throw Self.interactiveFailure(error).filling(correlationID: correlationID)
        }
    }

    /// Ends the running interactive sign-in, if any: it throws `.internal(.sessionCanceled)` and its
    /// loopback listener (if it has one) closes. For an app that lets the user give up from its own
    /// window, as MSAL for iOS/macOS `cancelCurrentWebAuthSession`.
    /// - Returns: `true` when a sign-in was running.
    @discardableResult
    public func cancelCurrentInteractiveSession() -> Bool {
        guard interactiveSession.withLock({ $0 }) else { return false }
        interactiveSessionCanceled.withLock { $0 = true }
        interactiveListener.withLock { $0 }?.stop()
        pendingAuthorizations.failAll(MSALError.internal(.sessionCanceled, "The application canceled the interactive sign-in."))
        return true
    }

    /// Completes a pending interactive sign-in whose redirect URI is a private-use scheme: pass the
    /// URL the system handed to the app (through its `x-scheme-handler` desktop entry).
    ///
    /// Call it in the process that started the sign-in (a second process started by the desktop's
    /// scheme handler must pass the URL on, e.g. over D-Bus or a socket of the app's own). A URL
    /// that arrives before the flow starts waiting is kept for it.
    ///
    /// - Returns: `true` when the URL is the configured redirect URI and a sign-in of this
    ///   application is in progress: with its `state` the sign-in completes, with a missing or
    ///   foreign `state` it ends with `.internal(.invalidState)`; `false` otherwise (another URL, no
    ///   sign-in in progress, a second delivery).
    public func handleResponse(url: URL) -> Bool {
        // Only the configured redirect URI (scheme, host and path; as MSAL for iOS/macOS checks).
        let expected = redirectURI.url
        guard url.scheme?.lowercased() == expected.scheme?.lowercased(),
              (url.host ?? "").lowercased() == (expected.host ?? "").lowercased(),
              Self.trimmedPath(url) == Self.trimmedPath(expected)
        else { return false }
        return pendingAuthorizations.deliver(url)
    }

    private static func trimmedPath(_ url: URL) -> String {
        let path = url.path
        return path.hasSuffix("/") ? String(path.dropLast()) : path
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
        // The tokens go to the cache: one that cannot be read (damaged, wrong key) fails now, before
        // the browser opens for tokens that could not be kept.
        _ = try cache.revision()
        let authority = parameters.authority ?? configuration.authority
        logger.info("interactive sign-in at \(authority.environment), correlation \(correlationID)")
        _ = try await environments(for: authority, correlationID: correlationID)
        let openID = try await discovery.configuration(for: authority, correlationID: correlationID)
        var request = try AuthorizationRequest(
            authorizationEndpoint: openID.authorizationEndpoint,
            clientID: configuration.clientID,
            redirectURI: redirectURI.url,
            scopes: scopes.union(extraScopes).union(ScopeSet.reservedOIDCScopes),
            prompt: parameters.promptType,
            loginHint: parameters.loginHint ?? parameters.account?.username,
            domainHint: parameters.domainHint,
            claims: try Self.claimsParameter(requested: parameters.claims, capabilities: configuration.clientCapabilities),
            includeClientInfo: Self.requestsClientInfo(authority.type),
            extraQueryParameters: parameters.extraQueryParameters)
        let flow = AuthorizationCodeFlow(client: client, browser: parameters.browser, logger: logger)
        let onURL = parameters.authorizationURLHandler ?? { _, _ in }
        let response: TokenResponse
        if redirectURI.isLoopback {
            // Bind first: with port 0 the request must carry the port the system chose.
            let listener = LoopbackRedirectListener(redirectURI: redirectURI.url, expectedState: request.state, timeout: parameters.timeout)
            request.redirectURI = try listener.start()
            interactiveListener.withLock { $0 = listener }
            defer { interactiveListener.withLock { $0 = nil } }
            if interactiveSessionCanceled.withLock({ $0 }) { listener.stop() }
            response = try await flow.run(
                request: request, listener: listener, tokenEndpoint: openID.tokenEndpoint,
                correlationID: correlationID, onAuthorizationURL: onURL)
        } else {
            let pending = pendingAuthorizations
            let state = request.state
            let timeout = parameters.timeout
            pending.register(state: state)
            defer { pending.unregister(state: state) }
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
                expectedHomeAccountID: nil, knownRealm: nil, accountSource: "authorization_code", nonce: request.nonce,
                requiredHomeAccountID: parameters.account.flatMap { LegacyUser.isLegacyIdentifier($0.identifier) ? nil : $0.identifier }))
    }
}

/// Interactive sign-ins waiting for a redirect to a private-use scheme, keyed by `state`.
/// ``PublicClientApplication/handleResponse(url:)`` completes the one whose state the URL carries.
///
/// A sign-in is registered before its browser opens, so a redirect delivered at once (even before
/// the flow starts waiting) is kept for it rather than dropped.
final class PendingAuthorizations: Sendable {
    private enum Slot {
        case registered
        case delivered(AuthorizationResponse)
        case failed(MSALError)
        case waiting(CheckedContinuation<AuthorizationResponse, any Error>)
    }

    private let slots = Mutex<[String: Slot]>([:])

    /// Makes `state` known before the browser opens.
    func register(state: String) {
        slots.withLock { $0[state] = .registered }
    }

    /// Forgets `state` (the sign-in ended); a waiter still waiting gets `.userCanceled`.
    func unregister(state: String) {
        finish(state: state, with: .failure(MSALError(.userCanceled, message: "The sign-in ended.")))
        slots.withLock { _ = $0.removeValue(forKey: state) }
    }

    /// Waits for the redirect carrying `state` (returns at once if it already arrived).
    /// - Throws: `.internal(.timeout)` after `timeout` seconds; `.userCanceled` when the task is canceled.
    func wait(state: String, timeout: TimeInterval) async throws(MSALError) -> AuthorizationResponse {
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let early: Result<AuthorizationResponse, MSALError>? = slots.withLock { slots in
                        switch slots[state] {
                        case .delivered(let response)?:
                            slots[state] = nil
                            return .success(response)
                        case .failed(let error)?:
                            slots[state] = nil
                            return .failure(error)
                        default:
                            slots[state] = .waiting(continuation)
                            return nil
                        }
                    }
                    if let early {
                        continuation.resume(with: early.mapError { $0 as any Error })
                        return
                    }
                    Task { [weak self] in
                        try? await Task.sleep(nanoseconds: UInt64(max(0, timeout) * 1_000_000_000))
                        self?.finish(state: state, with: .failure(MSALError.internal(.timeout, "No redirect arrived within \(secondsPhrase(timeout)); the sign-in was abandoned.")))
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

    /// Hands the redirect to the sign-in of the URL's `state`.
    /// - Returns: whether a registered sign-in took it (`false` for an unknown state or a second delivery).
    func deliver(_ url: URL) -> Bool {
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        guard let state = items.first(where: { $0.name == "state" })?.value,
              slots.withLock({ $0[state] != nil }),
              let response = AuthorizationResponse.parse(url: url, expectedState: state)
        else {
            // The redirect URI, but not this sign-in's state: end the running sign-in rather than
            // let a forged or misrouted response through (one interactive sign-in runs at a time).
            return failAll(MSALError.internal(.invalidState, "A redirect arrived with a missing or unknown state; the sign-in was ended (RFC 6749 §10.12)."))
        }
        let waiter: CheckedContinuation<AuthorizationResponse, any Error>?? = slots.withLock { slots in
            switch slots[state] {
            case .registered?:
                slots[state] = .delivered(response)
                return .some(nil)
            case .waiting(let continuation)?:
                slots[state] = nil
                return .some(continuation)
            case .delivered?, .failed?, nil:
                return nil
            }
        }
        guard let waiter else { return false }
        waiter?.resume(returning: response)
        return true
    }

    /// Ends every sign-in waiting or registered with `error`.
    /// - Returns: whether there was one.
    @discardableResult
    func failAll(_ error: MSALError) -> Bool {
        let states = slots.withLock { Array($0.keys) }
        var ended = false
        for state in states {
            let registeredOnly = slots.withLock { slots -> Bool in
                guard case .registered? = slots[state] else { return false }
                // Not waiting yet: leave the failure for wait() to return.
                slots[state] = .failed(error)
                return true
            }
            ended = registeredOnly || finish(state: state, with: .failure(error)) || ended
        }
        return ended
    }

    @discardableResult
    private func finish(state: String, with result: Result<AuthorizationResponse, MSALError>) -> Bool {
        let continuation: CheckedContinuation<AuthorizationResponse, any Error>? = slots.withLock { slots in
            guard case .waiting(let continuation)? = slots[state] else { return nil }
            slots[state] = nil
            return continuation
        }
        guard let continuation else { return false }
        continuation.resume(with: result.mapError { $0 as any Error })
        return true
    }
}
