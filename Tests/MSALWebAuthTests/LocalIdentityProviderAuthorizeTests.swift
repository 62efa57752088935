import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import MSALCore
import MSALTestSupport

/// The browser's side of the authorization code flow, over real HTTP without following redirects.
private struct Browser {
    let provider: LocalIdentityProvider
    let session = URLSession(configuration: .ephemeral, delegate: RefuseRedirects(), delegateQueue: nil)

    /// A fresh RFC 7636 §4.1 verifier: 32 random bytes, base64url (43 characters).
    static func newVerifier() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode(Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }))
    }

    struct Reply {
        var status: Int
        var location: String?
        var body: String

        /// The query parameters of `Location`.
        var redirectParameters: [String: String] {
            guard let location, let items = URLComponents(string: location)?.queryItems else { return [:] }
            return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
        }
    }

    func get(_ path: String, _ parameters: [String: String?]) async throws -> Reply {
        let query = ProviderClient.formEncode(parameters.compactMapValues { $0 })
        var request = URLRequest(url: URL(string: "\(provider.baseURL.absoluteString)\(path)?\(query)")!)
        request.httpMethod = "GET"
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return Reply(status: http.statusCode, location: http.value(forHTTPHeaderField: "Location"), body: String(decoding: data, as: UTF8.self))
    }

    /// An authorize request with MSAL's usual parameters; pass `nil` to leave one out.
    func authorize(
        tenant: String = "common",
        redirectURI: String? = "http://127.0.0.1:53127/",
        verifier: String = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        overrides: [String: String?] = [:]
    ) async throws -> Reply {
        var parameters: [String: String?] = [
            "client_id": LocalIdentityProvider.demoClientID,
            "response_type": "code",
            "redirect_uri": redirectURI,
            "scope": "user.read openid profile offline_access",
            "state": "state-\(UUID().uuidString)",
            "nonce": "nonce-123",
            "code_challenge": LocalIdentityProvider.s256(verifier),
            "code_challenge_method": "S256",
            "client_info": "1",
        ]
        for (key, value) in overrides { parameters[key] = value }
        return try await get("/\(tenant)/oauth2/v2.0/authorize", parameters)
    }

    /// The code from a successful authorize redirect.
    func code(redirectURI: String = "http://127.0.0.1:53127/", verifier: String = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
              overrides: [String: String?] = [:]) async throws -> String {
        let reply = try await authorize(redirectURI: redirectURI, verifier: verifier, overrides: overrides)
        #expect(reply.status == 302)
        return try #require(reply.redirectParameters["code"])
    }

    /// The token request that redeems a code (RFC 6749 §4.1.3, RFC 7636 §4.5).
    func redeem(_ code: String, redirectURI: String? = "http://127.0.0.1:53127/",
                verifier: String? = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
                clientInfo: Bool = true, tenant: String = "common") async throws -> ProviderClient.Reply {
        var form = [
            "grant_type": "authorization_code",
            "client_id": LocalIdentityProvider.demoClientID,
            "code": code,
            "scope": "user.read openid profile offline_access",
        ]
        if let redirectURI { form["redirect_uri"] = redirectURI }
        if let verifier { form["code_verifier"] = verifier }
        if clientInfo { form["client_info"] = "1" }
        return try await ProviderClient(provider: provider).send("POST", "/\(tenant)/oauth2/v2.0/token", form: form)
    }
}

@Suite("LocalIdentityProvider authorize endpoint")
struct LocalIdentityProviderAuthorizeTests {
    private func started(clock: any WallClock = SystemWallClock()) throws -> (LocalIdentityProvider, Browser) {
        let provider = LocalIdentityProvider(clock: clock)
        try provider.start()
        return (provider, Browser(provider: provider))
    }

    private static let bob = LocalIdentityProvider.User(
        username: "bob@fabrikam.example", objectID: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
        tenantID: "11111111-2222-4333-8444-555555555555", name: "Bob")

    private func preferredUsername(_ reply: ProviderClient.Reply) throws -> String? {
        try IDTokenClaims(jwt: try #require(reply["id_token"])).preferredUsername
    }

    /// Checks an error redirect: `error`, an Entra description, the echoed `state`, no `code`.
    private func expectRedirectError(_ reply: Browser.Reply, to redirectURI: String, _ error: String, code: Int?, state: String?,
                                     sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reply.status == 302, sourceLocation: sourceLocation)
        #expect(reply.location?.hasPrefix(redirectURI + "?") == true, "\(reply.location ?? "nil")", sourceLocation: sourceLocation)
        let parameters = reply.redirectParameters
        #expect(parameters["error"] == error, sourceLocation: sourceLocation)
        #expect(parameters["state"] == state, sourceLocation: sourceLocation)
        #expect(parameters["code"] == nil, sourceLocation: sourceLocation)
        if let code {
            #expect(parameters["error_description"]?.hasPrefix("AADSTS\(code): ") == true, "\(parameters["error_description"] ?? "nil")", sourceLocation: sourceLocation)
        }
        #expect(parameters["error_description"]?.contains("Correlation ID: ") == true, sourceLocation: sourceLocation)
    }

    // MARK: PKCE

    @Test func s256MatchesRFC7636AppendixB() {
        #expect(LocalIdentityProvider.s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(LocalIdentityProvider.s256("") == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU")  // SHA-256 of nothing
    }

    // MARK: Success

    @Test func signInEndToEnd() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let verifier = Browser.newVerifier()
        let reply = try await browser.authorize(
            redirectURI: "http://127.0.0.1:53127/callback", verifier: verifier, overrides: ["state": "s-1", "nonce": "n-42"])
        #expect(reply.status == 302)
        let location = try #require(reply.location)
        #expect(location.hasPrefix("http://127.0.0.1:53127/callback?code="))
        let parameters = reply.redirectParameters
        #expect(parameters["state"] == "s-1")
        #expect(parameters["session_state"]?.isEmpty == false)
        #expect(parameters["error"] == nil)
        let code = try #require(parameters["code"])
        #expect(code.count >= 64)
        #expect(provider.browserSessionUsername == LocalIdentityProvider.demoUser.username)

        let recorded = try #require(provider.authorizeRequests.last)
        #expect(recorded.method == "GET")
        #expect(recorded.path == "/common/oauth2/v2.0/authorize")
        #expect(recorded.formParameters["code_challenge"] == LocalIdentityProvider.s256(verifier))
        #expect(recorded.formParameters["nonce"] == "n-42")

        let tokens = try await browser.redeem(code, redirectURI: "http://127.0.0.1:53127/callback", verifier: verifier)
        #expect(tokens.status == 200)
        #expect(tokens["token_type"] == "Bearer")
        #expect(tokens["access_token"]?.isEmpty == false)
        #expect(tokens["refresh_token"]?.isEmpty == false)
        let claims = try IDTokenClaims(jwt: try #require(tokens["id_token"]))
        #expect(claims.nonce == "n-42")
        #expect(claims.preferredUsername == LocalIdentityProvider.demoUser.username)
        #expect(claims.audiences == [LocalIdentityProvider.demoClientID])
        let clientInfo = try ClientInfo(encoded: try #require(tokens["client_info"]))
        #expect(clientInfo.uniqueID == LocalIdentityProvider.demoUser.objectID)
        #expect(clientInfo.uniqueTenantID == LocalIdentityProvider.demoTenantID)
        #expect(provider.tokenRequests.last?.grantType == "authorization_code")

        // The refresh token it issued works like any other.
        let refreshed = try await ProviderClient(provider: provider).refresh(try #require(tokens["refresh_token"]))
        #expect(refreshed.status == 200)
    }

    @Test(arguments: [
        (true, false, true),   // client_info=1 on the authorize request only
        (false, true, true),   // on the token request only
        (false, false, false), // on neither
    ])
    func clientInfoFromEitherRequest(onAuthorize: Bool, onToken: Bool, expected: Bool) async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let code = try await browser.code(overrides: ["client_info": onAuthorize ? "1" : nil])
        let tokens = try await browser.redeem(code, clientInfo: onToken)
        #expect(tokens.status == 200)
        #expect((tokens["client_info"] != nil) == expected)
    }

    @Test func noNonceMeansNoNonceClaim() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let tokens = try await browser.redeem(try await browser.code(overrides: ["nonce": nil]))
        #expect(try IDTokenClaims(jwt: try #require(tokens["id_token"])).nonce == nil)
    }

    // MARK: Redirect URIs

    @Test(arguments: [
        "http://127.0.0.1:1/",
        "http://127.0.0.1:65535/callback",
        "http://127.0.0.1/",
        "http://localhost:8400",
        "http://LOCALHOST:3000/a/b?x=1",
    ])
    func anyLoopbackPortIsAccepted(redirectURI: String) async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let reply = try await browser.authorize(redirectURI: redirectURI)
        #expect(reply.status == 302)
        let separator = redirectURI.contains("?") ? "&" : "?"
        #expect(reply.location?.hasPrefix(redirectURI + separator + "code=") == true, "\(reply.location ?? "nil")")
        let tokens = try await browser.redeem(try #require(reply.redirectParameters["code"]), redirectURI: redirectURI)
        #expect(tokens.status == 200)
    }

    @Test(arguments: [
        ("https://evil.example/callback", "AADSTS50011"),
        ("http://evil.example:8080/", "AADSTS50011"),
        ("https://127.0.0.1:8443/", "AADSTS50011"),
        ("http://127.0.0.2:8080/", "AADSTS50011"),
        ("http://127.0.0.1:8080/cb#fragment", "AADSTS50011"),
        ("msauth.com.contoso.App://auth", "AADSTS50011"),  // not registered
        ("", "AADSTS900144"),
    ])
    func untrustedRedirectURIGetsAnErrorPage(redirectURI: String, code: String) async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let reply = try await browser.authorize(redirectURI: redirectURI.isEmpty ? nil : redirectURI, overrides: ["state": "s"])
        #expect(reply.status == 400)
        #expect(reply.location == nil)
        #expect(reply.body.contains("\(code): "))
        #expect(reply.body.contains("<html"))
    }

    @Test(arguments: [
        ("client_id", nil, "AADSTS900144"),
        ("client_id", "not-a-guid", "AADSTS700016"),
    ] as [(String, String?, String)])
    func badClientGetsAnErrorPage(parameter: String, value: String?, code: String) async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let reply = try await browser.authorize(overrides: [parameter: value])
        #expect(reply.status == 400)
        #expect(reply.location == nil)
        #expect(reply.body.contains("\(code): "))
    }

    @Test func unknownTenantGetsAnErrorPage() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let reply = try await browser.authorize(tenant: "nobody.example")
        #expect(reply.status == 400)
        #expect(reply.location == nil)
        #expect(reply.body.contains("AADSTS90002: "))
    }

    @Test func registeredCustomSchemeMatchesExactly() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let uri = "msauth.com.contoso.App://auth"
        provider.registerRedirectURI(uri)
        let reply = try await browser.authorize(redirectURI: uri, overrides: ["state": "xyz"])
        #expect(reply.status == 302)
        #expect(reply.location?.hasPrefix("\(uri)?code=") == true)
        #expect(reply.redirectParameters["state"] == "xyz")
        let tokens = try await browser.redeem(try #require(reply.redirectParameters["code"]), redirectURI: uri)
        #expect(tokens.status == 200)

        for near in ["msauth.com.contoso.app://auth", "msauth.com.contoso.App://auth/", "msauth.com.contoso.App://auth2"] {
            let refused = try await browser.authorize(redirectURI: near)
            #expect(refused.status == 400, "\(near)")
            #expect(refused.location == nil, "\(near)")
        }
    }

    // MARK: Errors sent to the redirect URI

    @Test(arguments: [
        (["code_challenge_method": "plain"], "invalid_request", nil),
        (["code_challenge_method": nil], "invalid_request", nil),  // RFC 7636 §4.3: missing means plain
        (["code_challenge": nil], "invalid_request", 900144),
        (["code_challenge": "too-short"], "invalid_request", 501491),
        (["response_type": nil], "invalid_request", 900144),
        (["response_type": "token"], "unsupported_response_type", 70005),
        (["response_mode": "form_post"], "invalid_request", 70007),
        (["scope": nil], "invalid_request", 900144),
        (["prompt": "sometimes"], "invalid_request", 90023),
    ] as [([String: String?], String, Int?)])
    func requestErrorsAreRedirected(overrides: [String: String?], error: String, code: Int?) async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        var parameters = overrides
        parameters["state"] = "st"
        let reply = try await browser.authorize(redirectURI: "http://localhost:4000/cb", overrides: parameters)
        expectRedirectError(reply, to: "http://localhost:4000/cb", error, code: code, state: "st")
        #expect(provider.browserSessionUsername == nil)
    }

    @Test func plainChallengeMethodIsNamedInTheDescription() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let reply = try await browser.authorize(overrides: ["code_challenge_method": "plain", "code_challenge": "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"])
        #expect(reply.redirectParameters["error"] == "invalid_request")
        #expect(reply.redirectParameters["error_description"]?.contains("'plain'") == true)
    }

    @Test func deniedConsentIsAccessDenied65004() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        provider.setNextUserAction(.denyConsent)
        let reply = try await browser.authorize(overrides: ["state": "keep-me"])
        expectRedirectError(reply, to: "http://127.0.0.1:53127/", "access_denied", code: 65004, state: "keep-me")
        #expect(reply.redirectParameters["error_subcode"] == nil)
        // Used once: the next sign-in succeeds.
        let next = try await browser.authorize()
        #expect(next.redirectParameters["code"] != nil)
    }

    @Test func cancelIsAccessDeniedWithSubcodeCancel() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        provider.setNextUserAction(.cancel)
        let reply = try await browser.authorize(overrides: ["state": "c"])
        expectRedirectError(reply, to: "http://127.0.0.1:53127/", "access_denied", code: nil, state: "c")
        #expect(reply.redirectParameters["error_subcode"] == "cancel")
        #expect(provider.browserSessionUsername == nil)
    }

    @Test func promptNoneNeedsABrowserSession() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        provider.setNextUserAction(.denyConsent)
        let silent = try await browser.authorize(overrides: ["prompt": "none", "state": "p"])
        expectRedirectError(silent, to: "http://127.0.0.1:53127/", "login_required", code: 50058, state: "p")

        // prompt=none asked no one, so the action waits for the next interactive request.
        let denied = try await browser.authorize()
        #expect(denied.redirectParameters["error"] == "access_denied")

        provider.addUser(Self.bob)
        provider.setNextUserAction(.signIn(username: "bob@fabrikam.example"))
        #expect(try await browser.authorize().status == 302)
        #expect(provider.browserSessionUsername == "bob@fabrikam.example")

        let code = try await browser.code(overrides: ["prompt": "none"])
        #expect(try preferredUsername(try await browser.redeem(code)) == "bob@fabrikam.example")

        // A login_hint for someone else cannot be satisfied silently.
        let other = try await browser.authorize(overrides: ["prompt": "none", "login_hint": "alice@contoso.example", "state": "o"])
        expectRedirectError(other, to: "http://127.0.0.1:53127/", "login_required", code: 50058, state: "o")

        provider.signOutBrowserSession()
        let after = try await browser.authorize(overrides: ["prompt": "none", "state": "q"])
        expectRedirectError(after, to: "http://127.0.0.1:53127/", "login_required", code: 50058, state: "q")
    }

    // MARK: Choosing the user

    @Test func pickAccountChoosesTheUser() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        provider.addUser(Self.bob)
        provider.setNextUserAction(.pickAccount(username: "BOB@fabrikam.example"))
        let code = try await browser.code(overrides: ["prompt": "select_account"])
        let tokens = try await browser.redeem(code)
        #expect(try preferredUsername(tokens) == "bob@fabrikam.example")
        #expect(try ClientInfo(encoded: try #require(tokens["client_info"])).uniqueTenantID == Self.bob.tenantID)
    }

    @Test(arguments: [
        ("bob@fabrikam.example", "bob@fabrikam.example"),
        ("Bob@Fabrikam.example", "bob@fabrikam.example"),
        ("nobody@fabrikam.example", "alice@contoso.example"),  // unknown hint: the default user
        (nil, "alice@contoso.example"),
    ] as [(String?, String)])
    func loginHintChoosesTheDefaultUser(hint: String?, expected: String) async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        provider.addUser(Self.bob)
        let code = try await browser.code(overrides: ["login_hint": hint, "domain_hint": "organizations"])
        #expect(try preferredUsername(try await browser.redeem(code)) == expected)
        #expect(provider.authorizeRequests.last?.formParameters["domain_hint"] == "organizations")
    }

    @Test func signInAsAnUnknownUserStaysOnTheSignInPage() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        provider.setNextUserAction(.signIn(username: "ghost@contoso.example"))
        let reply = try await browser.authorize()
        #expect(reply.status == 200)
        #expect(reply.location == nil)
        #expect(reply.body.contains("AADSTS50034"))
    }

    // MARK: Redeeming the code

    @Test func verifierMismatchIsInvalidGrant501481() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let code = try await browser.code(verifier: Browser.newVerifier())
        expectEntraError(try await browser.redeem(code, verifier: Browser.newVerifier()), "invalid_grant", codes: [501481])
        expectEntraError(try await browser.redeem(code, verifier: nil), "invalid_grant", codes: [501481])
        // The challenge itself is not a verifier.
        expectEntraError(try await browser.redeem(code, verifier: LocalIdentityProvider.s256(Browser.newVerifier())), "invalid_grant", codes: [501481])
    }

    @Test func codeIsOneUse() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let code = try await browser.code()
        #expect(try await browser.redeem(code).status == 200)
        expectEntraError(try await browser.redeem(code), "invalid_grant", codes: [54005])
    }

    @Test func codeExpiresAfterTenMinutes() async throws {
        let clock = ManualWallClock()
        let (provider, browser) = try started(clock: clock)
        defer { provider.stop() }
        #expect(provider.authorizationCodeLifetime == 600)
        let early = try await browser.code()
        let late = try await browser.code()
        clock.advance(by: 599)
        #expect(try await browser.redeem(early).status == 200)
        clock.advance(by: 1)
        expectEntraError(try await browser.redeem(late), "invalid_grant", codes: [70008])
    }

    @Test func redirectURIMustMatchAtTheTokenEndpoint() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let code = try await browser.code(redirectURI: "http://127.0.0.1:5000/")
        expectEntraError(try await browser.redeem(code, redirectURI: "http://127.0.0.1:5001/"), "invalid_grant", codes: [500112])
        expectEntraError(try await browser.redeem(code, redirectURI: nil), "invalid_request", codes: [900144])
        #expect(try await browser.redeem(code, redirectURI: "http://127.0.0.1:5000/").status == 200)
    }

    @Test func unknownCodeAndOtherClient() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        expectEntraError(try await browser.redeem("not-a-code"), "invalid_grant", codes: [9002313])
        let code = try await browser.code()
        let reply = try await ProviderClient(provider: provider).send("POST", "/common/oauth2/v2.0/token", form: [
            "grant_type": "authorization_code", "client_id": "00000000-0000-0000-0000-000000000001", "code": code,
            "redirect_uri": "http://127.0.0.1:53127/", "code_verifier": "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        ])
        expectEntraError(reply, "invalid_grant", codes: [70000])
    }

    @Test func injectedFailuresApplyToCodeRedemption() async throws {
        let (provider, browser) = try started()
        defer { provider.stop() }
        let code = try await browser.code()
        provider.failNextTokenRequests(with: .oauthError(error: "temporarily_unavailable", errorCodes: [50033], status: 503))
        let failed = try await browser.redeem(code)
        expectEntraError(failed, "temporarily_unavailable", codes: [50033], status: 503)
        // The injected failure did not spend the code.
        #expect(try await browser.redeem(code).status == 200)
        #expect(provider.tokenRequests.count == 2)
    }
}
