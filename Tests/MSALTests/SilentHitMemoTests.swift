import Foundation
import MSAL
import MSALCache
import MSALCore
import MSALTestSupport
import Testing

/// A request that repeats is answered from the answers kept per cache revision; these tests check
/// that such an answer is never served once it would differ from what the ordinary path answers.
@Suite("Silent hits kept for repeated requests")
struct SilentHitMemoTests {
    static let scopes = ["api://demo/Files.Read"]

    /// Signs in, then asks the same question three times, so the answer is kept (on the second)
    /// and served (on the third).
    private func warmedUp(_ fixture: LocalFixture) async throws -> (PublicClientApplication, AuthenticationResult) {
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        for _ in 0..<3 {
            let hit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
            #expect(hit.tokenSource == .cache && hit.accessToken == signIn.accessToken)
        }
        return (application, signIn)
    }

    @Test("A kept answer is not served once its token is within the expiration buffer: the call refreshes")
    func expiry() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let (application, signIn) = try await warmedUp(fixture)
        fixture.clock.set(signIn.expiresOn.addingTimeInterval(-application.configuration.tokenExpirationBuffer + 1))
        let refreshed = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
        #expect(refreshed.tokenSource == .identityProvider)
        #expect(refreshed.accessToken != signIn.accessToken)
        let again = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
        #expect(again.tokenSource == .cache && again.accessToken == refreshed.accessToken)
    }

    @Test("After another instance (another process) refreshes the token, a repeated request returns the new token")
    func otherInstanceRefreshes() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let (application, signIn) = try await warmedUp(fixture)
        let other = try fixture.application()
        let forced = try await other.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, forceRefresh: true))
        #expect(forced.tokenSource == .identityProvider && forced.accessToken != signIn.accessToken)
        let hit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
        #expect(hit.tokenSource == .cache)
        #expect(hit.accessToken == forced.accessToken)
    }

    @Test("After the account is removed (here or in another instance), a repeated request needs interaction")
    func removal() async throws {
        for removeHere in [true, false] {
            let fixture = try LocalFixture()
            defer { fixture.stop() }
            let (application, signIn) = try await warmedUp(fixture)
            try (removeHere ? application : fixture.application()).remove(account: signIn.account)
            await #expect(throws: MSALError.self) {
                _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
            }
            do {
                _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
            } catch {
                #expect(error.code == .interactionRequired)
            }
        }
    }

    @Test("A forced refresh or a claims request is never answered from the kept answers")
    func forceAndClaims() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let (application, signIn) = try await warmedUp(fixture)
        let forced = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, forceRefresh: true))
        #expect(forced.tokenSource == .identityProvider)
        var withClaims = SilentTokenParameters(scopes: Self.scopes, account: signIn.account)
        withClaims.claims = #"{"access_token":{"acrs":{"essential":true,"value":"c1"}}}"#
        let claims = try await application.acquireTokenSilent(with: withClaims)
        #expect(claims.tokenSource == .identityProvider)
        #expect(claims.accessToken != forced.accessToken)
    }

    @Test("Requests that differ in scopes, their order or case, or authority are kept apart and each answered right")
    func keysKeptApart() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application, scopes: ["api://demo/Files.Read", "api://demo/Files.Write"])
        let tenant = try #require(signIn.account.homeAccountID?.tenantID)
        let atTenant = try Authority(fixture.provider.authority(tenant: tenant), type: .aad)
        let requests: [([String], Authority?)] = [
            (["api://demo/Files.Read"], nil), (["api://demo/Files.Write"], nil),
            (["api://demo/Files.Read", "api://demo/Files.Write"], nil), (["API://demo/Files.Write", "api://demo/Files.Read"], nil),
            (["api://demo/Files.Read"], atTenant),
        ]
        for _ in 0..<3 {
            for (scopes, authority) in requests {
                let hit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: signIn.account, authority: authority))
                #expect(hit.tokenSource == .cache && hit.accessToken == signIn.accessToken)
                #expect(hit.tenantID == tenant)
                #expect(hit.authority.tenant?.segment == tenant)
            }
        }
        // A scope the token does not hold is never served from another request's answer.
        let other = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Mail.Read"], account: signIn.account))
        #expect(other.tokenSource == .identityProvider)
        #expect(other.scopes.map { $0.lowercased() }.contains("api://demo/mail.read"))
    }
}
