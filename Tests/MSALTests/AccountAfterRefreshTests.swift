import Foundation
@testable import MSAL
import MSALCache
import MSALCacheSQLite
import MSALCore
import MSALTestSupport
import Synchronization
import Testing

@Suite("The account a token response's result carries is the account the cache holds after the save")
struct AccountAfterRefreshTests {
    static let scopes = ["api://demo/Files.Read"]

    /// The fields an app sees, compared in full (`Account`'s `==` compares identifiers only).
    static func expectSame(_ account: Account, _ assembled: Account, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(account.identifier == assembled.identifier, sourceLocation: sourceLocation)
        #expect(account.username == assembled.username, sourceLocation: sourceLocation)
        #expect(account.environment == assembled.environment, sourceLocation: sourceLocation)
        #expect(account.tenantProfiles == assembled.tenantProfiles, sourceLocation: sourceLocation)
    }

    @Test("Refreshes in the home and a guest tenant: each result's account has that tenant's new ID token, the other profile as it was, and is current")
    func refreshesInTwoTenants() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let guestTenant = "99999999-0000-4000-8000-000000000098"
        _ = try fixture.provider.addGuest(username: LocalIdentityProvider.demoUser.username, tenantID: guestTenant)
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let home = try Authority(fixture.provider.authority(tenant: LocalIdentityProvider.demoUser.tenantID), type: .aad)
        let guest = try Authority(fixture.provider.authority(tenant: guestTenant), type: .aad)
        _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, authority: guest))
        var account = try #require(try application.allAccounts().first)
        #expect(account.tenantProfiles.count == 2)

        for (round, authority) in [home, guest, home, guest, guest].enumerated() {
            fixture.clock.advance(by: 60)  // a new iat, so a new ID token each time
            var parameters = SilentTokenParameters(scopes: Self.scopes, account: account, authority: authority)
            parameters.forceRefresh = true
            let before = account
            let result = try await application.acquireTokenSilent(with: parameters)
            #expect(result.tokenSource == .identityProvider)
            account = result.account

            let tenant = result.tenantID
            let refreshed = try #require(account.tenantProfiles.first { $0.tenantID == tenant })
            #expect(refreshed.claims?.rawValue == result.idToken, "round \(round): the refreshed tenant's profile has the new ID token")
            #expect(before.tenantProfiles.first { $0.tenantID == tenant }?.claims?.rawValue != result.idToken)
            #expect(
                account.tenantProfiles.filter { $0.tenantID != tenant } == before.tenantProfiles.filter { $0.tenantID != tenant },
                "round \(round): the other profile is unchanged")
            // What a new instance (another process) assembles from the store.
            let assembled = try #require(try fixture.application().allAccounts().first)
            Self.expectSame(account, assembled)
            // Current for this cache: assembled at the revision the save made.
            #expect(account.origin?.revision == application.cache.lastSeenRevision())
            #expect(try application.allAccounts().first.map { $0.tenantProfiles } == account.tenantProfiles)
        }
    }

    @Test("An account entry the response changes (the username) is read again, not carried over")
    func changedAccountEntry() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        // The cached entry says another username (as an older sign-in would have written).
        let entry = try #require(try application.cache.accountEntries(
            homeAccountID: signIn.account.identifier, environment: signIn.account.environment).first)
        var renamed = entry
        renamed.username = "before.rename@contoso.example"
        try application.cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: renamed, appMetadata: nil)
        let stale = try #require(try application.allAccounts().first)
        #expect(stale.username == "before.rename@contoso.example")

        var parameters = SilentTokenParameters(scopes: Self.scopes, account: stale)
        parameters.forceRefresh = true
        let result = try await application.acquireTokenSilent(with: parameters)
        #expect(result.account.username == LocalIdentityProvider.demoUser.username)
        Self.expectSame(result.account, try #require(try fixture.application().allAccounts().first))
    }

    @Test("When another writer changes the store while the refresh is at the provider, the result's account has what it wrote too")
    func anotherWriterDuringRefresh() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        #expect(try application.allAccounts().first?.tenantProfiles.count == 1)
        // While the provider answers the refresh, another process writes the user's entry in a
        // guest tenant.
        let guestEntry = AccountEntry(
            homeAccountID: signIn.account.identifier, environment: signIn.account.environment,
            realm: "99999999-0000-4000-8000-000000000099", localAccountID: "guest-object-id",
            username: LocalIdentityProvider.demoUser.username)
        let cachePath = fixture.cachePath
        let written = Mutex(false)
        fixture.provider.onStateChange {
            guard !written.withLock({ $0 }) else { return }
            try? SQLiteTokenCacheStore(path: cachePath).apply(TokenCacheChange(upserts: [.account(guestEntry)]))
            written.withLock { $0 = true }
        }

        fixture.clock.advance(by: 60)
        var parameters = SilentTokenParameters(scopes: Self.scopes, account: signIn.account)
        parameters.forceRefresh = true
        let result = try await application.acquireTokenSilent(with: parameters)
        #expect(written.withLock { $0 })
        #expect(result.account.tenantProfiles.map(\.tenantID).contains(guestEntry.realm))
        Self.expectSame(result.account, try #require(try fixture.application().allAccounts().first))
    }
}
