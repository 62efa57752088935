import Foundation
import MSAL
import MSALTestSupport
import Testing

/// What a cache hit answers: the account with every tenant profile and its claims, a fresh
/// correlation ID per call, and, after another application instance (another process) changed the
/// cache, the account as the cache holds it now.
@Suite("Silent cache hits")
struct SilentHitTests {
    static let scopes = ["api://demo/Files.Read"]

    @Test("A hit carries the account's profiles and claims, and a new lowercase version 4 UUID as correlation ID per call")
    func hitContents() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        var correlationIDs = Set<String>()
        for _ in 0..<200 {
            let hit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
            #expect(hit.tokenSource == .cache)
            #expect(hit.accessToken == signIn.accessToken)
            #expect(hit.account == signIn.account)
            #expect(hit.account.tenantProfiles.count == 1 && hit.account.tenantProfiles.allSatisfy { $0.claims != nil })
            #expect(hit.idTokenClaims?.objectID == LocalIdentityProvider.demoUser.objectID)
            #expect(hit.idToken == signIn.idToken)
            let id = hit.correlationID
            #expect(UUID(uuidString: id) != nil && id == id.lowercased())
            let characters = Array(id)
            #expect(characters.count == 36 && characters[14] == "4" && "89ab".contains(characters[19]), "\(id)")
            correlationIDs.insert(id)
        }
        #expect(correlationIDs.count == 200)
        // A correlation ID the caller passes is used as given.
        let mine = UUID()
        let hit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, correlationID: mine))
        #expect(hit.correlationID == mine.uuidString.lowercased())
    }

    @Test("After another instance adds a guest profile to the cache, a hit in this one returns the account with it")
    func accountFollowsTheCache() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let guestTenant = "99999999-0000-4000-8000-000000000099"
        let guestObjectID = try fixture.provider.addGuest(username: LocalIdentityProvider.demoUser.username, tenantID: guestTenant)
        let first = try fixture.application()
        let signIn = try await fixture.signIn(first)
        let before = try await first.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
        #expect(before.account.tenantProfiles.map(\.tenantID) == [LocalIdentityProvider.demoUser.tenantID])

        // A second instance on the same SQLite file (what another process has) signs in to the guest tenant.
        let second = try fixture.application()
        let atGuest = try Authority(fixture.provider.authority(tenant: guestTenant), type: .aad)
        let guest = try await second.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, authority: atGuest))
        #expect(guest.tokenSource == .identityProvider)

        let after = try await first.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
        #expect(after.tokenSource == .cache)
        #expect(Set(after.account.tenantProfiles.map(\.tenantID)) == [LocalIdentityProvider.demoUser.tenantID, guestTenant])
        #expect(after.account.tenantProfiles.first { $0.tenantID == guestTenant }?.identifier == guestObjectID)
        #expect(after.account.tenantProfiles.allSatisfy { $0.claims != nil })
    }
}
