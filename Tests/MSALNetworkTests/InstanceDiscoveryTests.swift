import Foundation
import MSALCore
@testable import MSALNetwork
import MSALTestSupport
import Testing

@Suite("InstanceDiscovery")
struct InstanceDiscoveryTests {
    /// A transport that fails the test if it is ever used.
    static func noNetwork() -> FakeTransport {
        FakeTransport { request throws(MSALError) in
            Issue.record("unexpected request to \(request.url)")
            throw .internal(.networkError, "no network in this test")
        }
    }

    static func answer(for host: String, entries: [(String, String, [String])]) -> String {
        let metadata = entries.map { network, cache, aliases in
            #"{"preferred_network":"\#(network)","preferred_cache":"\#(cache)","aliases":[\#(aliases.map { "\"\($0)\"" }.joined(separator: ","))]}"#
        }
        return #"{"tenant_discovery_endpoint":"https://\#(host)/common/v2.0/.well-known/openid-configuration","api-version":"1.1","metadata":[\#(metadata.joined(separator: ","))]}"#
    }

    @Test("Well-known Entra hosts come from the built-in table, with no request", arguments: [
        ("https://login.microsoftonline.com/common", "login.microsoftonline.com", "login.windows.net", 4),
        ("https://login.windows.net/contoso.onmicrosoft.com", "login.microsoftonline.com", "login.windows.net", 4),
        ("https://sts.windows.net/organizations", "login.microsoftonline.com", "login.windows.net", 4),
        ("https://login.chinacloudapi.cn/common", "login.partner.microsoftonline.cn", "login.partner.microsoftonline.cn", 2),
        ("https://login.usgovcloudapi.net/common", "login.microsoftonline.us", "login.microsoftonline.us", 2),
        ("https://login.microsoftonline.de/common", "login.microsoftonline.de", "login.microsoftonline.de", 1),
        ("https://login-us.microsoftonline.com/common", "login-us.microsoftonline.com", "login-us.microsoftonline.com", 1),
    ])
    func builtIn(url: String, network: String, cache: String, aliasCount: Int) async throws {
        let transport = Self.noNetwork()
        let discovery = InstanceDiscovery(transport: transport)
        let metadata = try await discovery.metadata(for: try Authority(url, type: .aad), correlationID: nil)
        #expect(metadata.preferredNetwork == network)
        #expect(metadata.preferredCache == cache)
        #expect(metadata.aliases.count == aliasCount)
        #expect(metadata.aliases.contains(URL(string: url)!.host!))
        #expect(transport.requests.isEmpty)
    }

    @Test("Every host Authority infers as Entra is in the built-in table")
    func tableCoversKnownEntraHosts() {
        for host in Authority.knownEntraHosts {
            #expect(InstanceMetadata.known(host: host) != nil, "\(host)")
        }
    }

    @Test("B2C, AD FS and generic OpenID Connect authorities are their own only alias, with no request")
    func notEntra() async throws {
        let transport = Self.noNetwork()
        let discovery = InstanceDiscovery(transport: transport)
        let authorities = [
            try Authority("https://contoso.b2clogin.com/tfp/contoso.onmicrosoft.com/B2C_1_SignIn", knownAuthorities: ["contoso.b2clogin.com"]),
            try Authority("https://fs.contoso.com/adfs"),
            try Authority("https://idp.example.com:8443/realms/main"),
        ]
        for authority in authorities {
            let metadata = try await discovery.metadata(for: authority, correlationID: nil)
            #expect(metadata == .single(authority.environment))
        }
        #expect(transport.requests.isEmpty)
    }

    @Test("An unknown Entra host is asked of the trusted host with MSAL's request")
    func requestShape() async throws {
        let transport = FakeTransport(answer: .json(200, Self.answer(for: "login.sovereign.example", entries: [
            ("login.sovereign.example", "login.sovereign.example", ["login.sovereign.example", "sts.sovereign.example"]),
        ])))
        let discovery = InstanceDiscovery(transport: transport)
        let metadata = try await discovery.metadata(for: try Authority("https://login.sovereign.example/contoso.com", type: .aad), correlationID: "corr-1")
        let request = try #require(transport.requests.first)
        #expect(request.method == .get)
        #expect(request.url.absoluteString
            == "https://login.microsoftonline.com/common/discovery/instance?api-version=1.1&authorization_endpoint=https%3A%2F%2Flogin.sovereign.example%2Fcontoso.com%2Foauth2%2Fv2.0%2Fauthorize")
        #expect(request.header("client-request-id") == "corr-1")
        #expect(metadata.aliases == ["login.sovereign.example", "sts.sovereign.example"])
    }

    @Test("Against the local provider: an added cloud's aliases, and its other aliases then need no request")
    func localProviderAliases() async throws {
        let provider = LocalIdentityProvider()
        try provider.start()
        defer { provider.stop() }
        provider.addInstanceMetadata(
            preferredNetwork: "login.sovereign.example", preferredCache: "cache.sovereign.example",
            aliases: ["login.sovereign.example", "cache.sovereign.example", "sts.sovereign.example"]
        )
        let trustedHost = provider.baseURL.absoluteString.replacingOccurrences(of: "http://", with: "")
        let discovery = InstanceDiscovery(transport: URLSessionTransport(timeout: 10), trustedHost: trustedHost)

        let metadata = try await discovery.metadata(for: try Authority("https://login.sovereign.example/common", type: .aad), correlationID: nil)
        #expect(metadata.preferredNetwork == "login.sovereign.example")
        #expect(metadata.preferredCache == "cache.sovereign.example")
        #expect(metadata.aliases == ["login.sovereign.example", "cache.sovereign.example", "sts.sovereign.example"])
        #expect(provider.instanceDiscoveryRequestCount == 1)

        // The same cloud under another alias, and the provider's own host (listed in that answer too).
        #expect(try await discovery.metadata(for: try Authority("https://sts.sovereign.example/organizations", type: .aad), correlationID: nil) == metadata)
        let own = try await discovery.metadata(for: try Authority(provider.authority(), type: .aad), correlationID: nil)
        #expect(own == .single(trustedHost))
        #expect(provider.instanceDiscoveryRequestCount == 1)
    }

    @Test("invalid_instance is failedAuthorityValidation with the server's fields; it is not kept")
    func invalidInstance() async throws {
        let provider = LocalIdentityProvider()
        try provider.start()
        defer { provider.stop() }
        let trustedHost = provider.baseURL.absoluteString.replacingOccurrences(of: "http://", with: "")
        let discovery = InstanceDiscovery(transport: URLSessionTransport(timeout: 10), trustedHost: trustedHost)
        let authority = try Authority("https://login.bogus.example/common", type: .aad)

        let error = await capture { try await discovery.metadata(for: authority, correlationID: "corr-2") }
        #expect(error == .internal(.failedAuthorityValidation, ""))
        #expect(error?.oauthError == "invalid_instance")
        #expect(error?.errorCodes == [50049])
        #expect(error?.httpStatusCode == 400)
        #expect(error?.correlationID == "corr-2")
        #expect(error?.message.contains("login.bogus.example") == true)

        _ = await capture { try await discovery.metadata(for: authority, correlationID: nil) }
        #expect(provider.instanceDiscoveryRequestCount == 2)
    }

    @Test("With validation off, unknown hosts are trusted as their own only alias, with no request; known hosts still use the table")
    func validationOff() async throws {
        let transport = Self.noNetwork()
        let discovery = InstanceDiscovery(transport: transport, validateAuthority: false)
        let unknown = try await discovery.metadata(for: try Authority("https://login.private.example:8443/common", type: .aad), correlationID: nil)
        #expect(unknown == InstanceMetadata(preferredNetwork: "login.private.example:8443", preferredCache: "login.private.example:8443", aliases: ["login.private.example:8443"]))
        let known = try await discovery.metadata(for: try Authority("https://login.windows.net/common"), correlationID: nil)
        #expect(known.preferredNetwork == "login.microsoftonline.com")
        #expect(transport.requests.isEmpty)
    }

    @Test("One request per host, also with concurrent callers; removeAll asks again")
    func oneRequestPerHost() async throws {
        let transport = FakeTransport { request throws(MSALError) in
            try? await Task.sleep(nanoseconds: 100_000_000)
            let endpoint = request.url.absoluteString.components(separatedBy: "authorization_endpoint=").last!.removingPercentEncoding!
            let host = URL(string: endpoint)!.host!
            return .json(200, Self.answer(for: host, entries: [(host, host, [host])]))
        }
        let discovery = InstanceDiscovery(transport: transport)
        let first = try Authority("https://login.one.example/common", type: .aad)
        let second = try Authority("https://login.two.example/common", type: .aad)
        let results = try await withThrowingTaskGroup(of: InstanceMetadata.self) { group in
            for index in 0..<20 {
                group.addTask { try await discovery.metadata(for: index.isMultiple(of: 2) ? first : second, correlationID: nil) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 20)
        #expect(Set(results.map(\.preferredNetwork)) == ["login.one.example", "login.two.example"])
        #expect(transport.requests.count == 2)
        _ = try await discovery.metadata(for: first.withTenant("organizations"), correlationID: nil)
        #expect(transport.requests.count == 2)
        await discovery.removeAll()
        _ = try await discovery.metadata(for: first, correlationID: nil)
        #expect(transport.requests.count == 3)
    }

    @Test("An answer that does not list the host makes it its own only alias")
    func hostNotInAnswer() async throws {
        let transport = FakeTransport(answer: .json(200, Self.answer(for: "login.lonely.example", entries: [
            ("login.microsoftonline.com", "login.windows.net", ["login.microsoftonline.com", "login.windows.net"]),
        ])))
        let metadata = try await InstanceDiscovery(transport: transport)
            .metadata(for: try Authority("https://login.lonely.example/common", type: .aad), correlationID: nil)
        #expect(metadata == .single("login.lonely.example"))
    }

    @Test("Other failures keep their codes and are not kept", arguments: [
        (HTTPResponse.json(200, #"{"metadata":[]}"#), MSALError(.serverError, internalCode: .invalidResponse, message: "")),
        (HTTPResponse.json(500, #"{"error":"temporarily_unavailable"}"#), MSALError(.serverError, message: "")),
        (HTTPResponse(statusCode: 502, headers: ["Content-Type": "text/html"], body: Data("<html></html>".utf8)),
         MSALError(.serverError, internalCode: .invalidResponse, message: "")),
    ])
    func otherFailures(response: HTTPResponse, expected: MSALError) async throws {
        let transport = FakeTransport(answer: response)
        let discovery = InstanceDiscovery(transport: transport)
        let authority = try Authority("https://login.flaky.example/common", type: .aad)
        #expect(await capture { try await discovery.metadata(for: authority, correlationID: nil) } == expected)
        #expect(await capture { try await discovery.metadata(for: authority, correlationID: nil) } == expected)
        #expect(transport.requests.count == 2)
    }
}
