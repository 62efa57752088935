import Foundation
import MSAL
import MSALCacheSQLite
import MSALTestSupport
import Testing

/// Entra behaviours apps rely on, end to end against the local provider: family refresh tokens,
/// guest tenants, proactive refresh, extended lifetime, declined scopes.
@Suite("Entra fidelity: FOCI, guests, proactive refresh, extended lifetime, declined scopes")
struct EntraFidelityTests {
    static let scopes = ["api://demo/Files.Read"]
    static let clientA = "a1a1a1a1-0000-4000-8000-00000000000a"
    static let clientB = "b2b2b2b2-0000-4000-8000-00000000000b"
    static let clientC = "c3c3c3c3-0000-4000-8000-00000000000c"

    private func forced(_ application: PublicClientApplication, _ account: Account) async throws(MSALError) -> AuthenticationResult {
        try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account, forceRefresh: true))
    }

    @Test("A family refresh token signs a second app of the family in silently (shared cache)")
    func familyRefreshToken() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        fixture.provider.addFamilyClient(Self.clientA)
        fixture.provider.addFamilyClient(Self.clientB)
        let appA = try fixture.application(clientID: Self.clientA)
        let signIn = try await fixture.signIn(appA)

        let appB = try fixture.application(clientID: Self.clientB)
        let account = try #require(try appB.allAccounts().first, "the family refresh token makes the account visible to app B")
        #expect(account == signIn.account)
        let result = try await appB.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account))
        #expect(result.tokenSource == .identityProvider)
        let request = try #require(fixture.provider.tokenRequests.last)
        #expect(request.formParameters["client_id"] == Self.clientB)
        #expect(request.formParameters["grant_type"] == "refresh_token")
    }

    @Test("client_mismatch: an app outside the family stops using the family token and needs its own")
    func clientMismatch() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        fixture.provider.addFamilyClient(Self.clientA)
        let signIn = try await fixture.signIn(try fixture.application(clientID: Self.clientA))

        let appC = try fixture.application(clientID: Self.clientC)
        do {
            _ = try await appC.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
            Issue.record("expected interactionRequired")
        } catch {
            #expect(error.code == .interactionRequired)
            #expect(error.subError == "client_mismatch")
        }
        // Now known to be outside the family: the account is not offered to app C any more.
        #expect(try appC.allAccounts().isEmpty)
        // With its own refresh token app C refreshes with that one alone.
        let own = try await fixture.signIn(appC)
        let before = fixture.provider.tokenRequests.count
        #expect(try await forced(appC, own.account).tokenSource == .identityProvider)
        #expect(fixture.provider.tokenRequests.count == before + 1)
    }

    @Test("A guest tenant gets its own tenant profile and tokens; the refresh token is shared")
    func guestTenant() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let guestTenant = "99999999-0000-4000-8000-000000000099"
        let guestObjectID = try fixture.provider.addGuest(username: LocalIdentityProvider.demoUser.username, tenantID: guestTenant)
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let atGuest = try Authority(fixture.provider.authority(tenant: guestTenant), type: .aad)

        let guest = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, authority: atGuest))
        #expect(guest.tokenSource == .identityProvider)
        #expect(guest.tenantID == guestTenant)
        #expect(guest.idTokenClaims?.objectID == guestObjectID)
        #expect(guest.account.identifier == signIn.account.identifier)
        let profiles = guest.account.tenantProfiles
        #expect(Set(profiles.map(\.tenantID)) == [LocalIdentityProvider.demoUser.tenantID, guestTenant])
        #expect(profiles.first { $0.tenantID == guestTenant }?.isHomeTenant == false)
        #expect(profiles.first { $0.tenantID == guestTenant }?.identifier == guestObjectID)

        // Each tenant's token is served from the cache for its own tenant.
        let home = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
        #expect(home.tokenSource == .cache)
        #expect(home.tenantID == LocalIdentityProvider.demoUser.tenantID)
        let guestAgain = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, authority: atGuest))
        #expect(guestAgain.tokenSource == .cache)
        #expect(guestAgain.accessToken == guest.accessToken)
    }

    @Test("Past refresh_in a silent call refreshes; if that fails for any reason the valid token is served")
    func proactiveRefresh() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        fixture.provider.refreshIn = 600
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let parameters = SilentTokenParameters(scopes: Self.scopes, account: signIn.account)

        fixture.clock.advance(by: 300)
        #expect(try await application.acquireTokenSilent(with: parameters).tokenSource == .cache)
        fixture.clock.advance(by: 301)
        let refreshed = try await application.acquireTokenSilent(with: parameters)
        #expect(refreshed.tokenSource == .identityProvider)

        fixture.clock.advance(by: 601)
        fixture.provider.failNextTokenRequests(with: .oauthError(error: "invalid_grant", subError: "basic_action"))
        let fallback = try await application.acquireTokenSilent(with: parameters)
        #expect(fallback.tokenSource == .cache)
        #expect(fallback.accessToken == refreshed.accessToken)
    }

    @Test("Extended lifetime: during an outage an expired token is served until ext_expires_on, when enabled")
    func extendedLifetime() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        fixture.provider.extendedExpiresIn = 7200
        var configuration = PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID, authority: fixture.authority,
            cacheStore: try SQLiteTokenCacheStore(path: fixture.cachePath))
        configuration.clock = fixture.clock
        let clock = fixture.clock
        configuration.sleep = { seconds in clock.advance(by: max(seconds, 1)) }
        configuration.extendedLifetimeEnabled = true
        let application = try PublicClientApplication(configuration: configuration)
        let signIn = try await fixture.signIn(application)
        let parameters = SilentTokenParameters(scopes: Self.scopes, account: signIn.account)

        fixture.clock.advance(by: 3600 + 10)
        fixture.provider.failNextTokenRequests(with: .serverError(status: 503), count: 2)
        let served = try await application.acquireTokenSilent(with: parameters)
        #expect(served.tokenSource == .cache)
        #expect(served.isExtendedLifetimeToken)
        #expect(served.accessToken == signIn.accessToken)

        // The same outage without the option is an error.
        let strict = try fixture.application()
        fixture.clock.advance(by: 61)
        fixture.provider.failNextTokenRequests(with: .serverError(status: 503), count: 2)
        do {
            _ = try await strict.acquireTokenSilent(with: parameters)
            Issue.record("expected serverError")
        } catch {
            #expect(error.code == .serverError)
            #expect(error.httpStatusCode == 503)
        }
    }

    @Test("Declined scopes: serverDeclinedScopes with both lists; the token for the granted ones is cached")
    func declinedScopes() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        fixture.provider.declineScopes(["api://demo/Files.Write"])
        let application = try fixture.application()
        let provider = fixture.provider
        do {
            _ = try await application.acquireToken(with: DeviceCodeParameters(scopes: ["api://demo/Files.Read", "api://demo/Files.Write"])) { info in
                try provider.approveDeviceCode(userCode: info.userCode, as: LocalIdentityProvider.demoUser.username)
            }
            Issue.record("expected serverDeclinedScopes")
        } catch {
            #expect(error.code == .serverDeclinedScopes)
            #expect(error.declinedScopes == ["api://demo/Files.Write"])
            #expect(error.grantedScopes == ["api://demo/Files.Read"])
            let partial = error.declinedScopesResult
            #expect(partial?.scopes == ["api://demo/Files.Read"])
            #expect(partial?.tokenSource == .identityProvider)
            #expect(partial?.account.username == LocalIdentityProvider.demoUser.username)
        }
        let account = try #require(try application.allAccounts().first)
        let cached = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: account))
        #expect(cached.tokenSource == .cache)
    }
}
