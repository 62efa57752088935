import Foundation
import MSALCore
@testable import MSALNetwork
import Testing

@Suite("OpenIDConfigurationCache")
struct OpenIDConfigurationCacheTests {
    static func document(issuer: String, base: String, device: Bool) -> String {
        var fields = [
            #""issuer":"\#(issuer)""#,
            #""authorization_endpoint":"\#(base)/authorize""#,
            #""token_endpoint":"\#(base)/token""#,
            #""jwks_uri":"\#(base)/jwks""#,
            #""end_session_endpoint":"\#(base)/logout""#,
            #""userinfo_endpoint":"\#(base)/userinfo""#,
            #""scopes_supported":["openid","profile"]"#,
            #""code_challenge_methods_supported":["S256"]"#,
        ]
        if device { fields.append(#""device_authorization_endpoint":"\#(base)/device_authorization""#) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    @Test("OpenID Connect authority: fetches the discovery URL and parses the document")
    func oidc() async throws {
        let authority = try Authority("http://127.0.0.1:4593/api/oidc")
        let transport = FakeTransport(answer: .json(200, Self.document(issuer: "http://127.0.0.1:4593/api/oidc", base: "http://127.0.0.1:4593/api/oidc", device: true)))
        let cache = OpenIDConfigurationCache(transport: transport)
        let configuration = try await cache.configuration(for: authority, correlationID: "corr")
        let request = try #require(transport.requests.first)
        #expect(request.method == .get)
        #expect(request.url.absoluteString == "http://127.0.0.1:4593/api/oidc/.well-known/openid-configuration")
        #expect(request.header("client-request-id") == "corr")
        #expect(request.header("x-client-SKU") == "MSAL.Swift.Linux")
        #expect(configuration.issuer == "http://127.0.0.1:4593/api/oidc")
        #expect(configuration.authorizationEndpoint.absoluteString == "http://127.0.0.1:4593/api/oidc/authorize")
        #expect(configuration.tokenEndpoint.absoluteString == "http://127.0.0.1:4593/api/oidc/token")
        #expect(configuration.deviceAuthorizationEndpoint?.absoluteString == "http://127.0.0.1:4593/api/oidc/device_authorization")
        #expect(configuration.jwksURI?.absoluteString == "http://127.0.0.1:4593/api/oidc/jwks")
        #expect(configuration.endSessionEndpoint?.absoluteString == "http://127.0.0.1:4593/api/oidc/logout")
        #expect(configuration.userinfoEndpoint?.absoluteString == "http://127.0.0.1:4593/api/oidc/userinfo")
        #expect(configuration.scopesSupported == ["openid", "profile"])
        #expect(configuration.codeChallengeMethodsSupported == ["S256"])
    }

    @Test("one fetch per authority, also with concurrent callers")
    func oneFetch() async throws {
        let authority = try Authority("https://idp.example.com")
        let other = try Authority("https://other.example.com")
        let transport = FakeTransport { request throws(MSALError) in
            try? await Task.sleep(nanoseconds: 100_000_000)
            let base = "https://\(request.url.host!)"
            return .json(200, Self.document(issuer: base, base: base, device: false))
        }
        let cache = OpenIDConfigurationCache(transport: transport)
        let results = try await withThrowingTaskGroup(of: OpenIDConfiguration.self) { group in
            for index in 0..<20 {
                group.addTask { try await cache.configuration(for: index.isMultiple(of: 2) ? authority : other, correlationID: nil) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 20)
        #expect(transport.requests.count == 2)
        #expect(Set(transport.requests.map { $0.url.host! }) == ["idp.example.com", "other.example.com"])
        _ = try await cache.configuration(for: authority, correlationID: nil)
        #expect(transport.requests.count == 2)
        await cache.removeAll()
        _ = try await cache.configuration(for: authority, correlationID: nil)
        #expect(transport.requests.count == 3)
    }

    @Test("Entra ID without device_authorization_endpoint derives <authority>/oauth2/v2.0/devicecode")
    func entraDerivation() async throws {
        let authority = try Authority("https://login.microsoftonline.com/contoso.onmicrosoft.com")
        let base = "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0"
        let transport = FakeTransport(answer: .json(200, Self.document(issuer: "https://login.microsoftonline.com/{tenantid}/v2.0", base: base, device: false)))
        let configuration = try await OpenIDConfigurationCache(transport: transport).configuration(for: authority, correlationID: nil)
        #expect(transport.requests.first?.url.absoluteString
            == "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0/.well-known/openid-configuration")
        #expect(configuration.deviceAuthorizationEndpoint?.absoluteString
            == "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/devicecode")
        #expect(configuration.issuer == "https://login.microsoftonline.com/{tenantid}/v2.0")
    }

    @Test("OpenID Connect without device_authorization_endpoint has none")
    func oidcNoDevice() async throws {
        let authority = try Authority("https://idp.example.com/realms/x")
        let transport = FakeTransport(answer: .json(200, Self.document(issuer: "https://idp.example.com/realms/x/", base: "https://idp.example.com", device: false)))
        let configuration = try await OpenIDConfigurationCache(transport: transport).configuration(for: authority, correlationID: nil)
        #expect(configuration.deviceAuthorizationEndpoint == nil)
    }

    @Test("bad documents give a clear error naming the field, and failures are not cached")
    func badDocument() async throws {
        let authority = try Authority("https://idp.example.com")
        let transport = FakeTransport(answer: .json(200, #"{"issuer":"https://idp.example.com","authorization_endpoint":"https://idp.example.com/a","token_endpoint":"not a url"}"#))
        let cache = OpenIDConfigurationCache(transport: transport)
        for _ in 0..<2 {
            let error = try #require(await capture { try await cache.configuration(for: authority, correlationID: nil) })
            #expect(error.code == .serverError)
            #expect(error.internalCode == .invalidResponse)
            #expect(error.message.contains("token_endpoint"))
            #expect(error.message.contains("https://idp.example.com/.well-known/openid-configuration"))
        }
        #expect(transport.requests.count == 2)
    }

    @Test("an HTML page instead of the document")
    func htmlDocument() async throws {
        let authority = try Authority("https://idp.example.com")
        let transport = FakeTransport(answer: HTTPResponse(statusCode: 200, headers: ["content-type": "text/html"], body: Data("<html></html>".utf8)))
        let error = try #require(await capture { try await OpenIDConfigurationCache(transport: transport).configuration(for: authority, correlationID: nil) })
        #expect(error.code == .serverError)
        #expect(error.internalCode == .invalidResponse)
        #expect(error.message.contains("HTML"))
    }

    @Test("4xx from discovery (unknown tenant) is an invalid authority that keeps Entra's fields")
    func unknownTenant() async throws {
        let authority = try Authority("https://login.microsoftonline.com/nosuchtenant.example")
        let transport = FakeTransport(answer: .json(400, #"{"error":"invalid_tenant","error_description":"AADSTS90002: Tenant not found.","error_codes":[90002],"correlation_id":"c1"}"#))
        let error = try #require(await capture { try await OpenIDConfigurationCache(transport: transport).configuration(for: authority, correlationID: nil) })
        #expect(error == .internal(.invalidAuthority, ""))
        #expect(error.oauthError == "invalid_tenant")
        #expect(error.errorCodes == [90002])
        #expect(error.correlationID == "c1")
        #expect(error.httpStatusCode == 400)
        #expect(error.message.contains("AADSTS90002"))

        let notFound = FakeTransport(answer: HTTPResponse(statusCode: 404))
        let error404 = try #require(await capture { try await OpenIDConfigurationCache(transport: notFound).configuration(for: authority, correlationID: nil) })
        #expect(error404 == .internal(.invalidAuthority, ""))
        #expect(error404.httpStatusCode == 404)
    }

    @Test("an OpenID Connect issuer that is not the authority is rejected (Discovery §4.3)")
    func issuerMismatch() async throws {
        let authority = try Authority("https://idp.example.com/a")
        let transport = FakeTransport(answer: .json(200, Self.document(issuer: "https://evil.example.com/a", base: "https://idp.example.com/a", device: true)))
        let error = try #require(await capture { try await OpenIDConfigurationCache(transport: transport).configuration(for: authority, correlationID: nil) })
        #expect(error == .internal(.invalidAuthority, ""))
        #expect(error.message.contains("evil.example.com"))
    }

    @Test("a provider that is down: the transport's error passes through")
    func providerDown() async throws {
        let authority = try Authority("https://idp.example.com")
        let transport = FakeTransport { _ throws(MSALError) in throw .internal(.networkError, "Could not connect to idp.example.com") }
        let error = try #require(await capture { try await OpenIDConfigurationCache(transport: transport).configuration(for: authority, correlationID: nil) })
        #expect(error == .internal(.networkError, ""))
    }

    @Test("a stored configuration is used without a fetch")
    func stored() async throws {
        let authority = try Authority("https://idp.example.com")
        let transport = FakeTransport(answer: HTTPResponse(statusCode: 500))
        let cache = OpenIDConfigurationCache(transport: transport)
        let configuration = OpenIDConfiguration(
            issuer: "https://idp.example.com", authorizationEndpoint: URL(string: "https://idp.example.com/a")!,
            tokenEndpoint: URL(string: "https://idp.example.com/t")!)
        await cache.store(configuration, for: authority)
        #expect(try await cache.configuration(for: authority, correlationID: nil) == configuration)
        #expect(transport.requests.isEmpty)
    }

    @Test("AD FS: the document at <authority>/.well-known/openid-configuration must name the authority as issuer")
    func adfs() async throws {
        let authority = try Authority("https://fs.contoso.com/adfs")
        let good = FakeTransport(answer: .json(200, Self.document(issuer: "https://fs.contoso.com/adfs", base: "https://fs.contoso.com/adfs/oauth2", device: true)))
        let configuration = try await OpenIDConfigurationCache(transport: good).configuration(for: authority, correlationID: nil)
        #expect(good.requests.first?.url.absoluteString == "https://fs.contoso.com/adfs/.well-known/openid-configuration")
        #expect(configuration.tokenEndpoint.absoluteString == "https://fs.contoso.com/adfs/oauth2/token")
        let impostor = FakeTransport(answer: .json(200, Self.document(issuer: "https://evil.example/adfs", base: "https://evil.example/adfs/oauth2", device: false)))
        #expect(await capture { try await OpenIDConfigurationCache(transport: impostor).configuration(for: authority, correlationID: nil) }
            == .internal(.invalidAuthority, ""))
    }

    @Test("B2C: the policy's v2.0 document is fetched; its issuer names the tenant ID, not the authority")
    func b2c() async throws {
        let authority = try Authority("https://contoso.b2clogin.com/contoso.onmicrosoft.com/B2C_1_SignIn", knownAuthorities: ["contoso.b2clogin.com"])
        let base = "https://contoso.b2clogin.com/contoso.onmicrosoft.com/b2c_1_signin/oauth2/v2.0"
        let transport = FakeTransport(answer: .json(200, Self.document(
            issuer: "https://contoso.b2clogin.com/aaaaaaaa-0000-4000-8000-00000000aaaa/v2.0/", base: base, device: false)))
        let configuration = try await OpenIDConfigurationCache(transport: transport).configuration(for: authority, correlationID: nil)
        #expect(transport.requests.first?.url.absoluteString
            == "https://contoso.b2clogin.com/contoso.onmicrosoft.com/B2C_1_SignIn/v2.0/.well-known/openid-configuration")
        #expect(configuration.authorizationEndpoint.absoluteString == base + "/authorize")
        #expect(configuration.deviceAuthorizationEndpoint == nil)
    }
}
