import Foundation
import MSAL
import MSALCache
import MSALCacheSQLite
import MSALCore
import MSALTestSupport
import Synchronization
import Testing

/// An ADAL-era app's leftovers against the local provider: an `accessTokens.json` written as ADAL
/// for Python writes it, with refresh tokens the provider issued, next to an app whose MSAL cache is
/// a real SQLite file. Every test ends by checking that the legacy file's bytes (and its directory)
/// did not change.
final class ADALFixture: Sendable {
    static let fabrikam = "5c3a1e9b-7d2f-4a6c-8e0b-1f9d3c5a7e20"
    static let alice = LocalIdentityProvider.demoUser
    static let bob = LocalIdentityProvider.User(
        username: "bob@fabrikam.example", objectID: "7e1c3a5b-9d2f-4b6a-8c0e-2f4a6c8e0b1d", tenantID: fabrikam, name: "Bob")
    static let resource = "https://management.core.windows.net/"
    static let graph = "https://graph.windows.net/"
    static let servicePrincipalSecret = "sp-client-secret-9f8e7d6c5b4a"

    let provider: LocalIdentityProvider
    let clock: ManualWallClock
    /// The MSAL cache's directory; the legacy file sits in a directory of its own.
    let directory = TemporaryDirectory()
    let legacyDirectory = TemporaryDirectory()
    let legacyPath: String
    let legacyBytes: Data
    /// Alice at home (management, access token expired by the time tests run), Alice as a guest in
    /// Fabrikam (graph), Bob at home in Fabrikam.
    let aliceHome: LocalIdentityProvider.LegacyTokens
    let aliceGuest: LocalIdentityProvider.LegacyTokens
    let bobHome: LocalIdentityProvider.LegacyTokens
    /// Every log line of the fixture's applications.
    let log = LogCapture()

    /// - Parameters:
    ///   - extraEntries: appended to the file, after the user, service-principal and
    ///   malformed entries; built from the issued tokens.
    ///   - systemClock: the provider runs on the system clock (for `msal` processes, which have no
    ///     other); Alice's home entry then carries an `expiresOn` in the past instead.
    init(systemClock: Bool = false, extraEntries: (ADALFixture.Tokens) throws -> [JSONValue] = { _ in [] }) throws {
        clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        provider = systemClock ? LocalIdentityProvider() : LocalIdentityProvider(clock: clock)
        provider.addUser(Self.bob)
        try provider.addGuest(username: Self.alice.username, tenantID: Self.fabrikam)
        try provider.start()
        let client = LocalIdentityProvider.demoClientID
        aliceHome = try provider.issueLegacyRefreshToken(username: Self.alice.username, clientID: client, resource: Self.resource)
        aliceGuest = try provider.issueLegacyRefreshToken(username: Self.alice.username, clientID: client, resource: Self.graph, tenant: Self.fabrikam)
        bobHome = try provider.issueLegacyRefreshToken(username: Self.bob.username, clientID: client, resource: Self.resource)
        let utc = TimeZone(identifier: "UTC")!
        var entries: [JSONValue] = [aliceHome, aliceGuest, bobHome].map { $0.adalPythonEntry(timeZone: utc) }
        if systemClock, var expired = entries[0].objectValue {
            expired["expiresOn"] = .string("2020-01-01 00:00:00.000001")
            entries[0] = .object(expired)
        }
        entries.append(.object([  // the Azure CLI's service principal: `accessToken` is its client secret
            "servicePrincipalId": .string("3d5f7a9c-1e2b-4c4d-8e6f-7a8b9c0d1e2f"),
            "servicePrincipalTenant": .string(Self.alice.tenantID),
            "accessToken": .string(Self.servicePrincipalSecret),
        ]))
        entries.append(.string("not an entry"))
        var wrongType = aliceHome.adalPythonEntry(timeZone: utc).objectValue!
        wrongType["refreshToken"] = .number(12)
        entries.append(.object(wrongType))
        entries += try extraEntries(Tokens(aliceHome: aliceHome, aliceGuest: aliceGuest, bobHome: bobHome))
        legacyPath = legacyDirectory.path("accessTokens.json")
        let data = try JSONEncoder().encode(JSONValue.array(entries))
        try data.write(to: URL(fileURLWithPath: legacyPath))
        legacyBytes = data
        // Two hours on: the ADAL access tokens have expired, their refresh tokens live on (90 days).
        clock.advance(by: 7200)
    }

    /// The tokens the fixture issued, for building extra entries.
    struct Tokens {
        let aliceHome: LocalIdentityProvider.LegacyTokens
        let aliceGuest: LocalIdentityProvider.LegacyTokens
        let bobHome: LocalIdentityProvider.LegacyTokens
    }

    var secrets: [String] {
        [aliceHome, aliceGuest, bobHome].flatMap { [$0.refreshToken, $0.accessToken] } + [Self.servicePrincipalSecret]
    }

    var legacyCache: ADALPythonTokenCache { ADALPythonTokenCache(path: legacyPath, timeZone: TimeZone(identifier: "UTC")!) }

    /// An app on the fixture's SQLite cache, reading the legacy file unless `legacy` is false, and
    /// logging at debug (PII masked) into ``log.lines``.
    func application(
        clientID: String = LocalIdentityProvider.demoClientID, legacy: [any LegacyTokenCache]? = nil, authority tenant: String = "organizations"
    ) throws -> PublicClientApplication {
        var configuration = PublicClientApplicationConfiguration(
            clientID: clientID, authority: try Authority(provider.authority(tenant: tenant), type: .aad),
            cacheStore: try SQLiteTokenCacheStore(path: directory.path("cache.sqlite")))
        configuration.clock = clock
        configuration.legacyCaches = legacy ?? [legacyCache]
        let log = self.log
        configuration.logger = Logger(level: .debug) { _, line in log.append(line) }
        let clock = self.clock
        configuration.sleep = { seconds in clock.advance(by: max(seconds, 1)) }
        return try PublicClientApplication(configuration: configuration)
    }

    /// The refresh-token requests the provider received since `index`.
    func refreshRequests(since index: Int = 0) -> [LocalIdentityProvider.RecordedRequest] {
        provider.requests.dropFirst(index).filter { $0.grantType == "refresh_token" }
    }

    /// The legacy file is byte for byte what was written, and nothing was added beside it.
    func expectLegacyUnchanged(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect((try? Data(contentsOf: URL(fileURLWithPath: legacyPath))) == legacyBytes, "the legacy file changed", sourceLocation: sourceLocation)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: legacyDirectory.url.path)) == ["accessTokens.json"], sourceLocation: sourceLocation)
        for line in log.lines {
            for secret in secrets { #expect(!line.contains(secret), "a secret in the log: \(line)", sourceLocation: sourceLocation) }
        }
    }

    func stop() { provider.stop() }
}

/// Log lines collected from a ``Logger`` handler.
final class LogCapture: Sendable {
    private let storage = Mutex<[String]>([])

    func append(_ line: String) { storage.withLock { $0.append(line) } }

    var lines: [String] { storage.withLock { $0 } }
}

@Suite("Migration from ADAL: legacy accounts found by username and upgraded silently")
struct ADALMigrationTests {
    static let scopes = ["api://demo/Files.Read"]
    static var aliceID: String { "\(ADALFixture.alice.objectID).\(ADALFixture.alice.tenantID)" }
    @Test("Found by username (any case), upgraded by the first silent request, then found by identifier without the legacy cache")
    func foundUpgradedFound() async throws {
        let fixture = try ADALFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        #expect(try application.allAccounts().isEmpty)
        // The ADAL access token has expired; only its refresh token is alive.
        let entry = try #require(try fixture.legacyCache.read().entries.first)
        #expect(try #require(entry.expiresOn) < fixture.clock.now())

        let legacy = try #require(try application.account(forUsername: "ALICE@Contoso.EXAMPLE"))
        #expect(legacy.username == ADALFixture.alice.username)
        let environment: String = "127.0.0.1:\(fixture.provider.baseURL.port ?? 0)"
        #expect(legacy.environment == environment)
        #expect(legacy.identifier != Self.aliceID)  // not an MSAL home account ID yet
        let tenants: Set<String> = Set(legacy.tenantProfiles.map(\.tenantID))
        #expect(tenants == Set([ADALFixture.alice.tenantID, ADALFixture.fabrikam]))
        #expect(legacy.tenantProfiles.first { $0.tenantID == ADALFixture.alice.tenantID }?.identifier == ADALFixture.alice.objectID)

        let before = fixture.provider.requests.count
        let result = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: legacy))
        #expect(result.tokenSource == .identityProvider)
        #expect(result.account.identifier == Self.aliceID)
        #expect(result.account.username == ADALFixture.alice.username)
        #expect(result.scopes == Self.scopes)
        #expect(result.tenantID == ADALFixture.alice.tenantID)
        // One redemption of a legacy refresh token at the v2.0 endpoint, for the app's scopes.
        let redemption = try #require(fixture.refreshRequests(since: before).first)
        #expect(fixture.refreshRequests(since: before).count == 1)
        #expect(redemption.path.hasSuffix("/oauth2/v2.0/token"))
        let redeemed: String = redemption.formParameters["refresh_token"] ?? ""
        // Her own organization's entry, not the guest one: `organizations` means the home tenant.
        #expect(redeemed == fixture.aliceHome.refreshToken)
        let requested = ScopeSet(spaceDelimited: redemption.formParameters["scope"] ?? "")
        let expectedScopes: ScopeSet = ["api://demo/Files.Read", "openid", "profile", "offline_access"]
        #expect(requested == expectedScopes)
        #expect(redemption.formParameters["client_info"] == "1")

        // Another instance without legacy caches: the account is MSAL's now.
        let later = try fixture.application(legacy: [])
        let found = try #require(try later.account(forIdentifier: Self.aliceID))
        #expect(found.username == ADALFixture.alice.username)
        #expect(try later.allAccounts().map(\.identifier) == [Self.aliceID])
        let cached = try await later.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: found))
        #expect(cached.tokenSource == .cache)
        #expect(cached.accessToken == result.accessToken)
        // The username lookup now answers with the MSAL account (the legacy entry is the same user).
        #expect(try application.account(forUsername: ADALFixture.alice.username)?.identifier == Self.aliceID)
        // An app that kept the legacy account object is served from the MSAL cache, with no new redemption.
        let again = fixture.provider.requests.count
        let kept = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: legacy))
        #expect(kept.tokenSource == .cache && kept.account.identifier == Self.aliceID)
        #expect(fixture.refreshRequests(since: again).isEmpty)
        fixture.expectLegacyUnchanged()
    }
    @Test("Users in several tenants: one account per user; a request for the guest tenant redeems the guest entry; Bob is his own account")
    func severalTenants() async throws {
        let fixture = try ADALFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let alice = try #require(try application.account(forUsername: ADALFixture.alice.username))
        let before = fixture.provider.requests.count
        let guest = try await application.acquireTokenSilent(with: SilentTokenParameters(
            scopes: Self.scopes, account: alice, authority: try Authority(fixture.provider.authority(tenant: ADALFixture.fabrikam), type: .aad)))
        #expect(guest.tenantID == ADALFixture.fabrikam)
        #expect(guest.account.identifier == Self.aliceID)  // the home account, whatever tenant the token is for
        let redemption = try #require(fixture.refreshRequests(since: before).first)
        #expect(redemption.formParameters["refresh_token"] == fixture.aliceGuest.refreshToken)
        #expect(redemption.path.contains("/\(ADALFixture.fabrikam)/"))

        let bob = try #require(try application.account(forUsername: ADALFixture.bob.username))
        #expect(bob.identifier != alice.identifier)
        let bobResult = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: bob))
        #expect(bobResult.account.identifier == "\(ADALFixture.bob.objectID).\(ADALFixture.fabrikam)")
        #expect(fixture.refreshRequests(since: before).last?.formParameters["refresh_token"] == fixture.bobHome.refreshToken)
        let usernames: [String] = try application.allAccounts().compactMap(\.username).sorted()
        #expect(usernames == [ADALFixture.alice.username, ADALFixture.bob.username])
        fixture.expectLegacyUnchanged()
    }
    @Test("upgrade(legacyEntry:) asks for <resource>/.default at the entry's own authority; another client's entry is refused")
    func upgradeEntry() async throws {
        let fixture = try ADALFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let entries = try fixture.legacyCache.read().entries
        let bobEntry = try #require(entries.first { $0.userID == ADALFixture.bob.username })
        let before = fixture.provider.requests.count
        let result = try await application.upgrade(legacyEntry: bobEntry)
        #expect(result.account.identifier == "\(ADALFixture.bob.objectID).\(ADALFixture.fabrikam)")
        #expect(result.scopes == ["https://management.core.windows.net//.default"])
        let redemption = try #require(fixture.refreshRequests(since: before).first)
        let scope = ScopeSet(spaceDelimited: redemption.formParameters["scope"] ?? "")
        #expect(scope.contains("https://management.core.windows.net//.default"))
        #expect(redemption.path.contains("/\(ADALFixture.fabrikam)/oauth2/v2.0/token"))

        let stranger = try fixture.application(clientID: "0f1e2d3c-4b5a-4697-8877-665544332211")
        await #expect { _ = try await stranger.upgrade(legacyEntry: bobEntry) } throws: { error in
            (error as? MSALError)?.internalCode == .invalidParameter
        }
        // Its legacy lookups do not see entries issued to another client either.
        #expect(try stranger.account(forUsername: ADALFixture.alice.username) == nil)
        fixture.expectLegacyUnchanged()
    }
    @Test("Two accounts of different clouds with one username: ambiguousAccount")
    func ambiguousClouds() async throws {
        // A second provider is another cloud (another host:port) with its own Alice.
        let other = LocalIdentityProvider(clock: ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000)))
        try other.start()
        defer { other.stop() }
        let otherTokens = try other.issueLegacyRefreshToken(
            username: ADALFixture.alice.username, clientID: LocalIdentityProvider.demoClientID, resource: ADALFixture.resource)
        let fixture = try ADALFixture { _ in [otherTokens.adalPythonEntry()] }
        defer { fixture.stop() }
        let application = try fixture.application()
        #expect { _ = try application.account(forUsername: ADALFixture.alice.username) } throws: { error in
            (error as? MSALError)?.internalCode == .ambiguousAccount
        }
        #expect(try application.account(forUsername: ADALFixture.bob.username) != nil)
        fixture.expectLegacyUnchanged()
    }
    @Test("Legacy entries naming two object IDs in one tenant, or contradicting the MSAL account: ambiguousAccount")
    func ambiguousObjectIDs() async throws {
        // Another Alice (deleted and created again) in the same tenant, same username.
        let fixture = try ADALFixture { tokens in
            var entry = tokens.aliceHome.adalPythonEntry().objectValue!
            entry["oid"] = .string("99999999-8888-4777-8666-555555555555")
            entry["resource"] = .string("https://vault.azure.net")
            return [.object(entry)]
        }
        defer { fixture.stop() }
        let application = try fixture.application()
        #expect { _ = try application.account(forUsername: ADALFixture.alice.username) } throws: { error in
            (error as? MSALError)?.internalCode == .ambiguousAccount
        }

        // An MSAL account for Alice, and a legacy cache whose only Alice entry names another
        // object ID in her home tenant: two different users.
        let app = try fixture.application(legacy: [])
        _ = try await app.acquireToken(with: DeviceCodeParameters(scopes: Self.scopes)) { info in
            try fixture.provider.approveDeviceCode(userCode: info.userCode, as: ADALFixture.alice.username)
        }
        var entry = fixture.aliceHome.adalPythonEntry().objectValue!
        entry["oid"] = .string("11111111-2222-4333-8444-555555555555")
        let otherFile = fixture.directory.path("other-accessTokens.json")
        let otherBytes = try JSONEncoder().encode(JSONValue.array([.object(entry)]))
        try otherBytes.write(to: URL(fileURLWithPath: otherFile))
        defer { #expect((try? Data(contentsOf: URL(fileURLWithPath: otherFile))) == otherBytes) }
        let withLegacy = try fixture.application(legacy: [ADALPythonTokenCache(path: otherFile)])
        #expect { _ = try withLegacy.account(forUsername: ADALFixture.alice.username) } throws: { error in
            (error as? MSALError)?.internalCode == .ambiguousAccount
        }
        fixture.expectLegacyUnchanged()
    }
    @Test("An MSAL account and its own legacy entries are one account: the MSAL one")
    func msalAndLegacySameUser() async throws {
        let fixture = try ADALFixture()
        defer { fixture.stop() }
        let app = try fixture.application()
        let signedIn = try await app.acquireToken(with: DeviceCodeParameters(scopes: Self.scopes)) { info in
            try fixture.provider.approveDeviceCode(userCode: info.userCode, as: ADALFixture.alice.username)
        }
        let before = fixture.provider.requests.count
        let found = try #require(try app.account(forUsername: ADALFixture.alice.username))
        #expect(found.identifier == signedIn.account.identifier && found.identifier == Self.aliceID)
        let result = try await app.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: found))
        #expect(result.tokenSource == .cache)
        #expect(fixture.refreshRequests(since: before).isEmpty)
        fixture.expectLegacyUnchanged()
    }
    @Test("Rejected legacy refresh tokens: interactionRequired, nothing cached; one rejected of two: the other one upgrades")
    func rejected() async throws {
        let fixture = try ADALFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let alice = try #require(try application.account(forUsername: ADALFixture.alice.username))
        fixture.provider.revokeRefreshToken(fixture.aliceHome.refreshToken)
        fixture.provider.revokeRefreshToken(fixture.aliceGuest.refreshToken)
        let before = fixture.provider.requests.count
        await #expect { _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: alice)) } throws: { error in
            guard let error = error as? MSALError else { return false }
            return error.code == .interactionRequired && error.oauthError == "invalid_grant" && error.message.contains("legacy (ADAL) refresh token")
        }
        // Both distinct legacy refresh tokens were tried, and nothing reached the MSAL cache.
        let tried: Set<String> = Set(fixture.refreshRequests(since: before).compactMap { $0.formParameters["refresh_token"] })
        let aliceTokens: Set<String> = [fixture.aliceHome.refreshToken, fixture.aliceGuest.refreshToken]
        #expect(tried == aliceTokens)
        #expect(try application.allAccounts().isEmpty)
        // The legacy account is still found: the legacy cache was not touched.
        #expect(try application.account(forUsername: ADALFixture.alice.username) != nil)

        // Bob's single token revoked: interactionRequired through upgrade(legacyEntry:) as well.
        fixture.provider.revokeRefreshToken(fixture.bobHome.refreshToken)
        let bobEntry = try #require(try fixture.legacyCache.read().entries.first { $0.userID == ADALFixture.bob.username })
        await #expect { _ = try await application.upgrade(legacyEntry: bobEntry) } throws: { error in
            (error as? MSALError)?.code == .interactionRequired
        }
        fixture.expectLegacyUnchanged()

        // Only Alice's home token revoked: the guest tenant's token upgrades her.
        let second = try ADALFixture()
        defer { second.stop() }
        second.provider.revokeRefreshToken(second.aliceHome.refreshToken)
        let app = try second.application(authority: ADALFixture.alice.tenantID)
        let account = try #require(try app.account(forUsername: ADALFixture.alice.username))
        let start = second.provider.requests.count
        let result = try await app.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account))
        #expect(result.account.identifier == Self.aliceID)
        let order: [String] = second.refreshRequests(since: start).compactMap { $0.formParameters["refresh_token"] }
        #expect(order == [second.aliceHome.refreshToken, second.aliceGuest.refreshToken])  // the request's tenant first
        second.expectLegacyUnchanged()
    }
    @Test("An entry whose tenant no longer exists is passed over and the next entry upgrades; when no entry works: interactionRequired")
    func deletedTenantPassedOver() async throws {
        let deleted = "00000000-0000-4000-8000-000000000000"
        let fixture = try ADALFixture { tokens in
            // Alice's newest entry names a tenant that was deleted since: tried first, refused at discovery.
            var entry = tokens.aliceHome.adalPythonEntry(timeZone: TimeZone(identifier: "UTC")!).objectValue!
            entry["_authority"] = .string(tokens.aliceHome.authority.replacingOccurrences(of: ADALFixture.alice.tenantID, with: deleted))
            entry["tenantId"] = .string(deleted)
            entry["expiresOn"] = .string("2099-01-01 00:00:00")
            entry["refreshToken"] = .string("rt-of-a-deleted-tenant")
            return [.object(entry)]
        }
        defer { fixture.stop() }
        let application = try fixture.application()
        let alice = try #require(try application.account(forUsername: ADALFixture.alice.username))
        #expect(alice.tenantProfiles.contains { $0.tenantID == deleted })
        let before = fixture.provider.requests.count
        let result = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: alice))
        #expect(result.account.identifier == Self.aliceID)
        let tried: [String] = fixture.refreshRequests(since: before).compactMap { $0.formParameters["refresh_token"] }
        #expect(tried == [fixture.aliceHome.refreshToken])  // the deleted tenant's entry never sent its token
        #expect(fixture.log.lines.contains { $0.contains("was not redeemed (internal.invalidAuthority)") })

        // A user whose only entry is in the deleted tenant: interactionRequired, so apps fall back to a sign-in.
        let onlyDeleted = fixture.legacyDirectory.path("only-deleted.json")
        var carol = fixture.aliceHome.adalPythonEntry(timeZone: TimeZone(identifier: "UTC")!).objectValue!
        carol["userId"] = .string("carol@contoso.example")
        carol["_authority"] = .string(fixture.aliceHome.authority.replacingOccurrences(of: ADALFixture.alice.tenantID, with: deleted))
        carol["tenantId"] = .string(deleted)
        try JSONEncoder().encode(JSONValue.array([.object(carol)])).write(to: URL(fileURLWithPath: onlyDeleted))
        let other = try fixture.application(legacy: [ADALPythonTokenCache(path: onlyDeleted, timeZone: TimeZone(identifier: "UTC")!)])
        let account = try #require(try other.account(forUsername: "carol@contoso.example"))
        await #expect { _ = try await other.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account)) } throws: { error in
            guard let error = error as? MSALError else { return false }
            return error.code == .interactionRequired && error.message.contains("No legacy (ADAL) refresh token of this account was accepted")
        }
        try FileManager.default.removeItem(atPath: onlyDeleted)
        fixture.expectLegacyUnchanged()
    }

    @Test("Silent first, then interactive with the legacy account (ADAL's AD_PROMPT_AUTO): the username is the login hint")
    func silentThenInteractive() async throws {
        let fixture = try ADALFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let alice = try #require(try application.account(forUsername: ADALFixture.alice.username))
        fixture.provider.revokeRefreshTokens(username: ADALFixture.alice.username)
        var silentError: MSALError?
        do {
            _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: alice))
        } catch {
            silentError = error
        }
        #expect(silentError?.code == .interactionRequired)
        let result = try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, account: alice, browser: followingBrowser()))
        #expect(result.account.identifier == Self.aliceID)
        #expect(fixture.provider.authorizeRequests.last?.formParameters["login_hint"] == ADALFixture.alice.username)
        fixture.expectLegacyUnchanged()
    }
    @Test("Service principals are never users; malformed entries and unreadable caches are logged and skipped, never an error")
    func skippedAndLogged() async throws {
        let fixture = try ADALFixture()
        defer { fixture.stop() }
        let garbage = fixture.legacyDirectory.path("garbage.json")
        try Data("{ this is not an ADAL cache".utf8).write(to: URL(fileURLWithPath: garbage))
        let garbageBytes = try Data(contentsOf: URL(fileURLWithPath: garbage))
        let application = try fixture.application(legacy: [
            ADALPythonTokenCache(path: fixture.legacyDirectory.path("missing.json")),
            ADALPythonTokenCache(path: garbage),
            fixture.legacyCache,
        ])
        #expect(try application.account(forUsername: "3d5f7a9c-1e2b-4c4d-8e6f-7a8b9c0d1e2f") == nil)
        #expect(try application.account(forUsername: ADALFixture.alice.username) != nil)
        let lines = fixture.log.lines
        #expect(lines.contains { $0.contains("There is no ADAL cache") })
        #expect(lines.contains { $0.contains("garbage.json is not JSON") })
        #expect(lines.contains { $0.contains("#4 skipped: a service principal") })
        #expect(lines.contains { $0.contains("#5 skipped: malformed: not a JSON object") })
        #expect(lines.contains { $0.contains("#6 skipped: malformed: `refreshToken` is not a string") })
        // PII is masked unless the logger opts in.
        #expect(!lines.contains { $0.contains(ADALFixture.alice.username) })
        #expect(try Data(contentsOf: URL(fileURLWithPath: garbage)) == garbageBytes)
        #expect(!FileManager.default.fileExists(atPath: fixture.legacyDirectory.path("missing.json")))
        // Remove the extra file so the directory check holds.
        try FileManager.default.removeItem(atPath: garbage)
        fixture.expectLegacyUnchanged()
    }

    @Test("Another LegacyTokenCache conformer (client info kept, a family refresh token): the identifier is known before the upgrade, and another app of the family upgrades it")
    func secondConformer() async throws {
        let fixture = try ADALFixture()
        defer { fixture.stop() }
        let appA = "a1a1a1a1-0000-4000-8000-0000000000a1", appB = "b2b2b2b2-0000-4000-8000-0000000000b2"
        fixture.provider.addFamilyClient(appA)
        fixture.provider.addFamilyClient(appB)
        let tokens = try fixture.provider.issueLegacyRefreshToken(username: ADALFixture.alice.username, clientID: appA, resource: ADALFixture.graph)
        let entry = LegacyTokenEntry(
            source: "keyed items", position: 1, authority: tokens.authority, clientID: appA, resource: ADALFixture.graph,
            userID: ADALFixture.alice.username, refreshToken: tokens.refreshToken, homeAccountID: Self.aliceID,
            objectID: tokens.objectID, tenantID: tokens.tenantID, familyID: "1")
        #expect(!String(describing: entry).contains(tokens.refreshToken))
        let application = try fixture.application(clientID: appB, legacy: [StaticLegacyCache(entries: [entry])])
        let account = try #require(try application.account(forUsername: ADALFixture.alice.username))
        #expect(account.identifier == Self.aliceID)
        #expect(account.tenantProfiles.first?.isHomeTenant == true)
        #expect(try application.allAccounts().isEmpty)
        let before = fixture.provider.requests.count
        let result = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account))
        #expect(result.account.identifier == Self.aliceID)
        let redemption = try #require(fixture.refreshRequests(since: before).first)
        #expect(redemption.formParameters["client_id"] == appB)
        #expect(redemption.formParameters["refresh_token"] == tokens.refreshToken)
        #expect(try application.allAccounts().map(\.identifier) == [Self.aliceID])
        // A client outside the family finds the user (a family token may belong to any member), but
        // the provider refuses the token (client_mismatch): the user must sign in.
        let outsider = try fixture.application(clientID: "c3c3c3c3-0000-4000-8000-0000000000c3", legacy: [StaticLegacyCache(entries: [entry])])
        let stranger = try #require(try outsider.account(forUsername: ADALFixture.alice.username))
        await #expect { _ = try await outsider.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: stranger)) } throws: { error in
            (error as? MSALError)?.code == .interactionRequired && (error as? MSALError)?.subError == "client_mismatch"
        }
        fixture.expectLegacyUnchanged()
    }
}

/// A legacy cache of given entries: the shape of any other ``LegacyTokenCache`` conformer.
struct StaticLegacyCache: LegacyTokenCache {
    let name = "test legacy cache"
    let entries: [LegacyTokenEntry]

    func read() throws(MSALError) -> LegacyTokenCacheContents { LegacyTokenCacheContents(entries: entries) }
}
