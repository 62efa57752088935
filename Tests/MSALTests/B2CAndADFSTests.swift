import Foundation
import MSAL
import MSALCacheSQLite
import MSALTestSupport
import Testing

/// Azure AD B2C and AD FS authorities end to end against the local provider: sign-in, the cache's
/// account identity and realm, silent requests from the cache and by refresh.
@Suite("B2C and AD FS authorities")
struct B2CAndADFSTests {
    static let scopes = ["api://demo/Files.Read"]
    static let signInPolicy = "B2C_1_SignIn"
    static let editPolicy = "B2C_1_EditProfile"
    static let user = LocalIdentityProvider.demoUser

    /// An app on the fixture's cache whose default authority is `authority`.
    private func application(_ fixture: LocalFixture, authority: Authority) throws -> PublicClientApplication {
        var configuration = PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID, authority: authority,
            cacheStore: try SQLiteTokenCacheStore(path: fixture.cachePath))
        configuration.clock = fixture.clock
        let clock = fixture.clock
        configuration.sleep = { seconds in clock.advance(by: max(seconds, 1)) }
        return try PublicClientApplication(configuration: configuration)
    }

    private func b2cAuthority(_ fixture: LocalFixture, policy: String) throws -> Authority {
        try Authority(fixture.provider.b2cAuthority(policy: policy), knownAuthorities: ["127.0.0.1:\(fixture.provider.baseURL.port!)"])
    }

    private func b2cFixture() throws -> LocalFixture {
        let fixture = try LocalFixture()
        fixture.provider.addB2CPolicy(Self.signInPolicy)
        fixture.provider.addB2CPolicy(Self.editPolicy)
        return fixture
    }

    private func interactive(_ application: PublicClientApplication, authority: Authority? = nil) async throws(MSALError) -> AuthenticationResult {
        try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, authority: authority, browser: followingBrowser()))
    }

    @Test("B2C interactive sign-in: client_info asked, account <oid>-<policy>.<tenant ID>, realm the tenant, silent from cache and by refresh")
    func b2cSignInAndSilent() async throws {
        let fixture = try b2cFixture()
        defer { fixture.stop() }
        let authority = try b2cAuthority(fixture, policy: Self.signInPolicy)
        #expect(authority.type == .b2c)
        let application = try application(fixture, authority: authority)

        let result = try await interactive(application)
        let tenantID = LocalIdentityProvider.b2cTenant.id
        #expect(result.account.identifier == "\(Self.user.objectID)-b2c_1_signin.\(tenantID)")
        #expect(result.tenantID == tenantID)
        #expect(result.idTokenClaims?.all["tfp"]?.stringValue == Self.signInPolicy)
        #expect(fixture.provider.authorizeRequests.last?.formParameters["client_info"] == "1")
        #expect(fixture.provider.authorizeRequests.last?.path.hasPrefix("/tfp/") == true)
        #expect(fixture.provider.instanceDiscoveryRequestCount == 0)

        let account = try #require(try application.allAccounts().first)
        #expect(account.identifier == result.account.identifier)
        #expect(account.tenantProfiles.map(\.tenantID) == [tenantID])

        let cached = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account))
        #expect(cached.tokenSource == .cache)
        #expect(cached.accessToken == result.accessToken)

        let before = fixture.provider.tokenRequests.count
        let refreshed = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account, forceRefresh: true))
        #expect(refreshed.tokenSource == .identityProvider)
        #expect(refreshed.account.identifier == account.identifier)
        #expect(refreshed.accessToken != result.accessToken)
        let refresh = try #require(fixture.provider.tokenRequests.last)
        #expect(fixture.provider.tokenRequests.count == before + 1)
        #expect(refresh.grantType == "refresh_token")
        #expect(refresh.formParameters["client_info"] == "1")
        #expect(refresh.path == "/tfp/\(LocalIdentityProvider.b2cTenant.name)/\(Self.signInPolicy)/oauth2/v2.0/token")
    }

    @Test("B2C device-code sign-in through the local provider gives the policy's account")
    func b2cDeviceCode() async throws {
        let fixture = try b2cFixture()
        defer { fixture.stop() }
        let application = try application(fixture, authority: try b2cAuthority(fixture, policy: Self.signInPolicy))
        let result = try await fixture.signIn(application, scopes: Self.scopes)
        #expect(result.account.identifier.hasSuffix("-b2c_1_signin.\(LocalIdentityProvider.b2cTenant.id)"))
    }

    @Test("Two B2C policies give two accounts, each served silently from its own tokens")
    func twoPolicies() async throws {
        let fixture = try b2cFixture()
        defer { fixture.stop() }
        let signIn = try b2cAuthority(fixture, policy: Self.signInPolicy)
        let edit = try b2cAuthority(fixture, policy: Self.editPolicy)
        let application = try application(fixture, authority: signIn)

        let first = try await interactive(application)
        let second = try await interactive(application, authority: edit)
        #expect(first.account.identifier != second.account.identifier)
        #expect(second.account.identifier.hasPrefix("\(Self.user.objectID)-b2c_1_editprofile."))
        #expect(Set(try application.allAccounts().map(\.identifier)) == [first.account.identifier, second.account.identifier])

        let silentFirst = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: first.account))
        #expect(silentFirst.tokenSource == .cache)
        #expect(silentFirst.accessToken == first.accessToken)
        let silentSecond = try await application.acquireTokenSilent(
            with: SilentTokenParameters(scopes: Self.scopes, account: second.account, authority: edit))
        #expect(silentSecond.tokenSource == .cache)
        #expect(silentSecond.accessToken == second.accessToken)
    }

    @Test("A B2C authority whose host is not in knownAuthorities is refused before any request")
    func b2cNotKnown() throws {
        let fixture = try b2cFixture()
        defer { fixture.stop() }
        do {
            _ = try Authority(fixture.provider.b2cAuthority(policy: Self.signInPolicy))
            Issue.record("expected invalidAuthority")
        } catch {
            #expect(error.internalCode == .invalidAuthority)
            #expect(error.message.contains("knownAuthorities"))
        }
        #expect(fixture.provider.requests.isEmpty)
    }

    @Test("AD FS device-code sign-in: no client_info, account = sub, realm adfs, silent from cache and by refresh")
    func adfsSignInAndSilent() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let authority = try Authority(fixture.provider.adfsAuthority())
        #expect(authority.type == .adfs)
        let application = try application(fixture, authority: authority)

        let result = try await fixture.signIn(application, scopes: Self.scopes)
        let subject = try #require(result.idTokenClaims?.subject)
        #expect(result.account.identifier == subject)
        #expect(result.account.username == Self.user.username)
        #expect(result.tenantID == "adfs")
        #expect(result.idTokenClaims?.tenantID == nil)
        #expect(fixture.provider.tokenRequests.allSatisfy { $0.formParameters["client_info"] == nil })
        #expect(fixture.provider.tokenRequests.last?.path == "/adfs/oauth2/token/")

        let account = try #require(try application.allAccounts().first)
        #expect(account.identifier == subject)
        let cached = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account))
        #expect(cached.tokenSource == .cache)
        #expect(cached.accessToken == result.accessToken)
        let refreshed = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account, forceRefresh: true))
        #expect(refreshed.tokenSource == .identityProvider)
        #expect(refreshed.account.identifier == subject)
    }
}
