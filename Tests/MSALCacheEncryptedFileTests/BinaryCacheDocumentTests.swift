import Foundation
import MSALCache
@testable import MSALCacheEncryptedFile
import MSALCore
import MSALTestSupport
import Testing

/// The binary plaintext of format version 2: it holds what MSAL JSON holds, reads only what it
/// wrote (every damaged byte string is an error, never a crash), and a version 1 file is read and
/// then rewritten as version 2 with every access group kept.
@Suite("BinaryCacheDocument")
struct BinaryCacheDocumentTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000.75)  // a fraction: stored rounded down, as in JSON
    static let other = "com.contoso.other"

    /// A cache with every section, every optional field set and unset, keys of this version and of
    /// other MSALs, unmodelled fields, an unknown section and an unreadable entry.
    static func richContents(_ tag: String = "") -> TokenCacheContents {
        var contents = TokenCacheContents()
        let home = "uid\(tag).utid", environment = "login.microsoftonline.com", client = "client-\(tag)"
        let plain = AccessTokenEntry(
            homeAccountID: home, environment: environment, clientID: client, realm: "utid", target: "User.Read Mail.Read",
            secret: "AT-1\(tag)", cachedAt: t0, expiresOn: t0.addingTimeInterval(3600))
        contents.accessTokens[plain.key] = plain
        let rich = AccessTokenEntry(
            homeAccountID: home, environment: environment, clientID: client, realm: "guest", target: "https://graph.microsoft.com/Ünïcödé.Read",
            secret: "AT-2\(tag) ✓", tokenType: "bearer", cachedAt: t0, expiresOn: t0.addingTimeInterval(60),
            extendedExpiresOn: t0.addingTimeInterval(7200), refreshOn: t0.addingTimeInterval(30),
            additionalFields: ["kid": .string("k1"), "nested": .object(["a": .array([.number(1.5), .bool(true), .null])])])
        contents.accessTokens["key-written-by-another-msal\(tag)"] = rich
        let family = RefreshTokenEntry(
            homeAccountID: home, environment: environment, clientID: client, familyID: "1", secret: "RT-1\(tag)",
            target: "User.Read", additionalFields: ["last_modification_time": .string("1700000000")])
        contents.refreshTokens[family.key] = family
        let own = RefreshTokenEntry(homeAccountID: home, environment: environment, clientID: client, secret: "RT-2\(tag)")
        contents.refreshTokens["another-msal-rt-key\(tag)"] = own
        let idToken = IDTokenEntry(homeAccountID: home, environment: environment, clientID: client, realm: "utid", secret: "eyJ.\(tag).x")
        contents.idTokens[idToken.key] = idToken
        let account = AccountEntry(
            homeAccountID: home, environment: environment, realm: "utid", localAccountID: "uid", username: "ann@contoso.example",
            authorityType: AccountEntry.entraAuthorityType, accountSource: "device_code", name: "Ann", givenName: "Ann",
            familyName: "Example", additionalFields: ["client_info": .string("eyJ1aWQiOiJ1aWQifQ")])
        contents.accounts[account.key] = account
        let bare = AccountEntry(homeAccountID: home, environment: environment, realm: "guest", localAccountID: "other-oid")
        contents.accounts[bare.key] = bare
        contents.appMetadata[AppMetadataEntry(clientID: client, environment: environment, familyID: "1").key] =
            AppMetadataEntry(clientID: client, environment: environment, familyID: "1")
        contents.appMetadata["appmetadata-other"] = AppMetadataEntry(clientID: "other", environment: environment, additionalFields: ["x": .number(2)])
        contents.unknownSections["SomethingNew"] = .object(["x": .string("y")])
        contents.unreadableEntries["AccessToken"] = ["pop-key": .object(["credential_type": .string("AccessToken_With_AuthScheme")])]
        return contents
    }

    /// What MSAL JSON keeps of `contents` (times in whole seconds).
    static func viaJSON(_ contents: TokenCacheContents) throws -> TokenCacheContents {
        try TokenCacheContents(msalJSON: contents.msalJSON())
    }

    @Test("A group's contents read back as MSAL JSON keeps them: every section, optional field, key and unmodelled value")
    func roundTrip() throws {
        let contents = Self.richContents()
        var document = BinaryCacheDocument()
        try document.replace(accessGroup: TokenCacheAccessGroup.default, with: contents)
        let read = try BinaryCacheDocument(data: document.serialized()).contents(accessGroup: TokenCacheAccessGroup.default)
        let expected = try Self.viaJSON(contents)
        #expect(read == expected)
        #expect(read.accessTokens["key-written-by-another-msal"]?.cachedAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(read.accessTokens["key-written-by-another-msal"]?.additionalFields == contents.accessTokens["key-written-by-another-msal"]?.additionalFields)
        #expect(read.unknownSections == contents.unknownSections && read.unreadableEntries == contents.unreadableEntries)
        // Read entries share one copy of each identifier (the block's string table).
        let homes = read.accessTokens.values.map { $0.homeAccountID } + read.idTokens.values.map(\.homeAccountID)
        #expect(Set(homes.map { $0.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) } ?? 0 }).count == 1)
        // An empty cache is an empty document.
        #expect(try BinaryCacheDocument(data: BinaryCacheDocument().serialized()).contents(accessGroup: "any") == TokenCacheContents())
    }

    @Test("Groups are apart: each reads its own entries, one replaced leaves the others, an emptied one is gone")
    func groups() throws {
        var document = BinaryCacheDocument()
        try document.replace(accessGroup: TokenCacheAccessGroup.default, with: Self.richContents("a"))
        try document.replace(accessGroup: Self.other, with: Self.richContents("b"))
        var read = try BinaryCacheDocument(data: document.serialized())
        #expect(read.accessGroups == [TokenCacheAccessGroup.default, Self.other].sorted())
        #expect(try read.contents(accessGroup: Self.other) == Self.viaJSON(Self.richContents("b")))
        #expect(try read.contents(accessGroup: "com.contoso.none") == TokenCacheContents())

        var changed = try read.contents(accessGroup: TokenCacheAccessGroup.default)
        changed.accessTokens = [:]
        try read.replace(accessGroup: TokenCacheAccessGroup.default, with: changed)
        let again = try BinaryCacheDocument(data: read.serialized())
        #expect(try again.contents(accessGroup: TokenCacheAccessGroup.default) == changed)
        #expect(try again.contents(accessGroup: Self.other) == Self.viaJSON(Self.richContents("b")))

        try read.replace(accessGroup: Self.other, with: TokenCacheContents())
        #expect(try BinaryCacheDocument(data: read.serialized()).accessGroups == [TokenCacheAccessGroup.default])
    }

    @Test("Every truncation is a cache error, and damaged bytes are an error or a cache, never a crash (seeded)")
    func damaged() throws {
        var document = BinaryCacheDocument()
        try document.replace(accessGroup: TokenCacheAccessGroup.default, with: Self.richContents())
        let bytes = [UInt8](document.serialized())
        for length in 0 ..< bytes.count {
            #expect(throws: MSALError.internal(.cacheError, "")) {
                try BinaryCacheDocument(data: Data(bytes[..<length])).contents(accessGroup: TokenCacheAccessGroup.default)
            }
        }
        #expect(throws: MSALError.internal(.cacheError, "")) { try BinaryCacheDocument(data: Data(bytes + [0])) }

        var random = SplitMix64(seed: 11)
        var refused = 0
        for _ in 0 ..< 3_000 {
            var damaged = bytes
            for _ in 0 ... Int(random.next() % 3) {
                damaged[Int(random.next() % UInt64(damaged.count))] = UInt8(truncatingIfNeeded: random.next())
            }
            do {
                _ = try BinaryCacheDocument(data: Data(damaged)).contents(accessGroup: TokenCacheAccessGroup.default)
            } catch {
                #expect(error == .internal(.cacheError, ""))
                #expect(!error.message.contains("AT-1") && !error.message.contains("RT-1"))
                refused += 1
            }
        }
        #expect(refused > 0)
    }

    @Test("A version 1 file (MSAL JSON inside) is read, then rewritten as version 2 on the first change with every group kept")
    func upgradesVersion1() throws {
        let directory = try ScratchDirectory()
        let path = directory.file("cache.bin")
        let key = try EncryptedCacheKey.random()
        var json = try AccessGroupPartitionedJSON(data: nil)
        json.replace(accessGroup: TokenCacheAccessGroup.default, with: Self.richContents("a"))
        json.replace(accessGroup: Self.other, with: Self.richContents("b"))
        let version1 = try EncryptedCacheFormat.seal(json.serialized(), key: key, kdf: .rawKey, version: 1)
        try version1.write(to: URL(fileURLWithPath: path))

        let store = try EncryptedFileTokenCacheStore(path: path, keySource: .key(key))
        let other = try EncryptedFileTokenCacheStore(path: path, keySource: .key(key), accessGroup: Self.other)
        #expect(try store.readAll() == Self.viaJSON(Self.richContents("a")))
        #expect(try other.readAll() == Self.viaJSON(Self.richContents("b")))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == version1)  // reading writes nothing

        let added = AccessTokenEntry(
            homeAccountID: "new.utid", environment: "login.microsoftonline.com", clientID: "c", realm: "utid", target: "User.Read",
            secret: "AT-new", cachedAt: Self.t0, expiresOn: Self.t0.addingTimeInterval(60))
        try store.apply(TokenCacheChange(upserts: [.accessToken(added)]))
        let rewritten = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(rewritten[8] == 2)
        var expected = try Self.viaJSON(Self.richContents("a"))
        expected.accessTokens[added.key] = try Self.viaJSON({ var c = TokenCacheContents(); c.accessTokens[added.key] = added; return c }()).accessTokens[added.key]
        #expect(try store.readAll() == expected)
        #expect(try other.readAll() == Self.viaJSON(Self.richContents("b")))
        #expect(try EncryptedFileTokenCacheStore(path: path, keySource: .key(key)).readAll() == expected)
    }
}
