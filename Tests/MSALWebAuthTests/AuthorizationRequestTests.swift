import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MSALCore
import MSALNetwork
import MSALTestSupport
import MSALWebAuth
import Testing

@Suite("AuthorizationRequest")
struct AuthorizationRequestTests {
    private let endpoint = URL(string: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize")!
    private let redirect = URL(string: "http://localhost:51234/cb")!
    private let clientID = "aaaaaaaa-0000-4000-8000-00000000aaaa"

    private func request(
        endpoint: URL? = nil,
        scopes: ScopeSet = ["User.Read", "openid", "offline_access"],
        prompt: Prompt? = .selectAccount,
        loginHint: String? = "a+b@contoso.com",
        domainHint: String? = "contoso.com",
        claims: String? = #"{"access_token":{"xms_cc":{"values":["cp1"]}}}"#,
        includeClientInfo: Bool = true,
        extra: [String: String] = [:]
    ) throws -> AuthorizationRequest {
        try AuthorizationRequest(
            authorizationEndpoint: endpoint ?? self.endpoint, clientID: clientID, redirectURI: redirect, scopes: scopes,
            prompt: prompt, loginHint: loginHint, domainHint: domainHint, claims: claims,
            includeClientInfo: includeClientInfo, extraQueryParameters: extra
        )
    }

    /// The query of `url`, decoded by URLComponents; fails the test on a repeated name.
    private func query(_ url: URL) throws -> [String: String] {
        let items = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems)
        var result: [String: String] = [:]
        for item in items {
            #expect(result[item.name] == nil, "repeated query parameter \(item.name)")
            result[item.name] = item.value ?? ""
        }
        return result
    }

    @Test("Every standard parameter is present and decodes back to its value")
    func allParameters() throws {
        let request = try request()
        let url = request.url
        #expect(url.absoluteString.hasPrefix("https://login.microsoftonline.com/common/oauth2/v2.0/authorize?"))
        let q = try query(url)
        #expect(q == [
            "response_type": "code",
            "client_id": clientID,
            "redirect_uri": "http://localhost:51234/cb",
            "scope": "offline_access openid User.Read",
            "state": request.state,
            "nonce": request.nonce,
            "code_challenge": request.pkce.codeChallenge,
            "code_challenge_method": "S256",
            "prompt": "select_account",
            "login_hint": "a+b@contoso.com",
            "domain_hint": "contoso.com",
            "claims": #"{"access_token":{"xms_cc":{"values":["cp1"]}}}"#,
            "client_info": "1",
        ])
        #expect(request.pkce.codeChallenge == PKCE.challenge(for: request.pkce.codeVerifier))
    }

    @Test("Reserved characters are percent-encoded: space %20, + %2B, : and / in the redirect URI, JSON in claims")
    func percentEncoding() throws {
        let query = try #require(try request().url.query(percentEncoded: true))
        #expect(query.contains("scope=offline_access%20openid%20User.Read"))
        #expect(query.contains("login_hint=a%2Bb%40contoso.com"))
        #expect(query.contains("redirect_uri=http%3A%2F%2Flocalhost%3A51234%2Fcb"))
        #expect(query.contains("claims=%7B%22access_token%22%3A%7B%22xms_cc%22%3A%7B%22values%22%3A%5B%22cp1%22%5D%7D%7D%7D"))
        #expect(!query.contains("+"))
    }

    @Test("Optional parameters are left out when not set")
    func optionalParametersAbsent() throws {
        let q = try query(try request(prompt: nil, loginHint: nil, domainHint: nil, claims: nil, includeClientInfo: false).url)
        for name in ["prompt", "login_hint", "domain_hint", "claims", "client_info"] {
            #expect(q[name] == nil, "\(name) should be absent")
        }
        #expect(q.count == 8)
    }

    @Test("Every Prompt value goes out as its raw value")
    func prompts() throws {
        for prompt in Prompt.allCases {
            #expect(try query(try request(prompt: prompt).url)["prompt"] == prompt.rawValue)
        }
        #expect(Prompt.allCases.map(\.rawValue) == ["select_account", "login", "consent", "create", "none"])
    }

    @Test("Extra parameters are added, encoded, and never override a standard one")
    func extraParameters() throws {
        let request = try request(prompt: nil, extra: [
            "dc": "ESTS-PUB-WUS2-AZ1-FD000-TEST1",
            "x y": "a&b=c",
            "client_id": "evil", "state": "evil", "redirect_uri": "https://evil.example", "response_type": "token",
            "code_challenge_method": "plain", "scope": "evil", "prompt": "none",
        ])
        let q = try query(request.url)
        #expect(q["dc"] == "ESTS-PUB-WUS2-AZ1-FD000-TEST1")
        #expect(q["x y"] == "a&b=c")
        #expect(q["client_id"] == clientID)
        #expect(q["state"] == request.state)
        #expect(q["redirect_uri"] == "http://localhost:51234/cb")
        #expect(q["response_type"] == "code")
        #expect(q["code_challenge_method"] == "S256")
        #expect(q["scope"] == "offline_access openid User.Read")
        #expect(q["prompt"] == nil)
    }

    @Test("The endpoint's own query items are kept; standard names in it are replaced, extras override it")
    func endpointQueryKept() throws {
        let endpoint = URL(string: "https://contoso.b2clogin.com/contoso.onmicrosoft.com/oauth2/v2.0/authorize?p=B2C_1_signin&client_id=old&x=1")!
        let q = try query(try request(endpoint: endpoint, extra: ["x": "2"]).url)
        #expect(q["p"] == "B2C_1_signin")
        #expect(q["client_id"] == clientID)
        #expect(q["x"] == "2")
        #expect(try request(endpoint: endpoint).url.path == "/contoso.onmicrosoft.com/oauth2/v2.0/authorize")
    }

    @Test("state and nonce carry at least 128 bits of base64url and are fresh for every request")
    func stateAndNonce() throws {
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var seen: Set<String> = []
        for _ in 0..<20 {
            let request = try request()
            for value in [request.state, request.nonce] {
                #expect(value.count >= 22)
                #expect(value.allSatisfy(alphabet.contains))
                #expect(seen.insert(value).inserted, "a state or nonce repeated")
            }
            #expect(seen.insert(request.pkce.codeVerifier).inserted)
        }
    }

    @Test("tokenParameters: authorization_code grant with the verifier and the same redirect URI (RFC 6749 §4.1.3, RFC 7636 §4.5)")
    func tokenParameters() throws {
        let request = try request()
        #expect(request.tokenParameters(code: "the-code") == [
            "grant_type": "authorization_code",
            "code": "the-code",
            "redirect_uri": "http://localhost:51234/cb",
            "code_verifier": request.pkce.codeVerifier,
            "client_id": clientID,
        ])
    }

    @Test("An empty client ID is refused")
    func emptyClientID() {
        #expect(throws: MSALError.internal(.invalidParameter, "")) {
            try AuthorizationRequest(authorizationEndpoint: endpoint, clientID: "", redirectURI: redirect, scopes: ["User.Read"])
        }
    }

    @Test("description and dump show no state, nonce, verifier or login hint")
    func redacted() throws {
        let request = try request()
        var dumped = ""
        dump(request, to: &dumped)
        for text in [request.description, String(reflecting: request), dumped] {
            #expect(text.contains(clientID))
            for secret in [request.state, request.nonce, request.pkce.codeVerifier, "a+b@contoso.com"] {
                #expect(!text.contains(secret))
            }
        }
    }

    // MARK: Against the local identity provider

    /// Opens `url` as a browser would and returns the `Location` of the provider's redirect.
    private func follow(_ url: URL) async throws -> URL {
        let session = URLSession(configuration: .ephemeral, delegate: RefuseRedirects(), delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let (_, response) = try await session.data(from: url)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 302)
        let location = try #require(http.value(forHTTPHeaderField: "Location"))
        return try #require(URL(string: location))
    }

    @Test("End to end: the URL is understood by an Entra-compatible provider and tokenParameters redeem the code")
    func endToEnd() async throws {
        let provider = LocalIdentityProvider()
        try provider.start()
        defer { provider.stop() }
        let endpoint = provider.baseURL.appendingPathComponent("common/oauth2/v2.0/authorize")
        let tokenEndpoint = provider.baseURL.appendingPathComponent("common/oauth2/v2.0/token")
        let redirectURI = try RedirectURI("http://127.0.0.1/callback", applicationID: nil).withPort(53_127)
        let request = try AuthorizationRequest(
            authorizationEndpoint: endpoint, clientID: LocalIdentityProvider.demoClientID, redirectURI: redirectURI.url,
            scopes: ScopeSet(["user.read"]).union(ScopeSet.reservedOIDCScopes), prompt: .selectAccount,
            loginHint: LocalIdentityProvider.demoUser.username, includeClientInfo: true
        )

        let location = try await follow(request.url)
        #expect(location.absoluteString.hasPrefix("http://127.0.0.1:53127/callback?"))
        #expect(AuthorizationResponse.parse(url: location, expectedState: "another-request-state") == nil)
        let response = try #require(AuthorizationResponse.parse(url: location, expectedState: request.state))
        guard case .code(let code) = response else {
            Issue.record("expected a code, got \(response)")
            return
        }
        #expect(response.error == nil)
        #expect(provider.authorizeRequests.last?.formParameters["code_challenge"] == request.pkce.codeChallenge)

        let tokens = try await OAuth2Client(transport: URLSessionTransport()).redeem(
            tokenEndpoint: tokenEndpoint, parameters: request.tokenParameters(code: code), correlationID: UUID().uuidString
        )
        #expect(!tokens.accessToken.isEmpty)
        #expect(tokens.clientInfo != nil)
        let claims = try IDTokenClaims(jwt: try #require(tokens.idToken))
        #expect(claims.nonce == request.nonce)
        #expect(claims.preferredUsername == LocalIdentityProvider.demoUser.username)
    }

    @Test("End to end: a wrong code verifier is refused by the provider (RFC 7636 §4.6)")
    func wrongVerifier() async throws {
        let provider = LocalIdentityProvider()
        try provider.start()
        defer { provider.stop() }
        var request = try AuthorizationRequest(
            authorizationEndpoint: provider.baseURL.appendingPathComponent("common/oauth2/v2.0/authorize"),
            clientID: LocalIdentityProvider.demoClientID, redirectURI: redirect, scopes: ["user.read", "openid"]
        )
        let response = AuthorizationResponse.parse(url: try await follow(request.url), expectedState: request.state)
        guard case .code(let code) = response else {
            Issue.record("expected a code, got \(String(describing: response))")
            return
        }
        request.pkce = try PKCE()
        await #expect(throws: MSALError.self) {
            _ = try await OAuth2Client(transport: URLSessionTransport()).redeem(
                tokenEndpoint: provider.baseURL.appendingPathComponent("common/oauth2/v2.0/token"),
                parameters: request.tokenParameters(code: code), correlationID: UUID().uuidString
            )
        }
    }

    @Test("End to end: the user canceling comes back as userCanceled")
    func userCanceled() async throws {
        let provider = LocalIdentityProvider()
        try provider.start()
        defer { provider.stop() }
        provider.setNextUserAction(.cancel)
        let request = try AuthorizationRequest(
            authorizationEndpoint: provider.baseURL.appendingPathComponent("common/oauth2/v2.0/authorize"),
            clientID: LocalIdentityProvider.demoClientID, redirectURI: redirect, scopes: ["user.read", "openid"]
        )
        let response = try #require(AuthorizationResponse.parse(url: try await follow(request.url), expectedState: request.state))
        #expect(response.error?.code == .userCanceled)
        #expect(response.error?.subError == "cancel")
    }
}
