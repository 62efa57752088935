import Foundation
import MSAL
import MSALCacheSQLite
import MSALTestSupport
import Testing

@Suite("Claims challenges and client capabilities")
struct ClaimsTests {
    static let scopes = ["api://demo/Files.Read"]

    @Test("A claims challenge skips the cached token and goes out with the capabilities merged in as xms_cc")
    func claimsChallenge() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        var configuration = PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID, authority: fixture.authority,
            cacheStore: try SQLiteTokenCacheStore(path: fixture.cachePath))
        configuration.clock = fixture.clock
        configuration.clientCapabilities = ["cp1"]
        let application = try PublicClientApplication(configuration: configuration)
        let signIn = try await fixture.signIn(application)

        var parameters = SilentTokenParameters(scopes: Self.scopes, account: signIn.account)
        parameters.claims = #"{"access_token":{"nbf":{"essential":true,"value":"1700000000"}}}"#
        let result = try await application.acquireTokenSilent(with: parameters)
        #expect(result.tokenSource == .identityProvider)
        let sent = try #require(fixture.provider.tokenRequests.last?.formParameters["claims"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sent.utf8)) as? [String: Any])
        let accessToken = try #require(object["access_token"] as? [String: Any])
        #expect((accessToken["xms_cc"] as? [String: Any])?["values"] as? [String] == ["cp1"])
        #expect(accessToken["nbf"] != nil)
    }

    @Test("A claims request that is not a JSON object is an invalidParameter error, before any request")
    func invalidClaims() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let before = fixture.provider.tokenRequests.count
        var parameters = SilentTokenParameters(scopes: Self.scopes, account: signIn.account)
        parameters.claims = "not json"
        await #expect(throws: MSALError.internal(.invalidParameter, "")) { try await application.acquireTokenSilent(with: parameters) }
        #expect(fixture.provider.tokenRequests.count == before)
    }

    @Test("Without claims or capabilities no claims parameter is sent")
    func noClaims() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, forceRefresh: true))
        #expect(fixture.provider.tokenRequests.last?.formParameters["claims"] == nil)
    }
}
