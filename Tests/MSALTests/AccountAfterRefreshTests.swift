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

    static let guestTenant = "99999999-0000-4000-8000-000000000098"

    /// Every field of `account`, byte for byte (`Account`'s `==` compares identifiers only, and
    /// `String`'s `==` canonical equivalence), against the account a new instance (another process)
    /// assembles from the same file; with `current`, also stamped with `application`'s revision and
    /// holding the token partitions of that state.
    static func expectIdentical(
        _ account: Account, _ fixture: LocalFixture, _ application: PublicClientApplication, current: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let fresh = try #require(
            try fixture.application().allAccounts().first { $0.identifier == account.identifier }, sourceLocation: sourceLocation)
        #expect(Array(account.identifier.utf8) == Array(fresh.identifier.utf8), sourceLocation: sourceLocation)
        #expect(account.username.map { Array($0.utf8) } == fresh.username.map { Array($0.utf8) }, "username bytes", sourceLocation: sourceLocation)
        #expect(Array(account.environment.utf8) == Array(fresh.environment.utf8), sourceLocation: sourceLocation)
        #expect(account.tenantProfiles.count == fresh.tenantProfiles.count, sourceLocation: sourceLocation)
        for (mine, theirs) in zip(account.tenantProfiles, fresh.tenantProfiles) {
            #expect(Array(mine.identifier.utf8) == Array(theirs.identifier.utf8), sourceLocation: sourceLocation)
            #expect(Array(mine.tenantID.utf8) == Array(theirs.tenantID.utf8), sourceLocation: sourceLocation)
            #expect(Array(mine.environment.utf8) == Array(theirs.environment.utf8), sourceLocation: sourceLocation)
            #expect(mine.isHomeTenant == theirs.isHomeTenant, sourceLocation: sourceLocation)
            #expect(mine.claims?.rawValue == theirs.claims?.rawValue, sourceLocation: sourceLocation)
        }
        guard current else { return }
        let revision = application.cache.lastSeenRevision()
        #expect(account.origin?.revision == revision, sourceLocation: sourceLocation)
        let partitions = try #require(account.tokenPartitions as? AccountTokenPartitions, sourceLocation: sourceLocation)
        #expect(partitions.revision == revision, sourceLocation: sourceLocation)
        let now = try application.cache.tokenPartitions(homeAccountID: account.identifier, environment: account.environment)
        #expect(partitions.count == now.count, sourceLocation: sourceLocation)
    }

    /// The demo user signed in to its home tenant and, silently, to a guest tenant: two profiles.
    struct TwoTenants {
        let fixture: LocalFixture
        let application: PublicClientApplication
        let signIn: AuthenticationResult
        let home: Authority
        let guest: Authority

        init() async throws {
            fixture = try LocalFixture()
            _ = try fixture.provider.addGuest(username: LocalIdentityProvider.demoUser.username, tenantID: AccountAfterRefreshTests.guestTenant)
            application = try fixture.application()
            signIn = try await fixture.signIn(application)
            home = try Authority(fixture.provider.authority(tenant: LocalIdentityProvider.demoUser.tenantID), type: .aad)
            guest = try Authority(fixture.provider.authority(tenant: AccountAfterRefreshTests.guestTenant), type: .aad)
            _ = try await application.acquireTokenSilent(
                with: SilentTokenParameters(scopes: AccountAfterRefreshTests.scopes, account: signIn.account, authority: guest))
        }
    }

    @Test("Refreshes in the home and a guest tenant: each result's account has that tenant's new ID token, the other profile as it was, and is current")
    func refreshesInTwoTenants() async throws {
        let setup = try await TwoTenants()
        let (fixture, application, home, guest) = (setup.fixture, setup.application, setup.home, setup.guest)
        defer { fixture.stop() }
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
            // What a new instance (another process) assembles from the store; current for this cache.
            try Self.expectIdentical(account, fixture, application)
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
        try Self.expectIdentical(result.account, fixture, application)
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
        try Self.expectIdentical(result.account, fixture, application)
    }

    @Test("Concurrent refreshes of different scopes in two tenants: each result has its tenant's ID token, and the kept account is the assembled one")
    func concurrentRefreshes() async throws {
        let setup = try await TwoTenants()
        let (fixture, application, home, guest) = (setup.fixture, setup.application, setup.home, setup.guest)
        defer { fixture.stop() }
        let account = try #require(try application.allAccounts().first)
        for round in 0..<5 {
            fixture.clock.advance(by: 60)
            let results = try await withThrowingTaskGroup(of: AuthenticationResult.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        var parameters = SilentTokenParameters(
                            scopes: ["api://demo/Scope\(index % 4)"], account: account, authority: index.isMultiple(of: 2) ? home : guest)
                        parameters.forceRefresh = true
                        return try await application.acquireTokenSilent(with: parameters)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for result in results {
                let profile = try #require(result.account.tenantProfiles.first { $0.tenantID == result.tenantID })
                #expect(profile.claims?.rawValue == result.idToken, "round \(round)")
            }
            try Self.expectIdentical(try #require(try application.allAccounts().first), fixture, application)
        }
    }

    @Test("A sign-out racing refreshes leaves no stale kept account")
    func signOutRacingRefreshes() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        for round in 0..<10 {
            let signIn = try await fixture.signIn(application)
            fixture.clock.advance(by: 60)
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        var parameters = SilentTokenParameters(scopes: ["api://demo/Scope\(index)"], account: signIn.account)
                        parameters.forceRefresh = true
                        _ = try? await application.acquireTokenSilent(with: parameters)
                    }
                }
                group.addTask { try? application.remove(account: signIn.account) }
            }
            let kept = try application.allAccounts()
            #expect(kept.count == (try fixture.application().allAccounts()).count, "round \(round)")
            if let account = kept.first { try Self.expectIdentical(account, fixture, application) }
        }
    }

    @Test("A username the stored entry spells in another Unicode normalization (as another MSAL may write it) is replaced by the response's, bytes included")
    func usernameNormalization() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let composed = "jos\u{E9}@contoso.example", decomposed = "jose\u{301}@contoso.example"
        fixture.provider.addUser(LocalIdentityProvider.User(
            username: composed, objectID: "3d6e8f0a-3b5c-4d7e-8f9a-1b3c5d7e9f03", tenantID: LocalIdentityProvider.demoTenantID, name: "Jose"))
        let application = try fixture.application()
        let provider = fixture.provider
        let signIn = try await application.acquireToken(with: DeviceCodeParameters(scopes: Self.scopes)) { info in
            try provider.approveDeviceCode(userCode: info.userCode, as: composed)
        }
        var entry = try #require(try application.cache.accountEntries(
            homeAccountID: signIn.account.identifier, environment: signIn.account.environment).first)
        entry.username = decomposed
        try application.cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: entry, appMetadata: nil)
        let kept = try #require(try application.allAccounts().first)
        #expect(kept.username.map { Array($0.utf8) } == Array(decomposed.utf8))

        fixture.clock.advance(by: 60)
        var parameters = SilentTokenParameters(scopes: Self.scopes, account: kept)
        parameters.forceRefresh = true
        let result = try await application.acquireTokenSilent(with: parameters)
        #expect(result.account.username.map { Array($0.utf8) } == Array(composed.utf8))
        try Self.expectIdentical(result.account, fixture, application)
    }

    @Test("Entries another MSAL wrote (a guest realm in capitals, a home entry with extra fields): each refresh's account is the assembled one")
    func realmCaseAndExtraFields() async throws {
        let setup = try await TwoTenants()
        let (fixture, application, home, guest) = (setup.fixture, setup.application, setup.home, setup.guest)
        defer { fixture.stop() }
        let signIn = setup.signIn
        let entries = try application.cache.accountEntries(homeAccountID: signIn.account.identifier, environment: signIn.account.environment)
        var guestEntry = try #require(entries.first { $0.realm == Self.guestTenant })
        guestEntry.realm = Self.guestTenant.uppercased()
        var homeEntry = try #require(entries.first { $0.realm != Self.guestTenant })
        homeEntry.additionalFields = ["x_other_msal": .string("value")]
        try application.cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: guestEntry, appMetadata: nil)
        try application.cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: homeEntry, appMetadata: nil)
        var account = try #require(try application.allAccounts().first)
        for authority in [guest, home, guest, home, guest] {
            fixture.clock.advance(by: 60)
            var parameters = SilentTokenParameters(scopes: Self.scopes, account: account, authority: authority)
            parameters.forceRefresh = true
            account = try await application.acquireTokenSilent(with: parameters).account
            try Self.expectIdentical(account, fixture, application)
        }
    }
}
