import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import MSALCore
import MSALTestSupport

/// The control API under `/_control/` (what `msal dev-provider` serves), over real HTTP.
@Suite("LocalIdentityProvider: the control API")
struct LocalIdentityProviderControlTests {
    private func started(control: Bool = true) throws -> (LocalIdentityProvider, ProviderClient) {
        let provider = LocalIdentityProvider()
        provider.deviceCodeInterval = 0
        provider.isControlAPIEnabled = control
        try provider.start()
        return (provider, ProviderClient(provider: provider))
    }

    /// A control call: JSON body in, status and JSON object out.
    private func control(_ provider: LocalIdentityProvider, _ method: String, _ path: String, _ body: [String: Any]? = nil,
                         headers: [String: String] = [:]) async throws -> (status: Int, json: [String: Any]) {
        var request = URLRequest(url: URL(string: provider.baseURL.absoluteString + path)!)
        request.httpMethod = method
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = try #require(response as? HTTPURLResponse).statusCode
        return (status, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
    }

    @Test func offByDefault() async throws {
        let (provider, client) = try started(control: false)
        defer { provider.stop() }
        #expect(try await client.get("/_control/requests").status == 404)
        #expect(provider.requests.map(\.endpoint) == [.other])
    }

    @Test func deviceCodeApprovedThroughTheControlAPI() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let code = try await client.deviceCode()
        let userCode = try #require(code["user_code"])
        let pending = try await control(provider, "GET", "/_control/device/pending")
        #expect(pending.json["user_codes"] as? [String] == [userCode])
        let approved = try await control(provider, "POST", "/_control/device/approve", ["user_code": userCode.lowercased()])
        #expect(approved.status == 200)
        #expect(approved.json["username"] as? String == LocalIdentityProvider.demoUser.username)
        #expect(try await client.pollToken(try #require(code["device_code"])).status == 200)

        let denied = try await client.deviceCode()
        #expect(try await control(provider, "POST", "/_control/device/deny", ["user_code": try #require(denied["user_code"])]).status == 200)
        expectEntraError(try await client.pollToken(try #require(denied["device_code"])), "authorization_declined")

        let unknown = try await control(provider, "POST", "/_control/device/approve", ["user_code": "NOPE"])
        #expect(unknown.status == 400)
        #expect((unknown.json["error"] as? String)?.contains("NOPE") == true)
    }

    @Test func signInWithoutABrowserReturnsTheRedirect() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        let redirectURI = "http://localhost:8400/callback"
        let query = ProviderClient.formEncode([
            "client_id": LocalIdentityProvider.demoClientID, "response_type": "code", "redirect_uri": redirectURI,
            "scope": "user.read openid offline_access", "state": "s 1", "code_challenge": LocalIdentityProvider.s256(verifier),
            "code_challenge_method": "S256",
        ])
        let url = "\(provider.baseURL.absoluteString)/organizations/oauth2/v2.0/authorize?\(query)"
        let reply = try await control(provider, "POST", "/_control/authorize/sign-in", ["url": url])
        #expect(reply.status == 200)
        let location = try #require(reply.json["location"] as? String)
        #expect(location.hasPrefix(redirectURI + "?"))
        let items = try #require(URLComponents(string: location)?.queryItems)
        #expect(items.first { $0.name == "state" }?.value == "s 1")
        let code = try #require(items.first { $0.name == "code" }?.value)
        let tokens = try await client.send("POST", "/organizations/oauth2/v2.0/token", form: [
            "grant_type": "authorization_code", "client_id": LocalIdentityProvider.demoClientID, "code": code,
            "redirect_uri": redirectURI, "code_verifier": verifier,
        ])
        #expect(tokens.status == 200)
        #expect(provider.browserSessionUsername == LocalIdentityProvider.demoUser.username)

        // The next action applies to the next sign-in: a declined consent comes back as the redirect.
        #expect(try await control(provider, "POST", "/_control/authorize/next-action", ["action": "denyConsent"]).status == 200)
        let declined = try await control(provider, "POST", "/_control/authorize/sign-in", ["url": url])
        #expect((declined.json["location"] as? String)?.contains("error=access_denied") == true)
        // An unknown user stays on the sign-in page: no redirect, 409 with the page's message.
        let unknown = try await control(provider, "POST", "/_control/authorize/sign-in", ["url": url, "username": "nobody@contoso.example"])
        #expect(unknown.status == 409)
        #expect((unknown.json["error"] as? String)?.contains("AADSTS50034") == true)
        #expect(provider.authorizeRequests.count == 3)
        let bad = try await control(provider, "POST", "/_control/authorize/next-action", ["action": "dance"])
        #expect(bad.status == 400)
    }

    @Test func failNextKinds() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let tokens = try await client.signIn()
        let refreshToken = try #require(tokens["refresh_token"])
        let queued: [[String: Any]] = [
            ["kind": "oauth", "suberror": "protection_policy_required"],
            ["kind": "oauth", "error": "invalid_grant", "suberror": "basic_action", "error_codes": [50079]],
            ["kind": "status", "status": 503],
            ["kind": "empty"],
            ["kind": "html"],
            ["kind": "throttled", "retry_after": 30],
            ["kind": "declined", "scopes": ["user.read"]],
        ]
        for body in queued {
            #expect(try await control(provider, "POST", "/_control/fail-next", body).status == 200)
        }
        let policy = try await client.refresh(refreshToken)
        expectEntraError(policy, "unauthorized_client", codes: [53005])
        #expect(policy["suberror"] == "protection_policy_required")
        let mfa = try await client.refresh(refreshToken)
        expectEntraError(mfa, "invalid_grant", codes: [50079])
        #expect(mfa["suberror"] == "basic_action")
        #expect(try await client.refresh(refreshToken).status == 503)
        #expect(try await client.refresh(refreshToken).body.isEmpty)
        #expect(try await client.refresh(refreshToken).status == 502)
        let throttled = try await client.refresh(refreshToken)
        #expect(throttled.status == 429)
        #expect(throttled.response.value(forHTTPHeaderField: "Retry-After") == "30")
        #expect(try await client.refresh(refreshToken)["scope"] == "openid profile offline_access")
        #expect(try await client.refresh(refreshToken)["scope"] == "user.read openid profile offline_access")
        #expect(try await control(provider, "POST", "/_control/fail-next", ["kind": "teapot"]).status == 400)
    }

    @Test func requestsAreRedactedAndResetEmptiesThem() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let tokens = try await client.signIn()
        _ = try await client.refresh(try #require(tokens["refresh_token"]))
        let log = try await control(provider, "GET", "/_control/requests")
        let requests = try #require(log.json["requests"] as? [[String: Any]])
        #expect(requests.map { $0["endpoint"] as? String } == ["devicecode", "token", "token"])
        let text = String(decoding: try JSONSerialization.data(withJSONObject: log.json), as: UTF8.self)
        #expect(!text.contains(try #require(tokens["refresh_token"])))
        #expect((requests[2]["parameters"] as? [String: String])?["refresh_token"] == "<redacted>")
        #expect((requests[1]["parameters"] as? [String: String])?["device_code"] == "<redacted>")
        #expect(requests[2]["grant_type"] as? String == "refresh_token")

        #expect(try await control(provider, "POST", "/_control/reset").status == 200)
        #expect(provider.requests.isEmpty)
        expectEntraError(try await client.refresh(try #require(tokens["refresh_token"])), "invalid_grant")
    }

    @Test func refusesOtherOriginsWrongMethodsAndUnknownPaths() async throws {
        let (provider, _) = try started()
        defer { provider.stop() }
        let web = try await control(provider, "POST", "/_control/reset", [:], headers: ["Origin": "https://evil.example"])
        #expect(web.status == 403)
        let local = try await control(provider, "POST", "/_control/reset", [:], headers: ["Origin": "http://localhost:3000"])
        #expect(local.status == 200)
        #expect(try await control(provider, "GET", "/_control/reset").status == 405)
        #expect(try await control(provider, "GET", "/_control/nothing").status == 404)
        let noUserCode = try await control(provider, "POST", "/_control/device/approve")
        #expect(noUserCode.status == 400)
    }

    @Test func addsUsers() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let added = try await control(provider, "POST", "/_control/users", ["username": "carol@contoso.example", "name": "Carol"])
        #expect(added.status == 200)
        #expect(added.json["tenant_id"] as? String == LocalIdentityProvider.demoTenantID)
        #expect(try await client.signIn(as: "carol@contoso.example").status == 200)
        let again = try await control(provider, "POST", "/_control/users", ["username": "Carol@contoso.example"])
        #expect(again.status == 409)
    }
}
