import Foundation
import MSAL
import MSALCache
import MSALTestSupport
import Synchronization
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

    @Test("One scope array asked for again and again: rejected every time when invalid, and answered with the right token after the cache changes")
    func repeatedScopeArrays() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let reserved = ["openid", "api://demo/Files.Read"], blank = ["api://demo/Files.Read", ""]
        for _ in 0..<3 {
            for invalid in [reserved, blank] {
                await #expect(throws: MSALError.internal(.invalidScope, "")) {
                    try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: invalid, account: signIn.account))
                }
            }
        }
        // The same array object, and an equal one, before and after a refresh replaced the token and
        // a token for other scopes was added (the index numbers the new scope).
        let scopes = Self.scopes
        #expect(try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: signIn.account)).accessToken == signIn.accessToken)
        let refreshed = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: signIn.account, forceRefresh: true))
        #expect(refreshed.tokenSource == .identityProvider && refreshed.accessToken != signIn.accessToken)
        let other = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Write"], account: signIn.account))
        #expect(other.tokenSource == .identityProvider)
        for asked in [scopes, ["api://demo/Files.Read"], ["API://demo/files.read"]] {
            let hit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: asked, account: signIn.account))
            #expect(hit.tokenSource == .cache && hit.accessToken == refreshed.accessToken)
        }
        let otherHit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Write"], account: signIn.account))
        #expect(otherHit.tokenSource == .cache && otherHit.accessToken == other.accessToken)
    }

    @Test("An account kept from before a refresh (its tokens as the cache held them then) is answered with the refreshed token, here and after another instance refreshes")
    func keptAccountAfterRefresh() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let kept = try #require(try application.allAccounts().first)
        let parameters = SilentTokenParameters(scopes: Self.scopes, account: kept)
        #expect(try await application.acquireTokenSilent(with: parameters).accessToken == signIn.accessToken)
        let refreshed = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: kept, forceRefresh: true))
        #expect(refreshed.tokenSource == .identityProvider && refreshed.accessToken != signIn.accessToken)
        // Other scopes, so the table of repeated requests does not answer: the lookup itself must.
        let hit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["API://demo/Files.Read"], account: kept))
        #expect(hit.tokenSource == .cache && hit.accessToken == refreshed.accessToken)
        // Another instance (another process) refreshes on the same SQLite file.
        let second = try fixture.application()
        let elsewhere = try await second.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: kept, forceRefresh: true))
        #expect(elsewhere.accessToken != refreshed.accessToken)
        let afterElsewhere = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://DEMO/Files.Read"], account: kept))
        #expect(afterElsewhere.tokenSource == .cache && afterElsewhere.accessToken == elsewhere.accessToken)
    }

    @Test("After remove(account:), the account the app still holds keeps none of the removed tokens")
    func removedAccountHoldsNoToken() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        _ = try await fixture.signIn(application)
        let account = try #require(try application.allAccounts().first)
        let partitions = try #require(account.tokenPartitions as? AccountTokenPartitions)
        #expect(!partitions.isReleased && partitions.count == 1)
        try application.remove(account: account)
        #expect(try application.allAccounts().isEmpty)
        #expect(partitions.isReleased)
        await #expect(throws: MSALError(.interactionRequired, message: "")) {
            try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account))
        }
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

    @Test("An account kept from before a change in this instance, or assembled by another instance, is answered with the account as this cache holds it now")
    func keptAccountIsNotServedStale() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let guestTenant = "99999999-0000-4000-8000-000000000098"
        _ = try fixture.provider.addGuest(username: LocalIdentityProvider.demoUser.username, tenantID: guestTenant)
        let application = try fixture.application()
        _ = try await fixture.signIn(application)
        let kept = try #require(try application.allAccounts().first)
        #expect(kept.tenantProfiles.count == 1)
        // Served as it is while nothing changed.
        let hit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: kept))
        #expect(hit.tokenSource == .cache && hit.account.tenantProfiles.count == 1)

        // This instance adds the guest profile: the kept account is now out of date.
        let atGuest = try Authority(fixture.provider.authority(tenant: guestTenant), type: .aad)
        let guest = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: kept, authority: atGuest))
        #expect(guest.tokenSource == .identityProvider)
        let home = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: kept))
        #expect(home.tokenSource == .cache)
        #expect(Set(home.account.tenantProfiles.map(\.tenantID)) == [LocalIdentityProvider.demoUser.tenantID, guestTenant])
        #expect(home.idTokenClaims?.tenantID == LocalIdentityProvider.demoUser.tenantID)
        let atGuestAgain = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: kept, authority: atGuest))
        #expect(atGuestAgain.tokenSource == .cache && atGuestAgain.idTokenClaims?.tenantID == guestTenant)
        #expect(atGuestAgain.idToken == atGuestAgain.idTokenClaims?.rawValue && atGuestAgain.idToken != home.idToken)

        // A second instance on its own cache holding the home profile only, given the first
        // instance's up-to-date account (two profiles), answers with its own (one).
        let other = try LocalFixture()
        defer { other.stop() }
        let second = try other.application()
        _ = try await other.signIn(second)
        let current = try #require(try application.allAccounts().first)
        #expect(current.tenantProfiles.count == 2)
        let fromSecond = try await second.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: current))
        #expect(fromSecond.tokenSource == .cache)
        #expect(fromSecond.account.tenantProfiles.map(\.tenantID) == [LocalIdentityProvider.demoUser.tenantID])
    }

    @MainActor
    @Test("Called on the main actor, a cache hit is answered there without suspending; after another instance changed the store it is read again off the main actor; a refresh leaves it and comes back")
    func hitOnCallersExecutor() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let parameters = SilentTokenParameters(scopes: Self.scopes, account: signIn.account)
        let other = try fixture.application()  // another process on the same cache file
        let otherAccount = try #require(try other.allAccounts().first)
        var latest = signIn.accessToken
        for round in 0..<6 {
            let storeChanged = round % 2 == 1
            if storeChanged {
                // The store changes under the first instance: its next hit reads it again, on the
                // global executor (a reload of a large store must not hold the main actor).
                let refreshed = try await other.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: otherAccount, forceRefresh: true))
                #expect(refreshed.tokenSource == .identityProvider)
                latest = refreshed.accessToken
            }
            // A task queued on the main actor runs only when the main actor is free: not during a
            // call that stays on it without suspending.
            let ranMeanwhile = MainActorFlag()
            let queued = Task { @MainActor in ranMeanwhile.value = true }
            let hit = try await application.acquireTokenSilent(with: parameters)
            #expect(hit.tokenSource == .cache && hit.accessToken == latest)
            #expect(ranMeanwhile.value == storeChanged, "round \(round): the main actor \(ranMeanwhile.value ? "ran" : "did not run") another task during the hit")
            await queued.value
            #expect(ranMeanwhile.value)
        }
        // A refresh suspends for the network and resumes here.
        let ranMeanwhile = MainActorFlag()
        let queued = Task { @MainActor in ranMeanwhile.value = true }
        let refreshed = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, forceRefresh: true))
        MainActor.assertIsolated()
        #expect(refreshed.tokenSource == .identityProvider)
        #expect(ranMeanwhile.value)
        await queued.value
    }

    @MainActor
    @Test("Called on the main actor while another task's cache write is under way, a hit waits for it off the main actor and answers with the written token")
    func hitDuringWriteLeavesMainActor() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let store = SlowWriteStore()
        var configuration = PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID, authority: fixture.authority, cacheStore: store)
        configuration.clock = fixture.clock
        let application = try PublicClientApplication(configuration: configuration)
        let signIn = try await fixture.signIn(application)
        let parameters = SilentTokenParameters(scopes: Self.scopes, account: signIn.account)
        #expect(try await application.acquireTokenSilent(with: parameters).tokenSource == .cache)

        store.slowNextWrite()
        let account = signIn.account
        let refresh = Task.detached {
            try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account, forceRefresh: true))
        }
        while !store.isWriting { try await Task.sleep(for: .milliseconds(1)) }
        let ranMeanwhile = MainActorFlag()
        let queued = Task { @MainActor in ranMeanwhile.value = true }
        let hit = try await application.acquireTokenSilent(with: parameters)
        #expect(ranMeanwhile.value, "the hit held the main actor while it waited for the write")
        let refreshed = try await refresh.value
        #expect(refreshed.tokenSource == .identityProvider)
        #expect(hit.tokenSource == .cache && hit.accessToken == refreshed.accessToken)
        await queued.value
    }
}

/// An in-memory store whose next write, once asked, says it started and then takes 300 ms (as a
/// large file or the keyring takes), holding the cache's lock meanwhile.
private final class SlowWriteStore: TokenCacheStore {
    let accessGroup = TokenCacheAccessGroup.default
    private let inner = InMemoryTokenCacheStore()
    private let slow = Atomic<Bool>(false)
    private let writing = Atomic<Bool>(false)

    /// Makes the next write slow.
    func slowNextWrite() { slow.store(true, ordering: .sequentiallyConsistent) }
    /// Whether the slow write has started (and not yet finished).
    var isWriting: Bool { writing.load(ordering: .sequentiallyConsistent) }

    func readAll() throws(MSALError) -> TokenCacheContents { try inner.readAll() }
    func changeStamp() throws(MSALError) -> UInt64 { try inner.changeStamp() }
    func apply(_ change: TokenCacheChange) throws(MSALError) {
        if slow.exchange(false, ordering: .sequentiallyConsistent) {
            writing.store(true, ordering: .sequentiallyConsistent)
            usleep(300_000)
            defer { writing.store(false, ordering: .sequentiallyConsistent) }
            try inner.apply(change)
            return
        }
        try inner.apply(change)
    }
}

/// A flag isolated to the main actor, set by a task queued there.
@MainActor
private final class MainActorFlag {
    var value = false
}
