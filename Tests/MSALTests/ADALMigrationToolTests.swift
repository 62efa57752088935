import Foundation
import MSALCache
import MSALCacheSQLite
import MSALCore
import MSALTestSupport
import Testing

/// `msal migrate-adal` and `msal token --adal-cache` as scripts run them: separate `msal`
/// processes against the local provider (in this process, or `msal dev-provider`), an ADAL for
/// Python file that must not change, and output that never carries a secret.
@Suite("Migration from ADAL through the msal tool")
struct ADALMigrationToolTests {
    static let client = LocalIdentityProvider.demoClientID
    static let scope = "api://demo/Files.Read"
    static var aliceID: String { "\(ADALFixture.alice.objectID).\(ADALFixture.alice.tenantID)" }
    static var bobID: String { "\(ADALFixture.bob.objectID).\(ADALFixture.fabrikam)" }

    /// Runs `msal` with the fixture's SQLite cache and the provider's `organizations` authority
    /// (`authority: false` leaves the authority out, as `migrate-adal` wants).
    static func msal(_ fixture: ADALFixture, _ arguments: [String], authority: Bool = true, environment: [String: String] = [:]) async throws -> ToolRun {
        var full = arguments + ["--client-id", client, "--cache-backend", "sqlite", "--cache", fixture.directory.path("cache.sqlite")]
        if authority { full += ["--authority", fixture.provider.authority(tenant: "organizations"), "--authority-type", "aad"] }
        return try await ToolRun.run(full, environment: environment)
    }

    /// The JSON lines of a run's stdout.
    static func lines(_ run: ToolRun) throws -> [[String: Any]] {
        try run.stdout.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
        }
    }

    static func expectNoSecrets(_ run: ToolRun, _ secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for secret in secrets {
            #expect(!run.stdout.contains(secret) && !run.stderr.contains(secret), "a secret was printed", sourceLocation: sourceLocation)
        }
    }

    @Test("migrate-adal --output json: one object per entry, migrated with the new identifier or skipped with a reason; then the accounts are MSAL's")
    func migrateJSON() async throws {
        let fixture = try ADALFixture(systemClock: true)
        defer { fixture.stop() }
        let run = try await Self.msal(fixture, ["migrate-adal", "--from", fixture.legacyPath, "--output", "json"], authority: false)
        #expect(run.status == 0, "\(run.stderr)")
        let entries = try Self.lines(run)
        try #require(entries.count == 6)
        #expect(entries.map { $0["entry"] as? Int } == [1, 2, 3, 4, 5, 6])
        #expect(entries.map { $0["status"] as? String } == ["migrated", "migrated", "migrated", "skipped", "skipped", "skipped"])
        #expect(entries.map { $0["account"] as? String } == [Self.aliceID, Self.aliceID, Self.bobID, nil, nil, nil])
        #expect(entries[0]["user_id"] as? String == ADALFixture.alice.username)
        #expect(entries[0]["resource"] as? String == ADALFixture.resource)
        #expect(entries[0]["authority"] as? String == fixture.aliceHome.authority)
        #expect(entries[1]["authority"] as? String == fixture.aliceGuest.authority)
        #expect(entries[0]["reason"] is NSNull)
        // Every key is there on every line, null when it does not apply.
        for entry in entries { #expect(Set(entry.keys) == ["entry", "user_id", "authority", "resource", "status", "reason", "account"]) }
        #expect(entries[3]["user_id"] is NSNull)  // the service principal is not a user
        #expect((entries[3]["reason"] as? String)?.contains("service principal") == true)
        #expect((entries[4]["reason"] as? String)?.contains("not a JSON object") == true)
        #expect((entries[5]["reason"] as? String)?.contains("`refreshToken` is not a string") == true)
        // Each entry was redeemed at its own tenant for <resource>/.default.
        let redemptions = fixture.refreshRequests()
        #expect(redemptions.count == 3)
        let scopes: [String] = redemptions.map { $0.formParameters["scope"] ?? "" }
        #expect(scopes[0].contains("https://management.core.windows.net//.default"))
        #expect(scopes[1].contains("https://graph.windows.net//.default"))
        #expect(redemptions[1].path.contains("/\(ADALFixture.fabrikam)/"))
        Self.expectNoSecrets(run, fixture.secrets)

        // The accounts are in the MSAL cache now, and serve tokens without the ADAL file.
        let accounts = try await Self.msal(fixture, ["accounts", "--output", "json"])
        #expect(try accounts.usernames().sorted() == [ADALFixture.alice.username, ADALFixture.bob.username])
        let token = try await Self.msal(fixture, ["token", "--account", Self.aliceID, "--scope", "https://management.core.windows.net//.default", "--output", "json"])
        #expect(token.status == 0, "\(token.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(token.stdout.utf8)) as? [String: Any])
        #expect(result["token_source"] as? String == "cache")
        fixture.expectLegacyUnchanged()
    }

    @Test("migrate-adal in text: one line per entry and a count; a rejected refresh token fails its entry and exits 3")
    func migrateTextRejected() async throws {
        let fixture = try ADALFixture(systemClock: true)
        defer { fixture.stop() }
        fixture.provider.revokeRefreshToken(fixture.bobHome.refreshToken)
        let run = try await Self.msal(fixture, ["migrate-adal", "--from", fixture.legacyPath], authority: false)
        #expect(run.status == 3, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 7, "\(run.stdout)")
        #expect(lines[0].hasPrefix("entry 1: migrated \(ADALFixture.alice.username) (resource \(ADALFixture.resource)"))
        #expect(lines[0].hasSuffix("account \(Self.aliceID)"))
        #expect(lines[2].hasPrefix("entry 3: failed \(ADALFixture.bob.username)"))
        #expect(lines[2].contains("interactionRequired") && lines[2].contains("sign in interactively"))
        #expect(lines[3].hasPrefix("entry 4: skipped: a service principal"))
        #expect(lines[6] == "2 migrated, 3 skipped, 1 failed.")
        Self.expectNoSecrets(run, fixture.secrets)

        // Another client's entries are skipped, with the client ID to use.
        let other = try await ToolRun.run([
            "migrate-adal", "--from", fixture.legacyPath, "--client-id", "0f1e2d3c-4b5a-4697-8877-665544332211",
            "--cache", fixture.directory.path("other.sqlite"), "--output", "json",
        ])
        #expect(other.status == 0, "\(other.stderr)")
        let entries = try Self.lines(other)
        #expect(entries.allSatisfy { $0["status"] as? String == "skipped" })
        #expect((entries[0]["reason"] as? String)?.contains("--client-id \(Self.client)") == true)
        fixture.expectLegacyUnchanged()
    }

    @Test("token --account <UPN> --adal-cache finds a legacy-only account and upgrades it; then --account <identifier> works without it")
    func tokenWithADALCache() async throws {
        let fixture = try ADALFixture(systemClock: true)
        defer { fixture.stop() }
        let upgraded = try await Self.msal(fixture, [
            "token", "--account", "ALICE@contoso.example", "--scope", Self.scope, "--adal-cache", fixture.legacyPath, "--output", "json",
        ])
        #expect(upgraded.status == 0, "\(upgraded.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(upgraded.stdout.utf8)) as? [String: Any])
        #expect((result["account"] as? [String: Any])?["identifier"] as? String == Self.aliceID)
        #expect(result["token_source"] as? String == "identity_provider")
        #expect(fixture.refreshRequests().count == 1)

        let later = try await Self.msal(fixture, ["token", "--account", Self.aliceID, "--scope", Self.scope, "--output", "json"])
        #expect(later.status == 0, "\(later.stderr)")
        #expect(later.stdout.contains("\"token_source\":\"cache\""))

        // MSAL_ADAL_CACHE does the same; a revoked legacy token is exit 3 with nothing cached for Bob.
        fixture.provider.revokeRefreshToken(fixture.bobHome.refreshToken)
        let rejected = try await Self.msal(
            fixture, ["token", "--account", ADALFixture.bob.username, "--scope", Self.scope, "--output", "json"],
            environment: ["MSAL_ADAL_CACHE": fixture.legacyPath])
        #expect(rejected.status == 3, "\(rejected.stderr)")
        #expect(rejected.stderr.contains("\"error\":\"interactionRequired\""))
        let accounts = try await Self.msal(fixture, ["accounts", "--output", "json"])
        #expect(try accounts.usernames() == [ADALFixture.alice.username])
        // Without the ADAL cache, Bob is unknown.
        let unknown = try await Self.msal(fixture, ["token", "--account", ADALFixture.bob.username, "--scope", Self.scope])
        #expect(unknown.status == 3)
        for run in [upgraded, later, rejected] { Self.expectNoSecrets(run, fixture.secrets) }
        fixture.expectLegacyUnchanged()
    }

    @Test("token --account <UPN> reads the Azure CLI's ADAL file by default (AZURE_CONFIG_DIR, else ~/.azure) when it exists")
    func tokenWithDefaultADALFile() async throws {
        let fixture = try ADALFixture(systemClock: true)
        defer { fixture.stop() }
        let azureConfig = fixture.legacyDirectory.url.path  // holds accessTokens.json
        let upgraded = try await Self.msal(
            fixture, ["token", "--account", "alice@contoso.example", "--scope", Self.scope, "--output", "json"],
            environment: ["AZURE_CONFIG_DIR": azureConfig])
        #expect(upgraded.status == 0, "\(upgraded.stderr)")
        #expect(upgraded.stdout.contains(Self.aliceID))
        // AZURE_ACCESS_TOKEN_FILE names the file itself (Cloud Shell); a missing default file is no error.
        let bob = try await Self.msal(
            fixture, ["token", "--account", ADALFixture.bob.username, "--scope", Self.scope, "--output", "json"],
            environment: ["AZURE_ACCESS_TOKEN_FILE": fixture.legacyPath, "AZURE_CONFIG_DIR": "/nonexistent"])
        #expect(bob.status == 0, "\(bob.stderr)")
        let nobody = try await Self.msal(
            fixture, ["token", "--account", "carol@contoso.example", "--scope", Self.scope],
            environment: ["AZURE_CONFIG_DIR": fixture.directory.path("no-azure-here")])
        #expect(nobody.status == 3, "\(nobody.stderr)")
        for run in [upgraded, bob, nobody] { Self.expectNoSecrets(run, fixture.secrets) }
        fixture.expectLegacyUnchanged()
    }

    @Test("migrate-adal: an entry whose tenant is gone fails (not skipped); an unusable MSAL cache stops it before any redemption; bidi controls never reach a line")
    func failuresAndUnusableCache() async throws {
        let fixture = try ADALFixture(systemClock: true) { tokens in
            var gone = tokens.bobHome.adalPythonEntry(timeZone: TimeZone(identifier: "UTC")!).objectValue!
            gone["_authority"] = .string(tokens.bobHome.authority.replacingOccurrences(of: ADALFixture.fabrikam, with: "00000000-0000-4000-8000-000000000000"))
            var tricky = tokens.bobHome.adalPythonEntry(timeZone: TimeZone(identifier: "UTC")!).objectValue!
            tricky["userId"] = .string("evil\u{202E}moc.elpmaxe@bob")
            tricky["_clientId"] = .string("some-other-client")
            return [.object(gone), .object(tricky)]
        }
        defer { fixture.stop() }
        // A JSON cache file that is not MSAL JSON: nothing is redeemed, exit 1.
        let foreign = fixture.directory.path("foreign.json")
        try Data("[1, 2]".utf8).write(to: URL(fileURLWithPath: foreign))
        let blocked = try await ToolRun.run([
            "migrate-adal", "--from", fixture.legacyPath, "--client-id", Self.client, "--cache-backend", "json", "--cache", foreign,
        ])
        #expect(blocked.status == 1, "\(blocked.stderr)")
        #expect(blocked.stderr.contains("internal.cacheError"))
        #expect(fixture.refreshRequests().isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: foreign)) == Data("[1, 2]".utf8))

        let run = try await Self.msal(fixture, ["migrate-adal", "--from", fixture.legacyPath], authority: false)
        #expect(run.status == 1, "\(run.stderr)")  // a failure that is not a rejected token
        let goneLine = try #require(run.stdout.split(separator: "\n").first { $0.hasPrefix("entry 7:") })
        #expect(goneLine.contains("failed") && goneLine.contains("internal.invalidAuthority"), "\(goneLine)")
        #expect(!run.stdout.unicodeScalars.contains { $0.value == 0x202E })
        #expect(run.stdout.contains("entry 8: skipped"))
        Self.expectNoSecrets(run, fixture.secrets)
        fixture.expectLegacyUnchanged()
    }

    @Test("token --adal-cache with a file that cannot be read: exit 1 saying so, not an unknown account")
    func tokenWithUnreadableADALFile() async throws {
        let fixture = try ADALFixture(systemClock: true)
        defer { fixture.stop() }
        let missing = try await Self.msal(fixture, [
            "token", "--account", "alice@contoso.example", "--scope", Self.scope, "--adal-cache", fixture.directory.path("nope.json"),
        ])
        #expect(missing.status == 1 && missing.stderr.contains("There is no ADAL cache"), "\(missing.stderr)")
        let directory = try await Self.msal(fixture, [
            "token", "--account", "alice@contoso.example", "--scope", Self.scope, "--adal-cache", fixture.directory.url.path,
        ])
        #expect(directory.status == 1 && directory.stderr.contains("is a directory"), "\(directory.stderr)")
        // The Azure CLI's file found by default: a warning, and the ordinary answer.
        let garbage = fixture.directory.path("azure")
        try FileManager.default.createDirectory(atPath: garbage, withIntermediateDirectories: true)
        try Data("not json".utf8).write(to: URL(fileURLWithPath: garbage + "/accessTokens.json"))
        let warned = try await Self.msal(
            fixture, ["token", "--account", "alice@contoso.example", "--scope", Self.scope], environment: ["AZURE_CONFIG_DIR": garbage])
        #expect(warned.status == 3, "\(warned.stderr)")
        #expect(warned.stderr.contains("warning: the Azure CLI's ADAL cache was not read"))
        #expect(fixture.refreshRequests().isEmpty)
        // Client IDs are case-insensitive: an upper-case --client-id migrates the entries of the lower-case one.
        let upper = try await ToolRun.run([
            "migrate-adal", "--from", fixture.legacyPath, "--client-id", Self.client.uppercased(), "--cache", fixture.directory.path("upper.sqlite"),
        ])
        #expect(upper.status == 0, "\(upper.stderr)")
        #expect(upper.stdout.contains("3 migrated"), "\(upper.stdout)")
    }

    @Test("Usage errors exit 2", arguments: [
        ["migrate-adal", "--client-id", "a"],
        ["migrate-adal", "--client-id", "a", "--from", "x.json", "--authority", "https://login.microsoftonline.com/common"],
        ["migrate-adal", "--client-id", "a", "--from", "x.json", "--scope", "s"],
        ["accounts", "--client-id", "a", "--adal-cache", "x.json"],
        ["token", "--client-id", "a", "--scope", "s", "--from", "x.json"],
        ["token", "--client-id", "a", "--scope", "s", "--adal-cache", "x.json"],
        ["token", "--client-id", "a", "--scope", "s", "--adal-keyed"],
        ["accounts", "--client-id", "a", "--adal-keyed"],
        ["migrate-adal", "--client-id", "a", "--from", "x.json", "--adal-keyed"],
    ])
    func usage(arguments: [String]) async throws {
        let run = try await ToolRun.run(arguments)
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        #expect(run.stderr.contains("usage error"))
    }

    @Test("A file that is missing or not an ADAL cache: exit 1, one cacheError line, nothing of its content")
    func unreadableFile() async throws {
        let directory = TemporaryDirectory()
        let missing = try await ToolRun.run(["migrate-adal", "--client-id", Self.client, "--from", directory.path("nope.json"), "--cache", directory.path("c.sqlite")])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("internal.cacheError") && missing.stderr.contains("There is no ADAL cache"))
        #expect(missing.stderr.split(separator: "\n").count == 1)
        let garbage = directory.path("garbage.json")
        try Data("{\"refreshToken\": \"rt-in-a-garbage-file\"".utf8).write(to: URL(fileURLWithPath: garbage))
        let bad = try await ToolRun.run(["migrate-adal", "--client-id", Self.client, "--from", garbage, "--cache", directory.path("c.sqlite"), "--output", "json"])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("\"error\":\"internal.cacheError\""))
        #expect(!bad.stderr.contains("rt-in-a-garbage-file") && !bad.stdout.contains("rt-in-a-garbage-file"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: garbage)) == Data("{\"refreshToken\": \"rt-in-a-garbage-file\"".utf8))
    }

    /// `msal dev-provider` on a free port, with the user Dana added in a tenant of her own.
    /// - Returns: the server, its base URL, its client ID and Dana's tenant.
    static func devProviderWithDana() async throws -> (DevProviderTests.Server, String, String, String) {
        let server = try await DevProviderTests.Server(["--port", "0", "--output", "json"])
        let startup = try server.startup()
        let base = try #require(startup["base_url"] as? String)
        let client = try #require((startup["clients"] as? [[String: Any]])?.first?["client_id"] as? String)
        let tenant = "6a4c2e0b-8d1f-4b3a-9c5e-7f0a2b4c6d8e"
        let added = try await DevProviderTests().send("POST", "\(base)/_control/users", json: ["username": "dana@northwind.example", "tenant_id": tenant])
        #expect(added.status == 200, "\(added.body)")
        return (server, base, client, tenant)
    }

    @Test("End to end through msal dev-provider: mint ADAL entries with the control API, migrate them, get tokens")
    func devProvider() async throws {
        let (server, base, client, tenant) = try await Self.devProviderWithDana()
        let http = DevProviderTests()
        func mint(_ body: [String: Any]) async throws -> [String: Any] {
            let answer = try await http.send("POST", "\(base)/_control/legacy/refresh-token", json: body)
            #expect(answer.status == 200, "\(answer.body)")
            return try #require(answer.body["adal_entry"] as? [String: Any])
        }
        let alice = try await mint([:])
        let aliceGraph = try await mint(["resource": "https://graph.windows.net/"])
        let dana = try await mint(["username": "dana@northwind.example"])
        #expect(alice["userId"] as? String == "alice@contoso.example" && alice["isMRRT"] as? Bool == true)
        #expect((alice["_authority"] as? String)?.hasPrefix(base + "/") == true)
        #expect(dana["_authority"] as? String == "\(base)/\(tenant)")
        // Dana's sessions are revoked before she migrates.
        let revoked = try await http.send("POST", "\(base)/_control/revoke", json: ["username": "dana@northwind.example"])
        #expect(revoked.body["revoked"] as? Int == 1)
        let servicePrincipal: [String: Any] = ["servicePrincipalId": "sp-app", "servicePrincipalTenant": tenant, "accessToken": "sp-secret-value"]
        let directory = TemporaryDirectory()
        let legacyPath = directory.path("accessTokens.json")
        let legacyBytes = try JSONSerialization.data(withJSONObject: [alice, aliceGraph, dana, servicePrincipal])
        try legacyBytes.write(to: URL(fileURLWithPath: legacyPath))
        let secrets = [alice, aliceGraph, dana].flatMap { [$0["refreshToken"] as? String ?? "?", $0["accessToken"] as? String ?? "?"] } + ["sp-secret-value"]
        let cache = ["--client-id", client, "--cache", directory.path("cache.sqlite")]

        let migrated = try await ToolRun.run(["migrate-adal", "--from", legacyPath, "--output", "json"] + cache)
        #expect(migrated.status == 3, "\(migrated.stderr)")  // Dana must sign in again
        let entries = try Self.lines(migrated)
        #expect(entries.map { $0["status"] as? String } == ["migrated", "migrated", "failed", "skipped"])
        let aliceID = "\(LocalIdentityProvider.demoUser.objectID).\(LocalIdentityProvider.demoTenantID)"
        #expect(entries[0]["account"] as? String == aliceID)
        #expect(entries[2]["user_id"] as? String == "dana@northwind.example")
        #expect((entries[2]["reason"] as? String)?.hasPrefix("interactionRequired") == true)
        for secret in secrets { #expect(!migrated.stdout.contains(secret) && !migrated.stderr.contains(secret)) }

        let authority = ["--authority", "\(base)/organizations", "--authority-type", "aad"]
        let token = try await ToolRun.run(["token", "--account", "alice@contoso.example", "--scope", "https://graph.windows.net//.default", "--output", "json"] + cache + authority)
        #expect(token.status == 0, "\(token.stderr)")
        #expect(token.stdout.contains("\"token_source\":\"cache\""))
        let accounts = try await ToolRun.run(["accounts", "--output", "json"] + cache + authority)
        #expect(try accounts.usernames() == ["alice@contoso.example"])
        // The provider's log shows the v2.0 redemptions, with the refresh tokens redacted.
        let log = try await http.send("GET", "\(base)/_control/requests")
        let requests = try #require(log.body["requests"] as? [[String: Any]])
        let redemptions = requests.filter { ($0["parameters"] as? [String: String])?["grant_type"] == "refresh_token" }
        #expect(redemptions.count == 3)
        #expect(redemptions.allSatisfy { ($0["path"] as? String)?.hasSuffix("/oauth2/v2.0/token") == true })
        #expect(redemptions.allSatisfy { ($0["parameters"] as? [String: String])?["refresh_token"] == "<redacted>" })

        #expect(try Data(contentsOf: URL(fileURLWithPath: legacyPath)) == legacyBytes)
        // Nothing was written beside the ADAL file (the MSAL cache is cache.sqlite and its companions).
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(files.filter { $0.hasPrefix("accessTokens") } == ["accessTokens.json"])
        #expect(await server.terminate() == 0)
    }

    @Test("End to end through msal dev-provider with ADAL keyed items in the SQLite cache: token --adal-keyed upgrades, migrate-adal --adal-keyed reports each item, the items stay")
    func devProviderKeyedItems() async throws {
        let (server, base, client, _) = try await Self.devProviderWithDana()
        let http = DevProviderTests()
        func mint(_ body: [String: Any]) async throws -> (entry: [String: Any], item: ADALKeyedItem) {
            let answer = try await http.send("POST", "\(base)/_control/legacy/refresh-token", json: body)
            #expect(answer.status == 200, "\(answer.body)")
            let keyed = try #require(answer.body["adal_keyed_item"] as? [String: Any])
            let service = try #require(keyed["service"] as? String)
            let account = try #require(keyed["account"] as? String)
            let encoded = try #require(keyed["value"] as? String)
            let item = ADALKeyedItem(service: service, account: account, value: try #require(Data(base64Encoded: encoded)))
            return (try #require(answer.body["adal_entry"] as? [String: Any]), item)
        }
        let alice = try await mint([:])
        let dana = try await mint(["username": "dana@northwind.example"])
        #expect(alice.item.service.hasPrefix("MSOpenTech.ADAL.1|"))
        #expect(alice.item.userID == "alice@contoso.example")
        #expect(try ADALTokenCacheItem(archive: alice.item.value).refreshToken == alice.entry["refreshToken"] as? String)
        let revoked = try await http.send("POST", "\(base)/_control/revoke", json: ["username": "dana@northwind.example"])
        #expect(revoked.body["revoked"] as? Int == 1)

        // The items sit in the app's own SQLite cache, as MSAL for iOS/macOS finds ADAL's in its keychain group.
        let directory = TemporaryDirectory()
        let cachePath = directory.path("cache.sqlite")
        let store = try SQLiteTokenCacheStore(path: cachePath)
        try store.setADALKeyedItem(alice.item)
        try store.setADALKeyedItem(dana.item)
        let itemsBefore = try store.adalKeyedItems()
        let secrets = [alice.entry, dana.entry].flatMap { [$0["refreshToken"] as? String ?? "?", $0["accessToken"] as? String ?? "?"] }
        let cache = ["--client-id", client, "--cache", cachePath]
        let authority = ["--authority", "\(base)/organizations", "--authority-type", "aad"]
        let aliceID = "\(LocalIdentityProvider.demoUser.objectID).\(LocalIdentityProvider.demoTenantID)"

        // Without --adal-keyed the user is unknown; with it, found and upgraded.
        let unknown = try await ToolRun.run(["token", "--account", "alice@contoso.example", "--scope", Self.scope] + cache + authority)
        #expect(unknown.status == 3, "\(unknown.stderr)")
        let token = try await ToolRun.run(
            ["token", "--account", "ALICE@contoso.example", "--adal-keyed", "--scope", Self.scope, "--output", "json"] + cache + authority)
        #expect(token.status == 0, "\(token.stderr)")
        #expect(token.stdout.contains(aliceID))
        let again = try await ToolRun.run(["token", "--account", aliceID, "--scope", Self.scope, "--output", "json"] + cache + authority)
        #expect(again.status == 0 && again.stdout.contains("\"token_source\":\"cache\""), "\(again.stderr)")

        let migrated = try await ToolRun.run(["migrate-adal", "--adal-keyed", "--output", "json"] + cache)
        #expect(migrated.status == 3, "\(migrated.stderr)")  // Dana's token was revoked
        let rows = try Self.lines(migrated)
        #expect(rows.count == 2)
        let byUser = Dictionary(uniqueKeysWithValues: rows.map { ($0["user_id"] as? String ?? "-", $0) })
        #expect(byUser["alice@contoso.example"]?["status"] as? String == "migrated")
        #expect(byUser["alice@contoso.example"]?["account"] as? String == aliceID)
        #expect(byUser["alice@contoso.example"]?["resource"] as? String == "https://management.core.windows.net/")
        #expect(byUser["dana@northwind.example"]?["status"] as? String == "failed")
        #expect((byUser["dana@northwind.example"]?["reason"] as? String)?.hasPrefix("interactionRequired") == true)
        let text = try await ToolRun.run(["migrate-adal", "--adal-keyed"] + cache)
        #expect(text.stdout.contains("1 migrated, 0 skipped, 1 failed."), "\(text.stdout)")
        for run in [token, again, migrated, text, unknown] {
            for secret in secrets { #expect(!run.stdout.contains(secret) && !run.stderr.contains(secret)) }
        }
        #expect(try SQLiteTokenCacheStore(path: cachePath).adalKeyedItems() == itemsBefore)
        #expect(await server.terminate() == 0)
    }
}
