import Foundation
@testable import MSAL
import MSALCache
import MSALCacheSQLite
import MSALCore
import MSALTestSupport
import Testing

@Suite("An account is used as given only by the instance that assembled it, at the revision it was assembled at")
struct AccountOriginTests {
    static let scopes = ["api://demo/Files.Read"]

    /// Changes the store at `path` the way another process would (app metadata of another client),
    /// so the next lookup of a cache over it reloads and moves to the next revision.
    static func touch(_ path: String, _ count: inout Int) throws {
        count += 1
        try SQLiteTokenCacheStore(path: path).apply(TokenCacheChange(upserts: [
            .appMetadata(AppMetadataEntry(clientID: "touch-\(count)", environment: "elsewhere.example")),
        ]))
    }

    @Test("Another instance whose cache is at the same revision number still answers with its own account")
    func sameRevisionNumberInAnotherInstance() async throws {
        let first = try LocalFixture()
        defer { first.stop() }
        let guestTenant = "99999999-0000-4000-8000-000000000097"
        _ = try first.provider.addGuest(username: LocalIdentityProvider.demoUser.username, tenantID: guestTenant)
        let application = try first.application()
        let signIn = try await first.signIn(application)
        let atGuest = try Authority(first.provider.authority(tenant: guestTenant), type: .aad)
        _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, authority: atGuest))

        let other = try LocalFixture()
        defer { other.stop() }
        let second = try other.application()
        _ = try await other.signIn(second)

        // Bring the two caches to the same revision number, the first one's account assembled at it.
        var current = try #require(try application.allAccounts().first)
        var touches = 0
        while true {
            let origin = try #require(current.origin)
            let secondRevision = try second.cache.revision()
            if secondRevision == origin.revision { break }
            if secondRevision < origin.revision {
                try Self.touch(other.cachePath, &touches)
            } else {
                try Self.touch(first.cachePath, &touches)
                current = try #require(try application.allAccounts().first)
            }
            try #require(touches < 100)
        }
        #expect(current.tenantProfiles.count == 2)
        #expect(current.origin?.application == application.instanceNumber && application.instanceNumber != second.instanceNumber)

        let fromSecond = try await second.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: current))
        #expect(fromSecond.tokenSource == .cache)
        #expect(fromSecond.account.tenantProfiles.map(\.tenantID) == [LocalIdentityProvider.demoUser.tenantID])
        // And the first instance, at that revision, answers with the account as given.
        let fromFirst = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: current))
        #expect(fromFirst.account.tenantProfiles.count == 2)
        #expect(fromFirst.account.origin == current.origin)
    }
}
