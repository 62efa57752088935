public import Foundation
import MSALCore
import MSALWebAuth
import Synchronization

// The authorization code grant with PKCE, as the Microsoft identity platform serves it
// ("Microsoft identity platform and OAuth 2.0 authorization code flow"; RFC 6749 §4.1,
// RFC 7636, RFC 8252 for native apps).

extension LocalIdentityProvider {
    /// What the person at the browser does on the next authorize request that needs them.
    ///
    /// Set with ``LocalIdentityProvider/setNextUserAction(_:)``; used once. A request with
    /// `prompt=none` never consumes it: no one is asked.
    public enum UserAction: Sendable, Hashable {
        /// Signs in as this user (matched case-insensitively) and consents.
        case signIn(username: String)
        /// Picks this account on the account picker (`prompt=select_account`) and consents;
        /// handled like ``signIn(username:)``.
        case pickAccount(username: String)
        /// Signs in, then declines the consent screen: the redirect carries `error=access_denied`
        /// and `AADSTS65004` ("User declined to consent to access the app.").
        case denyConsent
        /// Cancels the sign-in: the redirect carries `error=access_denied` with
        /// `error_subcode=cancel`, which MSAL reads as "the user canceled".
        case cancel
    }

    /// Decides what the person does on the next authorize request that is not `prompt=none`.
    ///
    /// Without one, the person signs in as the `login_hint` user when that user exists, otherwise
    /// as ``defaultUsername`` (``demoUser`` unless the provider was created with other users), and
    /// consents. Setting a new action replaces one not yet used.
    public func setNextUserAction(_ action: UserAction) {
        state.withLock { $0.nextUserAction = action }
    }

    /// Registers a redirect URI that must then match exactly (case-sensitive), e.g.
    /// `msauth.com.contoso.App://auth`, as Entra requires of every redirect URI that is not a
    /// loopback one.
    ///
    /// Loopback URIs (`http://127.0.0.1:<port>/…`, `http://localhost:<port>/…`) need no
    /// registration: any port and path are accepted, as Entra does for native apps
    /// (RFC 8252 §7.3).
    public func registerRedirectURI(_ uri: String) {
        _ = state.withLock { $0.registeredRedirectURIs.insert(uri) }
    }

    /// Seconds an authorization code can be redeemed after it is issued. Default 600: Entra's
    /// codes "expire after about 10 minutes". Measured with the injected ``WallClock``.
    public var authorizationCodeLifetime: TimeInterval {
        get { state.withLock { $0.authorizationCodeLifetime } }
        set { state.withLock { $0.authorizationCodeLifetime = newValue } }
    }

    /// The user signed in to the browser session (the single sign-on cookie), or `nil`.
    ///
    /// An interactive sign-in at the authorize endpoint sets it; `prompt=none` succeeds only
    /// with it.
    public var browserSessionUsername: String? {
        state.withLock { state in state.sessionUsername.flatMap { state.users[$0]?.username } }
    }

    /// Ends the browser session, as signing out in the browser does: the next `prompt=none`
    /// request gets `login_required`.
    public func signOutBrowserSession() {
        state.withLock { state in
            state.sessionUsername = nil
            state.sessionState = UUID().uuidString.lowercased()
        }
    }

    /// Every request received at the authorize endpoint, oldest first; the query parameters are
    /// in ``RecordedRequest/formParameters``.
    public var authorizeRequests: [RecordedRequest] {
        state.withLock { $0.requests.filter { $0.endpoint == .authorize } }
    }

    // MARK: - The authorize endpoint (RFC 6749 §4.1.1–§4.1.2.1)

    /// Prompt values Entra accepts.
    private static let promptValues: Set<String> = ["login", "none", "consent", "select_account"]

    private enum Decision {
        case signedIn(username: String)
        case error(String, codes: [Int], message: String, subError: String?)
        case unknownUser(String)
    }

    func authorize(_ request: HTTPServerRequest, tenantSegment: String, dialect: Dialect = .entra, _ context: RequestContext) -> HTTPServerResponse {
        let query = request.queryItems

        // Until the client and its redirect URI are known good, nothing is sent to the redirect
        // URI (RFC 6749 §4.1.2.1): the person sees an error page.
        guard let clientID = query["client_id"], !clientID.isEmpty else {
            return errorPage(900144, "The request body must contain the following parameter: 'client_id'.", context)
        }
        guard UUID(uuidString: clientID) != nil else {
            return errorPage(700016, "Application with identifier '\(clientID)' was not found in the directory '\(tenantSegment)'.", context)
        }
        guard isRegisteredClient(clientID) else {
            return errorPage(700016, LocalIdentityProvider.unknownClientMessage(clientID, tenantSegment), context)
        }
        guard resolveTenant(tenantSegment, dialect: dialect) != nil else {
            return errorPage(90002, "Tenant '\(tenantSegment)' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.", context)
        }
        guard let redirectURI = query["redirect_uri"], !redirectURI.isEmpty else {
            return errorPage(900144, "The request body must contain the following parameter: 'redirect_uri'.", context)
        }
        let registered = state.withLock { $0.registeredRedirectURIs.contains(redirectURI) }
        guard registered || LocalIdentityProvider.isLoopbackRedirectURI(redirectURI) else {
            return errorPage(
                50011,
                "The redirect URI '\(redirectURI)' specified in the request does not match the redirect URIs configured for the application '\(clientID)'.",
                context)
        }

        // From here on, errors go back to the client at its redirect URI.
        let clientState = query["state"]
        func fail(_ error: String, _ codes: [Int], _ message: String, subError: String? = nil) -> HTTPServerResponse {
            redirectError(to: redirectURI, error: error, codes: codes, message: message, subError: subError, state: clientState, context)
        }
        guard let responseType = query["response_type"], !responseType.isEmpty else {
            return fail("invalid_request", [900144], "The request body must contain the following parameter: 'response_type'.")
        }
        guard responseType == "code" else {
            return fail("unsupported_response_type", [70005], "The app requested an unsupported response type '\(responseType)'; this provider answers only 'code'.")
        }
        if let mode = query["response_mode"], mode != "query" {
            return fail("invalid_request", [70007], "The app requested an unsupported response_mode '\(mode)'; this provider answers only with 'query'.")
        }
        guard let scope = query["scope"], !TokenMint.scopes(scope).isEmpty else {
            return fail("invalid_request", [900144], "The request body must contain the following parameter: 'scope'.")
        }
        guard let challenge = query["code_challenge"], !challenge.isEmpty else {
            return fail("invalid_request", [900144], "The request body must contain the following parameter: 'code_challenge'.")
        }
        // RFC 7636 §4.3: a missing method means `plain`. Entra accepts `plain`; this provider
        // refuses it, as OAuth 2.0 Security BCP (RFC 9700 §2.1.1) advises and as MSAL never sends it.
        let method = query["code_challenge_method"] ?? "plain"
        guard method == "S256" else {
            return fail("invalid_request", [], "The code_challenge_method '\(method)' is not supported; this provider accepts only 'S256' (RFC 7636 §4.2).")
        }
        guard challenge.utf8.count == 43, Base64URL.decode(challenge)?.count == 32 else {
            return fail("invalid_request", [501491], "Invalid size of Code_Challenge parameter.")
        }
        let prompt = query["prompt"]
        if let prompt, !LocalIdentityProvider.promptValues.contains(prompt) {
            return fail("invalid_request", [90023], "Unsupported 'prompt' value '\(prompt)'.")
        }

        let decision = decide(prompt: prompt, loginHint: query["login_hint"].flatMap { $0.isEmpty ? nil : $0 })
        switch decision {
        case .error(let error, let codes, let message, let subError):
            return fail(error, codes, message, subError: subError)
        case .unknownUser(let username):
            // Entra keeps the person on its sign-in page; nothing reaches the redirect URI.
            return signInPage(message: "AADSTS50034: The user account '\(username)' does not exist in the directory.", context)
        case .signedIn(let username):
            let code = TokenMint.randomToken(bytes: 64)
            let sessionState: String = state.withLock { state in
                state.authorizationCodes[code] = ProviderState.AuthorizationCodeGrant(
                    username: username,
                    clientID: clientID,
                    redirectURI: redirectURI,
                    scopes: TokenMint.scopes(scope),
                    codeChallenge: challenge,
                    nonce: query["nonce"].flatMap { $0.isEmpty ? nil : $0 },
                    clientInfo: query["client_info"] == "1",
                    expiresAt: context.now.addingTimeInterval(state.authorizationCodeLifetime),
                    redeemed: false)
                return state.sessionState
            }
            var parameters = [("code", code)]
            if let clientState { parameters.append(("state", clientState)) }
            parameters.append(("session_state", sessionState))
            return redirect(to: redirectURI, parameters)
        }
    }

    /// Plays the person: `prompt=none` uses the browser session only; otherwise the next
    /// ``UserAction`` (or the default: the `login_hint` user if known, else ``defaultUsername``).
    private func decide(prompt: String?, loginHint: String?) -> Decision {
        state.withLock { state in
            if prompt == "none" {
                // "If the request can't be completed silently via single-sign on", Entra answers
                // login_required / interaction_required (OpenID Connect Core §3.1.2.6).
                guard let session = state.sessionUsername, loginHint.map({ $0.lowercased() == session }) ?? true else {
                    return .error("login_required", codes: [50058], message: "A silent sign-in request was sent but no user is signed in.", subError: nil)
                }
                return .signedIn(username: session)
            }
            let action = state.nextUserAction
            state.nextUserAction = nil
            let username: String
            switch action {
            case .signIn(let name), .pickAccount(let name):
                username = name.lowercased()
            case .denyConsent:
                return .error("access_denied", codes: [65004], message: "User declined to consent to access the app.", subError: nil)
            case .cancel:
                return .error("access_denied", codes: [], message: "the user canceled the authentication", subError: "cancel")
            case nil:
                if let hint = loginHint?.lowercased(), state.users[hint] != nil {
                    username = hint
                } else if let fallback = state.defaultUsername {
                    username = fallback
                } else {
                    return .unknownUser(loginHint ?? "")
                }
            }
            guard state.users[username] != nil else { return .unknownUser(username) }
            if state.sessionUsername != username {
                state.sessionUsername = username
                state.sessionState = UUID().uuidString.lowercased()
            }
            return .signedIn(username: username)
        }
    }

    /// `http` with host `127.0.0.1` or `localhost`, any port and path, no fragment
    /// (RFC 8252 §7.3; RFC 6749 §3.1.2 forbids fragments).
    static func isLoopbackRedirectURI(_ uri: String) -> Bool {
        guard let components = URLComponents(string: uri),
              components.scheme?.lowercased() == "http",
              let host = components.host?.lowercased(),
              host == "127.0.0.1" || host == "localhost",
              components.fragment == nil,
              components.user == nil, components.password == nil
        else { return false }
        return true
    }

    // MARK: - Responses of the authorize endpoint

    /// `302 Found` to the redirect URI with the parameters added to its query
    /// (RFC 6749 §4.1.2, `application/x-www-form-urlencoded`, Appendix B).
    private func redirect(to redirectURI: String, _ parameters: [(String, String)]) -> HTTPServerResponse {
        let encoded = parameters.map { "\(LocalIdentityProvider.formEncoded($0.0))=\(LocalIdentityProvider.formEncoded($0.1))" }
        let location = redirectURI + (redirectURI.contains("?") ? "&" : "?") + encoded.joined(separator: "&")
        var response = HTTPServerResponse.html(
            "<!DOCTYPE html><html><head><title>Redirecting</title></head><body><a href=\"\(TokenMint.htmlEscaped(location))\">Continue</a></body></html>",
            status: 302)
        response.headers["Location"] = location
        response.headers["Cache-Control"] = "no-store"
        response.headers["Pragma"] = "no-cache"
        return response
    }

    /// An error sent to the redirect URI (RFC 6749 §4.1.2.1): `error`, `error_description` in
    /// Entra's form (`AADSTSnnnn: …` plus trace lines), `error_subcode` when given, `state`.
    private func redirectError(
        to redirectURI: String, error: String, codes: [Int], message: String, subError: String?, state clientState: String?,
        _ context: RequestContext
    ) -> HTTPServerResponse {
        var parameters = [("error", error), ("error_description", entraDescription(codes: codes, message: message, context))]
        if let subError { parameters.append(("error_subcode", subError)) }
        if let clientState { parameters.append(("state", clientState)) }
        return redirect(to: redirectURI, parameters)
    }

    private func entraDescription(codes: [Int], message: String, _ context: RequestContext) -> String {
        let prefix = codes.first.map { "AADSTS\($0): " } ?? ""
        let trace = UUID().uuidString.lowercased()
        return "\(prefix)\(message)\r\nTrace ID: \(trace)\r\nCorrelation ID: \(context.correlationID)\r\nTimestamp: \(LocalIdentityProvider.entraTimestamp(context.now))"
    }

    /// The page Entra shows when it cannot trust the redirect URI: `400`, HTML, no `Location`.
    private func errorPage(_ code: Int, _ message: String, _ context: RequestContext) -> HTTPServerResponse {
        var response = HTTPServerResponse.html("""
            <!DOCTYPE html>
            <html><head><meta charset="utf-8"><title>Sign in to your account</title></head>
            <body><h1>Sorry, but we're having trouble signing you in.</h1>
            <p id="error">AADSTS\(code): \(TokenMint.htmlEscaped(message))</p>
            <p>Correlation ID: \(TokenMint.htmlEscaped(context.correlationID))<br>Timestamp: \(LocalIdentityProvider.entraTimestamp(context.now))</p>
            </body></html>
            """, status: 400)
        response.headers["Cache-Control"] = "no-store"
        return response
    }

    /// The sign-in page with a message, where the person stays (`200`, no redirect).
    private func signInPage(message: String, _ context: RequestContext) -> HTTPServerResponse {
        var response = HTTPServerResponse.html("""
            <!DOCTYPE html>
            <html><head><meta charset="utf-8"><title>Sign in to your account</title></head>
            <body><h1>Sign in</h1><p id="error">\(TokenMint.htmlEscaped(message))</p></body></html>
            """, status: 200)
        response.headers["Cache-Control"] = "no-store"
        return response
    }

    /// Percent-encodes all but the unreserved characters (RFC 3986 §2.3), so the value survives
    /// both query and form decoding.
    static func formEncoded(_ value: String) -> String {
        var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    // MARK: - The authorization_code grant (RFC 6749 §4.1.3, RFC 7636 §4.5–§4.6)

    private enum Redemption {
        case error([Int], String)
        case success(ProviderState.AuthorizationCodeGrant)
    }

    /// Redeems a code once, before it expires, with the same `client_id` and `redirect_uri` as
    /// the authorize request and a `code_verifier` whose S256 challenge matches. Errors are
    /// `invalid_grant` with Entra's codes: `AADSTS9002313` (unknown code), `AADSTS54005` (already
    /// redeemed), `AADSTS70008` (expired), `AADSTS500112` (redirect URI differs), `AADSTS501481`
    /// (verifier does not match).
    func authorizationCodeGrant(
        form: [String: String], clientID: String, tenant: ResolvedTenant, dialect: Dialect = .entra, wantsClientInfo: Bool,
        _ context: RequestContext
    ) -> HTTPServerResponse {
        guard let code = form["code"], !code.isEmpty else { return missingParameter("code", context) }
        guard let redirectURI = form["redirect_uri"], !redirectURI.isEmpty else { return missingParameter("redirect_uri", context) }
        let verifier = form["code_verifier"] ?? ""
        let now = context.now
        let outcome: Redemption = state.withLock { state in
            guard let grant = state.authorizationCodes[code] else {
                return .error([9002313], "Invalid request. Request is malformed or invalid.")
            }
            guard grant.clientID.lowercased() == clientID.lowercased() else {
                return .error([70000], "The provided authorization code was issued to another client.")
            }
            if grant.redeemed {
                return .error([54005], "OAuth2 Authorization code was already redeemed, please retry with a new valid code or use an existing refresh token.")
            }
            if grant.expiresAt <= now {
                return .error([70008], "The provided authorization code or refresh token has expired due to inactivity. Send a new interactive authorization request for this user and resource.")
            }
            guard grant.redirectURI == redirectURI else {
                return .error([500112], "The reply address '\(redirectURI)' does not match the reply address '\(grant.redirectURI)' provided when requesting Authorization code.")
            }
            guard LocalIdentityProvider.isValidCodeVerifier(verifier), LocalIdentityProvider.s256(verifier) == grant.codeChallenge else {
                return .error([501481], "The Code_Verifier does not match the code_challenge supplied in the authorization request.")
            }
            state.authorizationCodes[code]?.redeemed = true
            return .success(grant)
        }
        switch outcome {
        case .error(let codes, let message):
            return errorResponse("invalid_grant", codes: codes, message: message, context)
        case .success(let grant):
            let requested = form["scope"].map(TokenMint.scopes) ?? []
            return issueTokens(
                username: grant.username, clientID: clientID, scopes: requested.isEmpty ? grant.scopes : requested,
                tenant: tenant, dialect: dialect, wantsClientInfo: wantsClientInfo || grant.clientInfo, nonce: grant.nonce, context)
        }
    }
}
