import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import MSALCore
import MSALTestSupport

/// Real HTTP through URLSession against a started ``LocalIdentityProvider``.
struct ProviderClient {
    let provider: LocalIdentityProvider

    struct Reply {
        var status: Int
        var json: [String: JSONValue]
        var body: Data
        var response: HTTPURLResponse

        subscript(_ key: String) -> String? { json[key]?.stringValue }
    }

    static func formEncode(_ parameters: [String: String]) -> String {
        var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        allowed.insert(charactersIn: "-._~")
        return parameters.sorted { $0.key < $1.key }.map {
            "\($0.key.addingPercentEncoding(withAllowedCharacters: allowed)!)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)"
        }.joined(separator: "&")
    }

    func send(_ method: String, _ path: String, form: [String: String]? = nil, headers: [String: String] = [:]) async throws -> Reply {
        var request = URLRequest(url: URL(string: provider.baseURL.absoluteString + path)!)
        request.httpMethod = method
        if let form {
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(ProviderClient.formEncode(form).utf8)
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        let json = (try? JSONDecoder().decode([String: JSONValue].self, from: data)) ?? [:]
        return Reply(status: http.statusCode, json: json, body: data, response: http)
    }

    func get(_ path: String, headers: [String: String] = [:]) async throws -> Reply {
        try await send("GET", path, headers: headers)
    }

    func deviceCode(tenant: String = "common", clientID: String = LocalIdentityProvider.demoClientID,
                    scope: String = "user.read openid profile offline_access") async throws -> Reply {
        try await send("POST", "/\(tenant)/oauth2/v2.0/devicecode", form: ["client_id": clientID, "scope": scope])
    }

    func pollToken(_ deviceCode: String, tenant: String = "common", clientID: String = LocalIdentityProvider.demoClientID,
                   clientInfo: Bool = true, headers: [String: String] = [:]) async throws -> Reply {
        var form = [
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "client_id": clientID,
            "device_code": deviceCode,
        ]
        if clientInfo { form["client_info"] = "1" }
        return try await send("POST", "/\(tenant)/oauth2/v2.0/token", form: form, headers: headers)
    }

    func refresh(_ refreshToken: String, tenant: String = "common", clientID: String = LocalIdentityProvider.demoClientID,
                 scope: String? = "user.read openid profile offline_access") async throws -> Reply {
        var form = ["grant_type": "refresh_token", "client_id": clientID, "refresh_token": refreshToken, "client_info": "1"]
        if let scope { form["scope"] = scope }
        return try await send("POST", "/\(tenant)/oauth2/v2.0/token", form: form)
    }

    /// The device-code flow, with the provider approving as `username`.
    func signIn(as username: String = LocalIdentityProvider.demoUser.username, tenant: String = "common",
                scope: String = "user.read openid profile offline_access") async throws -> Reply {
        let code = try await deviceCode(tenant: tenant, scope: scope)
        try provider.approveDeviceCode(userCode: try #require(code["user_code"]), as: username)
        return try await pollToken(try #require(code["device_code"]), tenant: tenant)
    }
}

/// Checks the fields every Entra error body carries.
func expectEntraError(_ reply: ProviderClient.Reply, _ error: String, codes: [Int]? = nil, status: Int = 400,
                      sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(reply.status == status, sourceLocation: sourceLocation)
    #expect(reply["error"] == error, sourceLocation: sourceLocation)
    if let codes {
        #expect(reply.json["error_codes"]?.arrayValue?.compactMap(\.doubleValue).map { Int($0) } == codes, sourceLocation: sourceLocation)
        if let first = codes.first {
            #expect(reply["error_description"]?.hasPrefix("AADSTS\(first): ") == true, sourceLocation: sourceLocation)
        }
    }
    for field in ["error_description", "timestamp", "trace_id", "correlation_id"] {
        #expect(reply[field]?.isEmpty == false, "missing \(field)", sourceLocation: sourceLocation)
    }
}

@Suite("LocalIdentityProvider")
struct LocalIdentityProviderTests {
    private func started(clock: any WallClock = SystemWallClock(), interval: TimeInterval = 0) throws -> (LocalIdentityProvider, ProviderClient) {
        let provider = LocalIdentityProvider(clock: clock)
        provider.deviceCodeInterval = interval
        try provider.start()
        return (provider, ProviderClient(provider: provider))
    }

    // MARK: Discovery

    @Test(arguments: [
        ("common", "{tenantid}"),
        ("organizations", "{tenantid}"),
        ("consumers", "{tenantid}"),
        (LocalIdentityProvider.demoTenantID, LocalIdentityProvider.demoTenantID),
        ("contoso.example", LocalIdentityProvider.demoTenantID),
        ("CONTOSO.example", LocalIdentityProvider.demoTenantID),
    ])
    func discoveryPerTenant(tenant: String, issuerTenant: String) async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let base = provider.baseURL.absoluteString
        #expect(base.hasPrefix("http://127.0.0.1:") && !base.hasSuffix(":0"))
        #expect(provider.authority(tenant: tenant) == "\(base)/\(tenant)")
        let reply = try await client.get("/\(tenant)/v2.0/.well-known/openid-configuration")
        #expect(reply.status == 200)
        #expect(reply["issuer"] == "\(base)/\(issuerTenant)/v2.0")
        #expect(reply["authorization_endpoint"] == "\(base)/\(tenant)/oauth2/v2.0/authorize")
        #expect(reply["token_endpoint"] == "\(base)/\(tenant)/oauth2/v2.0/token")
        #expect(reply["device_authorization_endpoint"] == "\(base)/\(tenant)/oauth2/v2.0/devicecode")
        #expect(reply["end_session_endpoint"] == "\(base)/\(tenant)/oauth2/v2.0/logout")
        #expect(reply["jwks_uri"] == "\(base)/\(tenant)/discovery/v2.0/keys")
        #expect(reply.json["tenant_region_scope"] == .null)
        #expect(reply["cloud_instance_name"] != nil)
        for field in ["response_types_supported", "scopes_supported", "subject_types_supported", "id_token_signing_alg_values_supported"] {
            #expect(reply.json[field]?.arrayValue?.isEmpty == false, "\(field)")
        }
        let keys = try await client.get("/\(tenant)/discovery/v2.0/keys")
        #expect(keys.json["keys"] == .array([]))
    }

    @Test func unknownTenantIsAADSTS90002() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let reply = try await client.get("/nobody.example/v2.0/.well-known/openid-configuration")
        expectEntraError(reply, "invalid_tenant", codes: [90002])
        let token = try await client.deviceCode(tenant: "00000000-0000-0000-0000-000000000000")
        expectEntraError(token, "invalid_tenant", codes: [90002])
    }

    @Test func addedUsersBringTheirTenantAndDomain() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let tenant = "11111111-2222-4333-8444-555555555555"
        provider.addUser(.init(username: "bob@fabrikam.example", objectID: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", tenantID: tenant, name: "Bob"))
        let reply = try await client.get("/fabrikam.example/v2.0/.well-known/openid-configuration")
        #expect(reply["issuer"] == "\(provider.baseURL.absoluteString)/\(tenant)/v2.0")
        let tokens = try await client.signIn(as: "BOB@fabrikam.example")
        let claims = try IDTokenClaims(jwt: try #require(tokens["id_token"]))
        #expect(claims.tenantID == tenant)
        #expect(claims.objectID == "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee")
    }

    @Test func unknownPathIs404AndWrongMethodIs405() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        #expect(try await client.get("/nothing/here").status == 404)
        #expect(try await client.get("/").status == 404)
        let wrong = try await client.get("/common/oauth2/v2.0/token")
        #expect(wrong.status == 405)
        #expect(wrong.response.value(forHTTPHeaderField: "Allow") == "POST")
    }

    @Test func instanceDiscoveryNamesThisHost() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let endpoint = "\(provider.baseURL.absoluteString)/contoso.example/oauth2/v2.0/authorize"
        let reply = try await client.get("/common/discovery/instance?api-version=1.1&authorization_endpoint=\(ProviderClient.formEncode(["": endpoint]).dropFirst())")
        #expect(reply.status == 200)
        #expect(reply["tenant_discovery_endpoint"] == "\(provider.baseURL.absoluteString)/contoso.example/v2.0/.well-known/openid-configuration")
        let host = provider.baseURL.absoluteString.replacingOccurrences(of: "http://", with: "")
        #expect(reply.json["metadata"]?.arrayValue?.first?.objectValue?["aliases"] == .array([.string(host)]))
    }

    @Test func instanceDiscoveryKnowsAddedCloudsAndRefusesOthers() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        provider.addInstanceMetadata(
            preferredNetwork: "login.sovereign.example", preferredCache: "login.sovereign.example",
            aliases: ["login.sovereign.example", "sts.sovereign.example"]
        )
        func discover(_ endpoint: String) async throws -> ProviderClient.Reply {
            try await client.get("/common/discovery/instance?api-version=1.1&authorization_endpoint=\(ProviderClient.formEncode(["": endpoint]).dropFirst())")
        }
        let known = try await discover("https://STS.sovereign.example/contoso.example/oauth2/v2.0/authorize")
        #expect(known.status == 200)
        #expect(known["tenant_discovery_endpoint"] == "https://sts.sovereign.example/contoso.example/v2.0/.well-known/openid-configuration")
        let entries = known.json["metadata"]?.arrayValue ?? []
        #expect(entries.count == 2)
        #expect(entries.last?.objectValue?["preferred_network"] == .string("login.sovereign.example"))
        #expect(entries.last?.objectValue?["aliases"] == .array([.string("login.sovereign.example"), .string("sts.sovereign.example")]))

        let unknown = try await discover("https://login.bogus.example/common/oauth2/v2.0/authorize")
        #expect(unknown.status == 400)
        #expect(unknown["error"] == "invalid_instance")
        #expect(unknown.json["error_codes"] == .array([.number(50049)]))
        #expect(unknown["error_description"]?.hasPrefix("AADSTS50049: Unknown or invalid instance.") == true)
        #expect(provider.instanceDiscoveryRequestCount == 2)
    }

    // MARK: Device code

    @Test func deviceAuthorizationResponseShape() async throws {
        let (provider, client) = try started(interval: 5)
        defer { provider.stop() }
        let reply = try await client.deviceCode()
        #expect(reply.status == 200)
        let userCode = try #require(reply["user_code"])
        let deviceCode = try #require(reply["device_code"])
        let uri = try #require(reply["verification_uri"])
        #expect(userCode.count == 9)
        #expect(userCode.allSatisfy { $0.isUppercase || $0.isNumber })
        #expect(deviceCode.count >= 64)
        #expect(uri == "\(provider.baseURL.absoluteString)/devicelogin")
        #expect(reply.json["expires_in"] == .number(900))
        #expect(reply.json["interval"] == .number(5))
        #expect(reply["message"] == "To sign in, use a web browser to open the page \(uri) and enter the code \(userCode) to authenticate.")
        #expect(provider.pendingUserCodes == [userCode])
        let second = try await client.deviceCode()
        #expect(second["device_code"] != deviceCode)
        #expect(provider.pendingUserCodes == [userCode, try #require(second["user_code"])])
    }

    @Test func deviceAuthorizationRequiresClientIDAndScope() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let noClient = try await client.send("POST", "/common/oauth2/v2.0/devicecode", form: ["scope": "openid"])
        expectEntraError(noClient, "invalid_request", codes: [900144])
        #expect(noClient["error_description"]?.contains("'client_id'") == true)
        let noScope = try await client.send("POST", "/common/oauth2/v2.0/devicecode", form: ["client_id": "x"])
        expectEntraError(noScope, "invalid_request", codes: [900144])
        #expect(provider.pendingUserCodes.isEmpty)
    }

    @Test func pendingThenApprovedThenTokens() async throws {
        let clock = ManualWallClock()
        let (provider, client) = try started(clock: clock)
        defer { provider.stop() }
        let code = try await client.deviceCode()
        let deviceCode = try #require(code["device_code"])
        let userCode = try #require(code["user_code"])

        let pending = try await client.pollToken(deviceCode, headers: ["client-request-id": "corr-123", "return-client-request-id": "true"])
        expectEntraError(pending, "authorization_pending", codes: [70016])
        #expect(pending["correlation_id"] == "corr-123")
        #expect(pending.response.value(forHTTPHeaderField: "client-request-id") == "corr-123")
        #expect(pending["error_description"]?.contains("Correlation ID: corr-123") == true)
        #expect(pending["timestamp"] == "2023-11-14 22:13:20Z")  // ManualWallClock's default start

        try provider.approveDeviceCode(userCode: userCode.lowercased(), as: "Alice@Contoso.example")
        #expect(provider.pendingUserCodes.isEmpty)
        let tokens = try await client.pollToken(deviceCode)
        #expect(tokens.status == 200)
        #expect(tokens.response.value(forHTTPHeaderField: "client-request-id") == nil)
        #expect(tokens.response.value(forHTTPHeaderField: "Cache-Control") == "no-store")
        #expect(tokens["token_type"] == "Bearer")
        #expect(tokens["scope"] == "user.read openid profile offline_access")
        #expect(tokens.json["expires_in"] == .number(3600))
        #expect(tokens.json["ext_expires_in"] == .number(3600))
        #expect(tokens["access_token"]?.isEmpty == false)
        #expect(tokens["refresh_token"]?.isEmpty == false)

        let user = LocalIdentityProvider.demoUser
        let clientInfo = try ClientInfo(encoded: try #require(tokens["client_info"]))
        #expect(clientInfo.homeAccountID == "\(user.objectID).\(user.tenantID)")

        let claims = try IDTokenClaims(jwt: try #require(tokens["id_token"]))
        #expect(claims.objectID == user.objectID)
        #expect(claims.tenantID == user.tenantID)
        #expect(claims.preferredUsername == user.username)
        #expect(claims.name == user.name)
        #expect(claims.audiences == [LocalIdentityProvider.demoClientID])
        #expect(claims.all["ver"] == .string("2.0"))
        #expect(claims.issuedAt == clock.now())
        #expect(claims.all["nbf"] == .number(clock.now().timeIntervalSince1970))
        #expect(claims.expiresOn == clock.now().addingTimeInterval(3600))
        let idToken = try #require(tokens["id_token"])
        let header = try #require(Base64URL.decode(String(idToken.split(separator: ".")[0])))
        #expect(try JSONDecoder().decode([String: String].self, from: header)["alg"] == "none")
        let discovery = try await client.get("/common/v2.0/.well-known/openid-configuration")
        try claims.validate(issuer: discovery["issuer"], clientID: LocalIdentityProvider.demoClientID, nonce: nil, now: clock.now())

        // A device code is good for one success only.
        let again = try await client.pollToken(deviceCode)
        expectEntraError(again, "invalid_grant", codes: [70000])
        #expect(provider.tokenRequests.map(\.grantType) == Array(repeating: "urn:ietf:params:oauth:grant-type:device_code", count: 3))
        #expect(provider.tokenRequests.first?.formParameters["device_code"] == deviceCode)
        #expect(provider.tokenRequests.first?.headers["client-request-id"] == "corr-123")
    }

    @Test func subIsPairwiseAndAccessTokensAreUnique() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let first = try await client.signIn()
        let second = try await client.signIn()
        #expect(first["access_token"] != second["access_token"])
        #expect(first["refresh_token"] != second["refresh_token"])
        let a = try IDTokenClaims(jwt: try #require(first["id_token"]))
        let b = try IDTokenClaims(jwt: try #require(second["id_token"]))
        #expect(a.subject == b.subject)
        #expect(a.subject?.count == 43)
        let otherCode = try await client.deviceCode(clientID: "other-client")
        try provider.approveDeviceCode(userCode: try #require(otherCode["user_code"]), as: "alice@contoso.example")
        let other = try await client.pollToken(try #require(otherCode["device_code"]), clientID: "other-client")
        let c = try IDTokenClaims(jwt: try #require(other["id_token"]))
        #expect(c.subject != a.subject)
        #expect(c.objectID == a.objectID)
    }

    @Test func optionalPartsFollowTheRequest() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let code = try await client.deviceCode(scope: "user.read")
        try provider.approveDeviceCode(userCode: try #require(code["user_code"]), as: "alice@contoso.example")
        let tokens = try await client.pollToken(try #require(code["device_code"]), clientInfo: false)
        #expect(tokens.status == 200)
        #expect(tokens["scope"] == "user.read")
        #expect(tokens["access_token"] != nil)
        #expect(tokens.json["refresh_token"] == nil)
        #expect(tokens.json["id_token"] == nil)
        #expect(tokens.json["client_info"] == nil)
    }

    @Test func pollingFasterThanTheIntervalIsSlowDown() async throws {
        let clock = ManualWallClock()
        let (provider, client) = try started(clock: clock, interval: 5)
        defer { provider.stop() }
        let deviceCode = try #require(try await client.deviceCode()["device_code"])
        expectEntraError(try await client.pollToken(deviceCode), "authorization_pending")
        clock.advance(by: 4)
        expectEntraError(try await client.pollToken(deviceCode), "slow_down")
        // RFC 8628 §3.5: the interval is now 10 seconds.
        clock.advance(by: 9)
        expectEntraError(try await client.pollToken(deviceCode), "slow_down")
        clock.advance(by: 15)
        expectEntraError(try await client.pollToken(deviceCode), "authorization_pending")
    }

    @Test func deniedIsAuthorizationDeclined() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let code = try await client.deviceCode()
        let userCode = try #require(code["user_code"])
        try provider.denyDeviceCode(userCode: userCode)
        expectEntraError(try await client.pollToken(try #require(code["device_code"])), "authorization_declined")
        #expect(throws: MSALError.internal(.invalidParameter, "")) {
            try provider.approveDeviceCode(userCode: userCode, as: "alice@contoso.example")
        }
    }

    @Test func expiredDeviceCodeIsExpiredToken() async throws {
        let clock = ManualWallClock()
        let (provider, client) = try started(clock: clock)
        defer { provider.stop() }
        let code = try await client.deviceCode()
        let userCode = try #require(code["user_code"])
        clock.advance(by: 899)
        #expect(provider.pendingUserCodes == [userCode])
        clock.advance(by: 1)
        #expect(provider.pendingUserCodes.isEmpty)
        expectEntraError(try await client.pollToken(try #require(code["device_code"])), "expired_token", codes: [70019])
        #expect(throws: MSALError.internal(.deviceCodeExpired, "")) {
            try provider.approveDeviceCode(userCode: userCode, as: "alice@contoso.example")
        }
    }

    @Test func unknownDeviceCodeAndUnknownUser() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        expectEntraError(try await client.pollToken("no-such-code"), "bad_verification_code", codes: [70018])
        let code = try await client.deviceCode()
        #expect(throws: MSALError.internal(.invalidParameter, "")) {
            try provider.approveDeviceCode(userCode: try #require(code["user_code"]), as: "mallory@contoso.example")
        }
        #expect(throws: MSALError.internal(.invalidParameter, "")) {
            try provider.approveDeviceCode(userCode: "NOTACODE1", as: "alice@contoso.example")
        }
        let wrongClient = try await client.pollToken(try #require(code["device_code"]), clientID: "another-client")
        expectEntraError(wrongClient, "invalid_grant", codes: [70000])
    }

    @Test func tokenRequestValidation() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        expectEntraError(try await client.send("POST", "/common/oauth2/v2.0/token", form: ["client_id": "x"]), "invalid_request", codes: [900144])
        expectEntraError(try await client.send("POST", "/common/oauth2/v2.0/token", form: ["grant_type": "password", "client_id": "x"]), "unsupported_grant_type")
        expectEntraError(try await client.send("POST", "/common/oauth2/v2.0/token", form: ["grant_type": "refresh_token", "client_id": "x"]), "invalid_request", codes: [900144])
    }

    @Test func deviceLoginPageApproves() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let page = try await client.get("/devicelogin")
        #expect(page.status == 200)
        #expect(page.response.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/html") == true)
        let code = try await client.deviceCode()
        let submitted = try await client.send("POST", "/devicelogin", form: ["user_code": try #require(code["user_code"]), "username": "alice@contoso.example", "action": "approve"])
        #expect(submitted.status == 200)
        #expect(try await client.pollToken(try #require(code["device_code"])).status == 200)
        let bad = try await client.send("POST", "/devicelogin", form: ["user_code": "<b>nope</b>"])
        #expect(bad.status == 400)
        #expect(!String(decoding: bad.body, as: UTF8.self).contains("<b>nope"))
    }

    // MARK: Refresh tokens

    @Test func refreshRotatesAndIssuesANewIDToken() async throws {
        let clock = ManualWallClock()
        let (provider, client) = try started(clock: clock)
        defer { provider.stop() }
        let first = try await client.signIn()
        let firstRT = try #require(first["refresh_token"])
        clock.advance(by: 600)
        let second = try await client.refresh(firstRT)
        #expect(second.status == 200)
        let secondRT = try #require(second["refresh_token"])
        #expect(secondRT != firstRT)
        #expect(second["access_token"] != first["access_token"])
        let claims = try IDTokenClaims(jwt: try #require(second["id_token"]))
        #expect(claims.issuedAt == clock.now())
        #expect(claims.preferredUsername == LocalIdentityProvider.demoUser.username)
        #expect(try ClientInfo(encoded: try #require(second["client_info"])).uniqueID == LocalIdentityProvider.demoUser.objectID)
        let third = try await client.refresh(secondRT, scope: nil)
        #expect(third.status == 200)
        #expect(third["scope"] == "user.read openid profile offline_access")
        #expect(provider.tokenRequests.map(\.grantType).suffix(2) == ["refresh_token", "refresh_token"])
    }

    @Test func refreshAtAnotherTenantIssuesAGuestToken() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let guestTenant = "99999999-8888-4777-8666-555555555555"
        provider.addTenant(guestTenant, domain: "woodgrove.example")
        let first = try await client.signIn()
        let reply = try await client.refresh(try #require(first["refresh_token"]), tenant: "woodgrove.example")
        #expect(reply.status == 200)
        let claims = try IDTokenClaims(jwt: try #require(reply["id_token"]))
        #expect(claims.tenantID == guestTenant)
        #expect(claims.issuer == "\(provider.baseURL.absoluteString)/\(guestTenant)/v2.0")
        #expect(claims.objectID != LocalIdentityProvider.demoUser.objectID)
        #expect(UUID(uuidString: try #require(claims.objectID)) != nil)
        let home = try ClientInfo(encoded: try #require(reply["client_info"]))
        #expect(home.uniqueTenantID == LocalIdentityProvider.demoTenantID)
        #expect(home.uniqueID == LocalIdentityProvider.demoUser.objectID)
    }

    @Test func revokedRefreshTokenIsInvalidGrant() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let tokens = try await client.signIn()
        provider.revokeRefreshTokens(username: "ALICE@contoso.example")
        let reply = try await client.refresh(try #require(tokens["refresh_token"]))
        expectEntraError(reply, "invalid_grant", codes: [70000])
        #expect(reply["suberror"] == "bad_token")
    }

    @Test func expiredRefreshTokenIs700082() async throws {
        let clock = ManualWallClock()
        let (provider, client) = try started(clock: clock)
        defer { provider.stop() }
        provider.refreshTokenLifetime = 3600
        let tokens = try await client.signIn()
        let refreshToken = try #require(tokens["refresh_token"])
        clock.advance(by: 3599)
        let stillGood = try await client.refresh(refreshToken)
        #expect(stillGood.status == 200)
        clock.advance(by: 1)
        let reply = try await client.refresh(refreshToken)
        expectEntraError(reply, "invalid_grant", codes: [700082])
        #expect(reply["suberror"] == "bad_token")
    }

    @Test func unknownOrForeignRefreshTokenIsInvalidGrant() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        expectEntraError(try await client.refresh("not-a-refresh-token"), "invalid_grant", codes: [70000])
        let tokens = try await client.signIn()
        expectEntraError(try await client.refresh(try #require(tokens["refresh_token"]), clientID: "another-client"), "invalid_grant", codes: [70000])
    }

    @Test func lifetimesAreConfigurable() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        provider.accessTokenLifetime = 120
        // Not the default 900, and long enough on the real clock for a suite that stalls this
        // test on a busy 2-core machine (a 60 s lifetime once expired before the poll).
        provider.deviceCodeLifetime = 600
        provider.deviceCodeInterval = 1
        #expect(provider.accessTokenLifetime == 120)
        let code = try await client.deviceCode()
        #expect(code.json["expires_in"] == .number(600))
        #expect(code.json["interval"] == .number(1))
        try provider.approveDeviceCode(userCode: try #require(code["user_code"]), as: "alice@contoso.example")
        let tokens = try await client.pollToken(try #require(code["device_code"]))
        #expect(tokens.json["expires_in"] == .number(120))
    }

    // MARK: Failure injection

    @Test func injectedOAuthError() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let tokens = try await client.signIn()
        provider.failNextTokenRequests(with: .oauthError(error: "invalid_grant", subError: "basic_action", errorCodes: [50076], status: 400))
        let reply = try await client.refresh(try #require(tokens["refresh_token"]))
        expectEntraError(reply, "invalid_grant", codes: [50076])
        #expect(reply["suberror"] == "basic_action")
        provider.failNextTokenRequests(with: .oauthError(error: "temporarily_unavailable", description: "exactly this", status: 503))
        let verbatim = try await client.refresh(try #require(tokens["refresh_token"]))
        #expect(verbatim.status == 503)
        #expect(verbatim["error_description"] == "exactly this")
        #expect(try await client.refresh(try #require(tokens["refresh_token"])).status == 200)
    }

    @Test func injectedEmptyHTMLAndServerErrorsInOrder() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let tokens = try await client.signIn()
        let refreshToken = try #require(tokens["refresh_token"])
        provider.failNextTokenRequests(with: .emptyBody(status: 200))
        provider.failNextTokenRequests(with: .html(status: 502))
        provider.failNextTokenRequests(with: .serverError(status: 500), count: 2)

        let empty = try await client.refresh(refreshToken)
        #expect(empty.status == 200)
        #expect(empty.body.isEmpty)

        let html = try await client.refresh(refreshToken)
        #expect(html.status == 502)
        #expect(html.response.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/html") == true)
        #expect(String(decoding: html.body, as: UTF8.self).contains("<html>"))

        for _ in 0..<2 {
            let server = try await client.refresh(refreshToken)
            #expect(server.status == 500)
            #expect(server.response.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/plain") == true)
            #expect(!server.body.isEmpty)
        }
        #expect(try await client.refresh(refreshToken).status == 200)
        // The failed requests were recorded too: 1 device code poll + 5 refreshes.
        #expect(provider.tokenRequests.count == 6)
    }

    @Test func restartsOnANewPortKeepingState() async throws {
        let (provider, client) = try started()
        let tokens = try await client.signIn()
        let firstPort = provider.baseURL.port
        provider.stop()
        provider.stop()
        try provider.start()
        defer { provider.stop() }
        #expect(provider.baseURL.port != nil)
        #expect(provider.baseURL.port != 0)
        _ = firstPort
        #expect(try await client.refresh(try #require(tokens["refresh_token"])).status == 200)
    }
}
