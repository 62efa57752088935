import Foundation
import MSALCache
import MSALCore
import MSALTestSupport
import Testing

/// The ADAL for Python cache reader on a hand-written `accessTokens.json` (Fixtures/ADAL.md).
@Suite("ADAL for Python cache reader")
struct ADALPythonTokenCacheTests {
    static let fixture = Fixtures.directory.appendingPathComponent("adal_python_accessTokens.json")
    static let newYork = TimeZone(identifier: "America/New_York")!
    static let azureCLI = "04b07795-8ddb-461a-bbee-02f9e1bf7b46"

    /// Every secret of the fixture: none may appear in a reason, a description or an error.
    static let secrets = [
        "fixture-at-alice-management", "fixture-rt-alice-common", "fixture-at-alice-graph", "fixture-rt-alice-fabrikam",
        "fixture-at-bob-vault", "fixture-rt-bob", "fixture-sp-client-secret", "fixture-at-app-only", "fixture-at-carol-no-rt",
        "fixture-rt-dave-ismrrt-string", "fixture-rt-erin-bad-date", "fixture-rt-frank-bad-authority", "fixture-rt-grace-fraction",
        "fixture-rt-numeric-user", "fixture-rt-heidi-xplat", "fixture-rt-nested-secret", "fixture-rt-judy-no-client",
        "fixture-rt-mallory-nulls",
    ]

    func readFixture(timeZone: TimeZone = newYork) throws -> LegacyTokenCacheContents {
        try ADALPythonTokenCache.parse(Data(contentsOf: Self.fixture), source: "fixture", timeZone: timeZone)
    }

    @Test("User entries are read with their fields; the others are skipped with their reasons, in file order")
    func entriesAndReasons() throws {
        let contents = try readFixture()
        #expect(contents.entries.map(\.position) == [1, 2, 3, 14, 17])
        #expect(contents.skipped.map(\.position) == [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16])

        let alice = contents.entries[0]
        #expect(alice.userID == "alice@contoso.example")
        #expect(alice.authority == "https://login.microsoftonline.com/common")
        #expect(alice.clientID == Self.azureCLI)
        #expect(alice.resource == "https://management.core.windows.net/")
        #expect(alice.refreshToken == "fixture-rt-alice-common")
        #expect(alice.objectID == "6f3c2a1e-0b7d-4c5e-9a8f-1d2e3f4a5b6c")
        #expect(alice.tenantID == nil && alice.tenant == nil)  // the Azure CLI drops tenantId; `common` names no tenant
        #expect(alice.isMRRT && alice.expiresIn == 3599 && alice.tokenType == "Bearer")
        #expect(alice.homeAccountID == nil && alice.familyID == nil)
        #expect(alice.source == "fixture")

        let guest = contents.entries[1]
        #expect(guest.userID == "Alice@Contoso.example")
        #expect(guest.tenantID == "9b8c7d6e-5f4a-4b3c-8d2e-1f0a9b8c7d6e" && guest.tenant == "9b8c7d6e-5f4a-4b3c-8d2e-1f0a9b8c7d6e")
        #expect(guest.givenName == "Alice" && guest.familyName == "Example" && guest.isUserIDDisplayable == true)
        #expect(guest.identityProvider == "https://sts.windows.net/1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d/")

        // The tenant comes from the authority when the entry has no tenantId.
        let bob = contents.entries[2]
        #expect(bob.tenantID == "9b8c7d6e-5f4a-4b3c-8d2e-1f0a9b8c7d6e")
        let heidi = contents.entries[3]
        #expect(heidi.userID == "heidi@contoso.example")
        let mallory = contents.entries[4]
        #expect(mallory.resource == nil && mallory.expiresOn == nil && mallory.objectID == nil)

        let reasons = Dictionary(uniqueKeysWithValues: contents.skipped.map { ($0.position, $0.reason) })
        #expect(reasons[4] == .servicePrincipal)
        #expect(reasons[5] == .servicePrincipal)
        #expect(reasons[6] == .noUser)
        #expect(reasons[7] == .noRefreshToken)
        #expect(reasons[8] == .malformed("`isMRRT` is not true or false"))
        #expect(reasons[10] == .malformed("not a JSON object"))
        #expect(reasons[11] == .malformed("`_authority` is not an absolute http(s) URL"))
        #expect(reasons[12] == .malformed("`expiresIn` is not a whole number of seconds"))
        #expect(reasons[13] == .malformed("`userId` is not a string"))
        #expect(reasons[15] == .malformed("`refreshToken` is not a string"))
        #expect(reasons[16] == .malformed("no `_clientId`"))
        if case .malformed(let detail)? = reasons[9] { #expect(detail.contains("`expiresOn` is not a date")) } else { Issue.record("entry 9: \(String(describing: reasons[9]))") }
        // Service principals are never read as users: no user ID, not even the client ID of the SP.
        #expect(contents.skipped.filter { $0.reason == .servicePrincipal }.allSatisfy { $0.userID == nil && $0.authority == nil })
        // The report identifies other skipped entries when it can.
        #expect(contents.skipped.first { $0.position == 7 }?.userID == "carol@contoso.example")
    }

    @Test("expiresOn is local time in the given zone; ISO 8601 with an offset is absolute")
    func localTime() throws {
        let newYork = try readFixture(timeZone: Self.newYork)
        let tokyo = try readFixture(timeZone: TimeZone(identifier: "Asia/Tokyo")!)
        // 2019-01-01 12:00:00.123456 in New York (EST, UTC-5) is 17:00:00.123456 UTC.
        let alice = try #require(newYork.entries[0].expiresOn)
        #expect(abs(alice.timeIntervalSince1970 - 1_546_362_000.123456) < 0.000_01)
        // The same text in Tokyo (UTC+9) is 14 hours earlier.
        let aliceTokyo = try #require(tokyo.entries[0].expiresOn)
        #expect(abs(alice.timeIntervalSince(aliceTokyo) - 14 * 3600) < 0.000_01)
        // Without a fraction, and with 7 µs.
        #expect(newYork.entries[1].expiresOn?.timeIntervalSince1970 == 1_546_363_800)
        let bob = try #require(newYork.entries[2].expiresOn)
        #expect(abs(bob.timeIntervalSince1970 - 1_549_184_706.000007) < 0.000_000_5)
        // ISO 8601 with Z does not depend on the zone.
        #expect(newYork.entries[3].expiresOn == tokyo.entries[3].expiresOn)
        #expect(newYork.entries[3].expiresOn?.timeIntervalSince1970 == 1_475_709_747)
    }

    @Test("Dates: what parses and what is refused", arguments: [
        ("2019-01-01 12:00:00", 1_546_344_000.0 as Double?),
        ("2019-01-01 12:00:00.5", 1_546_344_000.5),
        ("2019-01-01T12:00:00.000001", 1_546_344_000.000001),
        ("2019-01-01 12:00:00+01:00", 1_546_340_400),
        ("2019-01-01T12:00:00.000Z", 1_546_344_000),
        ("2020-02-29 00:00:00", 1_582_934_400),
        ("2019-02-29 00:00:00", nil), ("2019-13-01 00:00:00", nil), ("2019-01-01 24:00:00", nil),
        ("2019-01-01 12:00", nil), ("2019-01-01 12:00:00.", nil), ("2019-01-01 12:00:00 PM", nil), ("1546344000", nil), ("", nil),
    ])
    func dates(text: String, expected: Double?) {
        let parsed = ADALPythonTokenCache.date(fromExpiresOn: text, timeZone: TimeZone(identifier: "UTC")!)
        if let expected {
            #expect(parsed.map { abs($0.timeIntervalSince1970 - expected) < 0.000_000_5 } == true, "\(text) → \(String(describing: parsed?.timeIntervalSince1970))")
        } else {
            #expect(parsed == nil, "\(text) should not parse")
        }
    }

    @Test("No secret in reasons, descriptions or errors")
    func noSecrets() throws {
        let contents = try readFixture()
        var texts = contents.skipped.map(\.message) + contents.skipped.map(\.description) + contents.entries.map(\.description)
        texts += contents.entries.map { String(describing: $0) }
        for text in texts {
            for secret in Self.secrets { #expect(!text.contains(secret), "\(text)") }
            // User IDs are PII: reasons and descriptions leave them out.
            #expect(!text.lowercased().contains("@contoso.example"), "\(text)")
        }
        // An error about a whole file names neither a token nor the file's content.
        let directory = try TemporaryDirectory()
        let path = directory.file("accessTokens.json")
        try Data("{\"refreshToken\": \"fixture-rt-top-level\"}".utf8).write(to: URL(fileURLWithPath: path))
        #expect { try ADALPythonTokenCache(path: path).read() } throws: { error in
            let error = error as? MSALError
            return error?.internalCode == .cacheError && error?.message.contains("fixture-rt") == false && error?.message.contains("not a list") == true
        }
    }

    @Test("read() leaves the file's bytes, its mode and its directory as they were")
    func readOnly() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("accessTokens.json")
        let original = try Data(contentsOf: Self.fixture)
        try original.write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: path)
        let before = try FileManager.default.attributesOfItem(atPath: path)
        let cache = ADALPythonTokenCache(path: path, timeZone: Self.newYork)
        let contents = try cache.read()
        #expect(contents.entries.count == 5 && contents.skipped.count == 12)
        #expect(contents.entries.allSatisfy { $0.source == cache.name } && cache.name == "ADAL for Python cache \(path)")
        _ = try cache.read()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == original)
        let after = try FileManager.default.attributesOfItem(atPath: path)
        #expect(after[.posixPermissions] as? Int == before[.posixPermissions] as? Int)
        #expect(after[.modificationDate] as? Date == before[.modificationDate] as? Date)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["accessTokens.json"])
    }

    @Test("A file that is missing, a directory, not JSON or not a list is a cacheError; an empty file is an empty cache")
    func wholeFileErrors() throws {
        let directory = try TemporaryDirectory()
        func error(_ path: String) -> MSALError? {
            do { _ = try ADALPythonTokenCache(path: path).read(); return nil } catch { return error }
        }
        let missing = error(directory.file("nope.json"))
        #expect(missing?.internalCode == .cacheError && missing?.message.contains("There is no ADAL cache") == true)
        #expect(error(directory.url.path)?.message.contains("is a directory") == true)
        let garbage = directory.file("garbage.json")
        try Data("not json at all, fixture-rt-garbage".utf8).write(to: URL(fileURLWithPath: garbage))
        let notJSON = error(garbage)
        #expect(notJSON?.internalCode == .cacheError && notJSON?.message.contains("is not JSON") == true)
        #expect(notJSON?.message.contains("fixture-rt-garbage") == false)
        let empty = directory.file("empty.json")
        try Data("  \n".utf8).write(to: URL(fileURLWithPath: empty))
        let contents = try ADALPythonTokenCache(path: empty).read()
        #expect(contents.entries.isEmpty && contents.skipped.isEmpty)
        let emptyList = directory.file("list.json")
        try Data("[]".utf8).write(to: URL(fileURLWithPath: emptyList))
        #expect(try ADALPythonTokenCache(path: emptyList).read().entries.isEmpty)
    }

    @Test("The default path follows the Azure CLI: AZURE_ACCESS_TOKEN_FILE, AZURE_CONFIG_DIR, ~/.azure")
    func defaultPath() {
        #expect(ADALPythonTokenCache.defaultPath(environment: ["HOME": "/home/alice"]) == "/home/alice/.azure/accessTokens.json")
        #expect(ADALPythonTokenCache.defaultPath(environment: ["HOME": "/home/alice", "AZURE_CONFIG_DIR": "/etc/az"]) == "/etc/az/accessTokens.json")
        #expect(ADALPythonTokenCache.defaultPath(environment: ["AZURE_ACCESS_TOKEN_FILE": "/run/tokens.json", "AZURE_CONFIG_DIR": "/etc/az"]) == "/run/tokens.json")
    }
}
