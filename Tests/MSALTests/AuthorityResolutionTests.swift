import Foundation
import MSAL
import MSALCache
import MSALCacheSQLite
import MSALTestSupport
import Testing

@Suite("Authorities at request time: aliases, validation, no request on a cache hit, coalescing keys")
struct AuthorityResolutionTests {
    static let alice = "0a0a0a0a-0000-4000-8000-0000000a11ce.aaaaaaaa-0000-4000-8000-00000000aaaa"
    static let tenant = "aaaaaaaa-0000-4000-8000-00000000aaaa"
    static let client = "c11e0000-0000-4000-8000-000000000001"

    @Test("A token MSAL Python cached under login.microsoftonline.com is found under the alias login.windows.net, with no request at all")
    func aliasAndNoRequest() async throws {
        let transport = InteropEntraTransport()
        var configuration = PublicClientApplicationConfiguration(
            clientID: Self.client, authority: try Authority("https://login.windows.net/\(Self.tenant)"),
            cacheStore: InMemoryTokenCacheStore(contents: try InteropFixtures.cache("single_account")))
        configuration.clock = ManualWallClock(Date(timeIntervalSince1970: 1_700_000_600))
        configuration.transport = transport
        let application = try PublicClientApplication(configuration: configuration)
        let account = try #require(try application.account(forIdentifier: Self.alice))
        let result = try await application.acquireTokenSilent(with: SilentTokenParameters(
            scopes: ["https://graph.microsoft.com/User.Read"], account: account))
        #expect(result.tokenSource == .cache)
        #expect(result.accessToken == "AT-1")
        #expect(transport.requests.isEmpty, "a cache hit on a well-known cloud sends nothing, not even discovery")
    }

    @Test("A cache hit on the local provider sends no request either (no discovery, no instance discovery)")
    func cacheHitIsOffline() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let before = fixture.provider.requests.count
        let result = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: signIn.account))
        #expect(result.tokenSource == .cache)
        #expect(fixture.provider.requests.count == before)
    }

    @Test("An Entra host that instance discovery does not know is refused: failedAuthorityValidation")
    func unknownInstance() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        var configuration = PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID,
            authority: try Authority("https://login.unknown-cloud.example/common", type: .aad), cacheBackend: .inMemory)
        // The local provider plays login.microsoftonline.com's instance discovery.
        configuration.instanceDiscoveryHost = "127.0.0.1:\(fixture.provider.baseURL.port ?? 0)"
        let application = try PublicClientApplication(configuration: configuration)
        await #expect(throws: MSALError.internal(.failedAuthorityValidation, "")) {
            try await application.acquireToken(with: DeviceCodeParameters(scopes: ["api://demo/Files.Read"])) { _ in }
        }
        #expect(fixture.provider.tokenRequests.isEmpty)
    }

    @Test("Concurrent silent calls that differ in scopes never share a refresh")
    func coalescingKeyCoversScopes() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let before = fixture.provider.tokenRequests.count
        async let a = application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: signIn.account, forceRefresh: true))
        async let b = application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://other/Read"], account: signIn.account, forceRefresh: true))
        let (first, second) = try await (a, b)
        #expect(first.accessToken != second.accessToken)
        #expect(first.scopes == ["api://demo/Files.Read"])
        #expect(second.scopes == ["api://other/Read"])
        #expect(fixture.provider.tokenRequests.count == before + 2)
    }
}
