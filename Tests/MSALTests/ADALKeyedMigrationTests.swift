import Foundation
import MSAL
import MSALCache
import MSALCacheEncryptedFile
import MSALCacheKeyring
import MSALCacheSQLite
import MSALCore
import MSALTestSupport
import Testing

/// ADAL's keyed items kept beside the MSAL cache in the app's own store (as MSAL for iOS/macOS finds
/// them in its keychain access group), migrated through the facade against the local provider, on
/// real files of each file-backed store and, in a throwaway keyring session, the Secret Service.
@Suite("Migration from ADAL: keyed items in the app's own store")
struct ADALKeyedMigrationTests {
    enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case sqlite, encryptedFile, jsonFile, keyring
        var testDescription: String { rawValue }

        /// Every backend this run can use (the keyring only in a throwaway keyring session).
        static var available: [Backend] { allCases.filter { $0 != .keyring || ThrowawayKeyring.inUse } }

        func cacheBackend(in directory: TemporaryDirectory) -> TokenCacheBackend {
            switch self {
            case .sqlite: .sqlite(path: directory.path("cache.sqlite"))
            case .encryptedFile: .encryptedFile(path: directory.path("cache.bin"), key: .keyFile(path: directory.path("cache.key")))
            case .jsonFile: .jsonFile(path: directory.path("cache.json"))
            case .keyring: .keyring
            }
        }
    }

    static let scopes = ["api://demo/Files.Read"]
    static var aliceID: String { "\(ADALFixture.alice.objectID).\(ADALFixture.alice.tenantID)" }

    /// The provider, a directory for the store, and the keyed items an ADAL-era app left in it:
    /// Alice at home (management) and as a guest in Fabrikam (graph), Bob at home.
    final class Fixture: Sendable {
        let provider: LocalIdentityProvider
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        let directory = TemporaryDirectory()
        let backend: Backend
        /// The default group on files; a group of its own in the shared keyring session.
        let accessGroup: String
        let aliceHome: LocalIdentityProvider.LegacyTokens
        let aliceGuest: LocalIdentityProvider.LegacyTokens
        let bobHome: LocalIdentityProvider.LegacyTokens
        let items: [ADALKeyedItem]
        let log = LogCapture()

        init(_ backend: Backend, extraItems: (_ aliceHome: LocalIdentityProvider.LegacyTokens) throws -> [ADALKeyedItem] = { _ in [] }) throws {
            self.backend = backend
            accessGroup = backend == .keyring
                ? "org.swift-msal.tests.keyed-\(UUID().uuidString.prefix(8).lowercased())" : TokenCacheAccessGroup.default
            provider = LocalIdentityProvider(clock: clock)
            provider.addUser(ADALFixture.bob)
            try provider.addGuest(username: ADALFixture.alice.username, tenantID: ADALFixture.fabrikam)
            try provider.start()
            let client = LocalIdentityProvider.demoClientID
            aliceHome = try provider.issueLegacyRefreshToken(username: ADALFixture.alice.username, clientID: client, resource: ADALFixture.resource)
            aliceGuest = try provider.issueLegacyRefreshToken(
                username: ADALFixture.alice.username, clientID: client, resource: ADALFixture.graph, tenant: ADALFixture.fabrikam)
            bobHome = try provider.issueLegacyRefreshToken(username: ADALFixture.bob.username, clientID: client, resource: ADALFixture.resource)
            var items = try [aliceHome, aliceGuest, bobHome].map { try $0.adalKeyedItem() }
            // Two hours on: the ADAL access tokens have expired, their refresh tokens live on.
            clock.advance(by: 7200)
            items += try extraItems(aliceHome)
            self.items = items
            let store = try keyedStore()
            for item in items { try store.setADALKeyedItem(item) }
        }

        /// The store the app opens, as a keyed-item store (a second instance on the same file).
        func keyedStore() throws -> any ADALKeyedItemStore {
            let store = try backend.cacheBackend(in: directory).makeStore(accessGroup: accessGroup, logger: .none)
            return try #require(store as? any ADALKeyedItemStore)
        }

        func application(readsKeyedItems: Bool = true) throws -> PublicClientApplication {
            var configuration = PublicClientApplicationConfiguration(
                clientID: LocalIdentityProvider.demoClientID, authority: try Authority(provider.authority(tenant: "organizations"), type: .aad),
                cacheBackend: backend.cacheBackend(in: directory), accessGroup: accessGroup)
            configuration.readsADALKeyedItems = readsKeyedItems
            configuration.clock = clock
            let log = self.log
            configuration.logger = Logger(level: .debug) { _, line in log.append(line) }
            let clock = self.clock
            configuration.sleep = { seconds in clock.advance(by: max(seconds, 1)) }
            return try PublicClientApplication(configuration: configuration)
        }

        func refreshRequests(since index: Int) -> [LocalIdentityProvider.RecordedRequest] {
            provider.requests.dropFirst(index).filter { $0.grantType == "refresh_token" }
        }

        /// The keyed items are exactly those written, and no token reached the log.
        func expectItemsUnchanged(sourceLocation: SourceLocation = #_sourceLocation) throws {
            let sorted = items.sorted { ($0.service, $0.account) < ($1.service, $1.account) }
            #expect(try keyedStore().adalKeyedItems() == sorted, "the keyed items changed", sourceLocation: sourceLocation)
            let secrets = [aliceHome, aliceGuest, bobHome].flatMap { [$0.refreshToken, $0.accessToken] }
            for line in log.lines {
                for secret in secrets { #expect(!line.contains(secret), "a secret in the log: \(line)", sourceLocation: sourceLocation) }
            }
        }

        /// Stops the provider; in the keyring, removes what the test stored there.
        func stop() {
            provider.stop()
            guard backend == .keyring, let store = try? keyedStore() else { return }
            for item in (try? store.adalKeyedItems()) ?? [] { try? store.removeADALKeyedItem(service: item.service, account: item.account) }
            if let contents = try? store.readAll() {
                let removals = CacheEntryKind.allCases.flatMap { kind in contents.entries(of: kind).map { CacheEntryRemoval(kind: kind, key: $0.key) } }
                try? store.apply(TokenCacheChange(removals: removals))
            }
        }
    }

    @Test("Found by username, upgraded by the first silent request, then found by identifier without reading keyed items", arguments: Backend.available)
    func foundUpgradedFound(_ backend: Backend) async throws {
        let fixture = try Fixture(backend)
        defer { fixture.stop() }
        let application = try fixture.application()
        #expect(try application.allAccounts().isEmpty)
        let legacy = try #require(try application.account(forUsername: "Alice@CONTOSO.example"))
        #expect(legacy.username == ADALFixture.alice.username)
        #expect(legacy.identifier != Self.aliceID)
        #expect(Set(legacy.tenantProfiles.map(\.tenantID)) == [ADALFixture.alice.tenantID, ADALFixture.fabrikam])

        let before = fixture.provider.requests.count
        let result = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: legacy))
        #expect(result.tokenSource == .identityProvider)
        #expect(result.account.identifier == Self.aliceID)
        #expect(result.tenantID == ADALFixture.alice.tenantID)
        let redemptions = fixture.refreshRequests(since: before)
        #expect(redemptions.count == 1)
        #expect(redemptions.first?.formParameters["refresh_token"] == fixture.aliceHome.refreshToken)

        let later = try fixture.application(readsKeyedItems: false)
        let found = try #require(try later.account(forIdentifier: Self.aliceID))
        let cached = try await later.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: found))
        #expect(cached.tokenSource == .cache && cached.accessToken == result.accessToken)
        // The upgraded account serves the guest tenant too, from its MSAL refresh token.
        let guest = try await later.acquireTokenSilent(with: SilentTokenParameters(
            scopes: [ADALFixture.graph + ".default"], account: found,
            authority: try Authority(fixture.provider.authority(tenant: ADALFixture.fabrikam), type: .aad)))
        #expect(guest.tenantID == ADALFixture.fabrikam)
        try fixture.expectItemsUnchanged()
    }

    @Test("A revoked keyed refresh token gives interactionRequired and leaves the items as they were", arguments: [Backend.sqlite])
    func rejected(_ backend: Backend) async throws {
        let fixture = try Fixture(backend)
        defer { fixture.stop() }
        #expect(fixture.provider.revokeRefreshToken(fixture.bobHome.refreshToken))
        let application = try fixture.application()
        let bob = try #require(try application.account(forUsername: ADALFixture.bob.username))
        do {
            _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: bob))
            Issue.record("a revoked legacy refresh token was accepted")
        } catch {
            #expect(error.code == .interactionRequired)
            #expect(!error.message.contains(fixture.bobHome.refreshToken))
        }
        #expect(try application.allAccounts().isEmpty)
        try fixture.expectItemsUnchanged()
    }

    @Test("Two keyed items naming different object IDs for one username in one tenant are an ambiguousAccount", arguments: [Backend.jsonFile])
    func ambiguous(_ backend: Backend) async throws {
        let fixture = try Fixture(backend) { aliceHome in
            // Another Alice: the user was deleted and created again with the same UPN.
            var other = aliceHome
            other.objectID = "99999999-9999-4999-8999-999999999999"
            other.resource = "https://vault.azure.net"
            other.refreshToken = "keyed-rt-other-alice"
            return [try other.adalKeyedItem()]
        }
        defer { fixture.stop() }
        let application = try fixture.application()
        #expect(throws: MSALError.self) { try application.account(forUsername: ADALFixture.alice.username) }
        do {
            _ = try application.account(forUsername: ADALFixture.alice.username)
        } catch {
            #expect(error.internalCode == .ambiguousAccount)
        }
        // Bob is not affected.
        #expect(try application.account(forUsername: ADALFixture.bob.username) != nil)
        try fixture.expectItemsUnchanged()
    }

    @Test("readsADALKeyedItems with a store that keeps no keyed items is an invalidParameter")
    func storeWithoutKeyedItems() throws {
        var configuration = PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID, authority: try Authority("https://login.microsoftonline.com/common"),
            cacheStore: EntriesOnlyStore())
        configuration.readsADALKeyedItems = true
        do {
            _ = try PublicClientApplication(configuration: configuration)
            Issue.record("the application was created")
        } catch {
            #expect(error.internalCode == .invalidParameter)
            #expect(error.message.contains("readsADALKeyedItems"))
        }
    }
}

/// A store with entries only (no ADAL keyed items).
final class EntriesOnlyStore: TokenCacheStore {
    let accessGroup = TokenCacheAccessGroup.default
    private let inner = InMemoryTokenCacheStore()
    func readAll() throws(MSALError) -> TokenCacheContents { try inner.readAll() }
    func apply(_ change: TokenCacheChange) throws(MSALError) { try inner.apply(change) }
    func changeStamp() throws(MSALError) -> UInt64 { try inner.changeStamp() }
}
