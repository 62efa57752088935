import Foundation
import MSALCore
@testable import MSALNetwork
import Testing

@Suite("OAuth2Client requests and error mapping")
struct OAuth2ClientTests {
    let tokenEndpoint = URL(string: "https://login.example.com/tenant/oauth2/v2.0/token")!
    let deviceEndpoint = URL(string: "https://login.example.com/tenant/oauth2/v2.0/devicecode")!
    static let secret = "SECRET-VALUE-1234567890"

    func expectStandardHeaders(_ request: HTTPRequest, correlationID: String) {
        #expect(request.header("client-request-id") == correlationID)
        #expect(request.header("return-client-request-id") == "true")
        #expect(request.header("x-client-SKU") == "MSAL.Swift.Linux")
        #expect(request.header("x-client-Ver") == "0.1.0")
        #expect(request.header("Accept") == "application/json")
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(request.method == .post)
    }

    // MARK: Request encoding

    @Test("device authorization request: form body, headers, scopes joined")
    func deviceAuthorizationRequest() async throws {
        let transport = FakeTransport(answer: .json(200, """
            {"device_code":"DC","user_code":"ABCD-EFGH","verification_uri":"https://example.com/device","expires_in":900,"interval":3,"message":"Go there"}
            """))
        let client = OAuth2Client(transport: transport)
        let response = try await client.requestDeviceAuthorization(
            endpoint: deviceEndpoint, clientID: "client-1", scopes: ["User.Read", "openid", "Mail.Read"],
            extraParameters: ["client_info": "1", "client_id": "attacker"], correlationID: "corr-1"
        )
        let request = try #require(transport.requests.first)
        #expect(transport.requests.count == 1)
        #expect(request.url == deviceEndpoint)
        expectStandardHeaders(request, correlationID: "corr-1")
        #expect(request.formFields == ["client_id": "client-1", "scope": "Mail.Read openid User.Read", "client_info": "1"])
        #expect(String(decoding: request.body!, as: UTF8.self) == "client_id=client-1&client_info=1&scope=Mail.Read+openid+User.Read")
        #expect(response.deviceCode == "DC")
        #expect(response.userCode == "ABCD-EFGH")
        #expect(response.verificationURI.absoluteString == "https://example.com/device")
        #expect(response.verificationURIComplete == nil)
        #expect(response.expiresIn == 900)
        #expect(response.interval == 3)
        #expect(response.message == "Go there")
    }

    @Test("device authorization: Entra's verification_url, string numbers, default interval 5")
    func deviceAuthorizationLegacyFields() async throws {
        let transport = FakeTransport(answer: .json(200, """
            {"device_code":"DC","user_code":"U","verification_url":"https://microsoft.com/devicelogin","verification_uri_complete":"https://microsoft.com/devicelogin?code=U","expires_in":"900"}
            """))
        let response = try await OAuth2Client(transport: transport).requestDeviceAuthorization(
            endpoint: deviceEndpoint, clientID: "c", scopes: ["s"], correlationID: "x")
        #expect(response.verificationURI.absoluteString == "https://microsoft.com/devicelogin")
        #expect(response.verificationURIComplete?.absoluteString == "https://microsoft.com/devicelogin?code=U")
        #expect(response.expiresIn == 900)
        #expect(response.interval == 5)
    }

    @Test("device authorization without a user_code is an invalid response")
    func deviceAuthorizationMissingField() async throws {
        let transport = FakeTransport(answer: .json(200, #"{"device_code":"\#(Self.secret)","verification_uri":"https://e.com","expires_in":5}"#))
        let error = try #require(await capture {
            try await OAuth2Client(transport: transport).requestDeviceAuthorization(endpoint: deviceEndpoint, clientID: "c", scopes: ["s"], correlationID: "x")
        })
        #expect(error.code == .serverError)
        #expect(error.internalCode == .invalidResponse)
        #expect(error.message.contains("user_code"))
        #expect(!error.description.contains(Self.secret))
    }

    @Test("device code redemption: grant type, device code, client id")
    func redeemDeviceCodeRequest() async throws {
        let transport = FakeTransport(answer: .json(200, #"{"access_token":"AT","token_type":"Bearer","expires_in":3600}"#))
        _ = try await OAuth2Client(transport: transport).redeemDeviceCode(
            tokenEndpoint: tokenEndpoint, clientID: "client-1", deviceCode: "DC 1&2", extraParameters: ["client_info": "1"], correlationID: "corr-2")
        let request = try #require(transport.requests.first)
        expectStandardHeaders(request, correlationID: "corr-2")
        #expect(request.url == tokenEndpoint)
        #expect(request.formFields == [
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "client_id": "client-1", "device_code": "DC 1&2", "client_info": "1",
        ])
    }

    @Test("refresh token redemption: grant type, refresh token, scope joined")
    func redeemRefreshTokenRequest() async throws {
        let transport = FakeTransport(answer: .json(200, #"{"access_token":"AT","token_type":"Bearer"}"#))
        _ = try await OAuth2Client(transport: transport).redeemRefreshToken(
            tokenEndpoint: tokenEndpoint, clientID: "client-1", refreshToken: "RT", scopes: ["b", "a", "offline_access"],
            extraParameters: ["grant_type": "password"], correlationID: "corr-3")
        let request = try #require(transport.requests.first)
        expectStandardHeaders(request, correlationID: "corr-3")
        #expect(request.formFields == ["grant_type": "refresh_token", "client_id": "client-1", "refresh_token": "RT", "scope": "a b offline_access"])
    }

    // MARK: Success parsing

    @Test("token response: all fields, string numbers, foci, additional fields, header correlation ID")
    func tokenResponseFields() async throws {
        let transport = FakeTransport(answer: .json(200, """
            {"access_token":"AT","token_type":"Bearer","expires_in":"3600","ext_expires_in":7200,"refresh_in":"1800",
             "refresh_token":"RT","id_token":"a.b.c","scope":"openid User.Read","client_info":"eyJ1aWQiOiIxIn0","foci":"1",
             "custom":{"x":1}}
            """, headers: ["Client-Request-Id": "server-corr"]))
        let token = try await OAuth2Client(transport: transport).redeemDeviceCode(
            tokenEndpoint: tokenEndpoint, clientID: "c", deviceCode: "d", correlationID: "sent-corr")
        #expect(token.accessToken == "AT")
        #expect(token.tokenType == "Bearer")
        #expect(token.expiresIn == 3600)
        #expect(token.extendedExpiresIn == 7200)
        #expect(token.refreshIn == 1800)
        #expect(token.refreshToken == "RT")
        #expect(token.idToken == "a.b.c")
        #expect(token.scope == "openid User.Read")
        #expect(token.clientInfo == "eyJ1aWQiOiIxIn0")
        #expect(token.familyID == "1")
        #expect(token.correlationID == "server-corr")
        #expect(token.additionalFields == ["custom": .object(["x": .number(1)])])
    }

    @Test("token response: minimal body defaults token type and falls back to the sent correlation ID")
    func tokenResponseMinimal() async throws {
        let transport = FakeTransport(answer: .json(200, #"{"access_token":"AT","expires_in":"not a number"}"#))
        let token = try await OAuth2Client(transport: transport).redeemRefreshToken(
            tokenEndpoint: tokenEndpoint, clientID: "c", refreshToken: "r", scopes: ["s"], correlationID: "sent-corr")
        #expect(token.tokenType == "Bearer")
        #expect(token.expiresIn == nil)
        #expect(token.refreshToken == nil)
        #expect(token.correlationID == "sent-corr")
    }

    @Test("descriptions and mirrors never show secrets")
    func redaction() {
        let token = TokenResponse(accessToken: Self.secret, refreshToken: Self.secret + "r", idToken: Self.secret + "i", scope: "s")
        #expect(!token.description.contains(Self.secret))
        #expect(token.description.contains("refreshToken: <redacted>"))
        var dumped = ""
        dump(token, to: &dumped)
        #expect(!dumped.contains(Self.secret))
        #expect(!String(reflecting: token).contains(Self.secret))

        let device = DeviceAuthorizationResponse(deviceCode: Self.secret, userCode: "USER", verificationURI: URL(string: "https://e.com")!, expiresIn: 900)
        #expect(!device.description.contains(Self.secret))
        #expect(device.description.contains("USER"))
        var dumpedDevice = ""
        dump(device, to: &dumpedDevice)
        #expect(!dumpedDevice.contains(Self.secret))
    }

    // MARK: Error mapping

    func redeemError(_ response: HTTPResponse) async throws -> MSALError {
        let transport = FakeTransport(answer: response)
        return try #require(await capture {
            try await OAuth2Client(transport: transport).redeemRefreshToken(
                tokenEndpoint: tokenEndpoint, clientID: "c", refreshToken: Self.secret, scopes: ["s"], correlationID: "sent-corr")
        })
    }

    @Test("JSON error with Entra fields keeps every field", arguments: [
        ("invalid_grant", MSALError.Code.interactionRequired),
        ("interaction_required", .interactionRequired),
        ("login_required", .interactionRequired),
        ("consent_required", .interactionRequired),
        ("invalid_client", .serverError),
        ("authorization_pending", .serverError),
        ("slow_down", .serverError),
        ("expired_token", .serverError),
    ])
    func entraError(oauthError: String, code: MSALError.Code) async throws {
        let error = try await redeemError(.json(400, """
            {"error":"\(oauthError)","error_description":"AADSTS70000: The grant is invalid.","suberror":"bad_token",
             "error_codes":[70000,"50173"],"timestamp":"2024-01-01 00:00:00Z","trace_id":"t","correlation_id":"body-corr"}
            """, headers: ["client-request-id": "header-corr"]))
        #expect(error.code == code)
        #expect(error.internalCode == nil)
        #expect(error.oauthError == oauthError)
        #expect(error.oauthErrorDescription == "AADSTS70000: The grant is invalid.")
        #expect(error.subError == "bad_token")
        #expect(error.errorCodes == [70000, 50173])
        #expect(error.correlationID == "body-corr")
        #expect(error.httpStatusCode == 400)
        #expect(error.message.contains(oauthError))
        #expect(!error.description.contains(Self.secret))
    }

    @Test("JSON error without correlation_id takes the client-request-id header")
    func errorHeaderCorrelation() async throws {
        let error = try await redeemError(.json(401, #"{"error":"invalid_client"}"#, headers: ["client-request-id": "header-corr"]))
        #expect(error.code == .serverError)
        #expect(error.correlationID == "header-corr")
        #expect(error.httpStatusCode == 401)
    }

    @Test("an error field in a 200 answer is still an error")
    func errorIn200() async throws {
        let error = try await redeemError(.json(200, #"{"error":"invalid_grant"}"#))
        #expect(error.code == .interactionRequired)
        #expect(error.httpStatusCode == 200)
    }

    @Test("empty body (Glewlwyd's bad refresh token): HTTP 400 with an empty body")
    func emptyBody() async throws {
        for body in ["", "  \r\n"] {
            let error = try await redeemError(HTTPResponse(statusCode: 400, body: Data(body.utf8)))
            #expect(error.code == .serverError)
            #expect(error.internalCode == .invalidResponse)
            #expect(error.httpStatusCode == 400)
            #expect(error.message.contains("The token endpoint (login.example.com) answered HTTP 400 with an empty body"))
            #expect(error.correlationID == "sent-corr")
        }
    }

    @Test("HTML body, by content type or by shape", arguments: [
        ("text/html; charset=utf-8", "Sorry \(OAuth2ClientTests.secret)"),
        ("application/octet-stream", "  <!DOCTYPE html><html><body>\(OAuth2ClientTests.secret)</body></html>"),
    ])
    func htmlBody(contentType: String, body: String) async throws {
        let error = try await redeemError(HTTPResponse(statusCode: 502, headers: ["Content-Type": contentType], body: Data(body.utf8)))
        #expect(error.code == .serverError)
        #expect(error.internalCode == .invalidResponse)
        #expect(error.httpStatusCode == 502)
        #expect(error.message.contains("with an HTML page instead of JSON"))
        #expect(!error.description.contains(Self.secret))
    }

    @Test("non-JSON and non-object bodies")
    func nonJSON() async throws {
        let plain = try await redeemError(HTTPResponse(statusCode: 400, headers: ["Content-Type": "text/plain"], body: Data("error=\(Self.secret)".utf8)))
        #expect(plain.internalCode == .invalidResponse)
        #expect(plain.message.contains("not JSON"))
        #expect(!plain.description.contains(Self.secret))

        let array = try await redeemError(.json(200, #"["access_token"]"#))
        #expect(array.internalCode == .invalidResponse)
        #expect(array.message.contains("not an object"))
    }

    @Test("A token a server echoes in its error_description is redacted from the message, the description field and the error's text; the rest of it stays")
    func echoedTokenRedacted() async throws {
        let jwt = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."
        let refreshToken = "0.AXkAv4j5cvGGr0GRqy180BHbR8ZbKmoREiIzM0RERVVWZmYAAA.AgABAAEAAAD--DLA3VO7QrddgJg7WevrAgDs_wQA9P"
        let guid = "8a0f2b6c-1d3e-4f5a-9b7c-0d1e2f3a4b5c"
        let url = "https://login.microsoftonline.com/common/oauth2/v2.0/authorize?client_id=6a5b2c8e"
        let error = try await redeemError(.json(400, """
            {"error":"invalid_grant","error_description":"AADSTS70000: bad token \(jwt) rt=\(refreshToken) Trace ID: \(guid) See \(url)"}
            """))
        for text in [error.message, error.description, error.oauthErrorDescription ?? ""] {
            #expect(!text.contains("eyJ") && !text.contains("AgABAAEAAAD"), "\(text)")
            #expect(text.contains("AADSTS70000: bad token <redacted>. rt=<redacted> Trace ID: \(guid) See \(url)"), "\(text)")
        }
    }

    @Test("Token-shaped text is redacted; words, dotted names, GUIDs, home account IDs, URLs and times are kept", arguments: [
        // Kept as they are.
        ("AADSTS50126: Error validating credentials due to invalid username or password.", nil),
        ("AADSTS65001: consent for DeviceManagementManagedDevices.PrivilegedOperations.All is missing.", nil),
        ("AADSTS90002: Tenant 'contoso-research-and-development-westeurope.onmicrosoft.com' not found.", nil),
        ("MSIS9612: Microsoft.IdentityServer.Web.Protocols.OAuth.Exceptions.OAuthInvalidRefreshTokenException was thrown.", nil),
        ("Account 00000000-0000-0000-66f3-3332eca7ea81.72f988bf-86f1-41af-91ab-2d7cd011db47 was not found.", nil),
        ("Trace ID: 6A5B2C8E-1111-2222-3333-444455556666 Timestamp: 2026-11-30 17:00:00Z", nil),
        ("See https://login.microsoftonline.com/B2C_1A_signup_signin_with_phone_and_email/oauth2/v2.0/authorize", nil),
        ("User MonkeyJoe.Smith has no access to the application.", nil),
        // Redacted.
        ("bad refresh token 0.AXkAv4j5cvGGr0GRqy180BHbR8ZbKmoREiIzM0RERVVWZmYAAA given", "bad refresh token <redacted> given"),
        ("opaque 8xLOxBtZp8gqJ7QYxW2nZ0kR5dT1uVyAoCqEeMfHg3s rejected", "opaque <redacted> rejected"),
        ("code=M.C5_BAY.0.U.-Cr7jQ!Pq*9XyGHk2tZbWq7RmN3vLpK8$hD4sT expired", "code=<redacted> expired"),
        ("AADSTS90011: policy B2C_1A_TrustFrameworkExtensions_Localization2 is not valid.", nil),
        ("token eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl.", "token <redacted>."),
    ])
    func redaction(text: String, expected: String?) {
        #expect(MSALError.redactingTokens(text) == (expected ?? text))
    }

    @Test("5xx: JSON error keeps its fields; JSON without error is an invalid response")
    func serverErrors() async throws {
        let unavailable = try await redeemError(.json(503, #"{"error":"temporarily_unavailable","error_description":"try later"}"#))
        #expect(unavailable.code == .serverError)
        #expect(unavailable.internalCode == nil)
        #expect(unavailable.oauthError == "temporarily_unavailable")
        #expect(unavailable.httpStatusCode == 503)

        let bare = try await redeemError(.json(500, #"{"message":"boom"}"#))
        #expect(bare.code == .serverError)
        #expect(bare.internalCode == .invalidResponse)
        #expect(bare.httpStatusCode == 500)
        #expect(bare.message.contains("no 'error' field"))
    }

    @Test("2xx without access_token is an invalid response")
    func missingAccessToken() async throws {
        let error = try await redeemError(.json(200, #"{"token_type":"Bearer","refresh_token":"\#(Self.secret)"}"#))
        #expect(error.code == .serverError)
        #expect(error.internalCode == .invalidResponse)
        #expect(error.httpStatusCode == 200)
        #expect(error.message.contains("access_token"))
        #expect(!error.description.contains(Self.secret))
    }

    @Test("transport errors pass through unchanged")
    func transportError() async throws {
        let transport = FakeTransport { _ throws(MSALError) in throw .internal(.networkError, "Could not connect to login.example.com") }
        let error = try #require(await capture {
            try await OAuth2Client(transport: transport).redeemDeviceCode(tokenEndpoint: tokenEndpoint, clientID: "c", deviceCode: "d", correlationID: "x")
        })
        #expect(error == .internal(.networkError, ""))
        #expect(error.message == "Could not connect to login.example.com")
    }

    @Test("the logger sees requests but never a secret")
    func logging() async throws {
        let lines = LineCollector()
        let logger = Logger(level: .debug) { _, line in lines.append(line) }
        let transport = FakeTransport(answer: .json(200, #"{"access_token":"\#(Self.secret)","refresh_token":"\#(Self.secret)"}"#))
        _ = try await OAuth2Client(transport: transport, logger: logger).redeemRefreshToken(
            tokenEndpoint: tokenEndpoint, clientID: "c", refreshToken: Self.secret, scopes: ["s"], correlationID: "x")
        #expect(!lines.all.isEmpty)
        #expect(lines.all.allSatisfy { !$0.contains(Self.secret) })
    }
}

/// Collects log lines across threads.
final class LineCollector: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

import Synchronization
