import Foundation
import MSALCache
import MSALCore
import MSALTestSupport
import Testing

private func decodeJSON(_ data: Data) throws -> JSONValue {
    try JSONDecoder().decode(JSONValue.self, from: data)
}

private func encode(_ value: JSONValue) throws -> Data {
    try JSONEncoder().encode(value)
}

/// What only the JSON file store does; the TokenCacheStore contract is checked by
/// StoreConformanceTests.
@Suite("JSON file token cache store")
struct JSONFileTokenCacheStoreTests {
    @Test("An MSAL Python cache is read, changed and written back with unknown fields and sections kept")
    func pythonFixtureRoundTrip() throws {
        // The fixture plus what a newer MSAL might add: an unknown section and an unknown entry field.
        guard case .object(var root) = try decodeJSON(Fixtures.cache("single_account")) else {
            Issue.record("fixture is not an object")
            return
        }
        root["FutureSection"] = .object(["k": .array([.string("v"), .number(2), .null])])
        guard case .object(var accessTokens) = root["AccessToken"], let (atKey, atValue) = accessTokens.first,
              case .object(var atObject) = atValue else {
            Issue.record("fixture has no access token")
            return
        }
        atObject["future_field"] = .object(["nested": .bool(true)])
        accessTokens[atKey] = .object(atObject)
        root["AccessToken"] = .object(accessTokens)

        let directory = try TemporaryDirectory()
        let path = directory.file("msal_token_cache.json")
        try encode(.object(root)).write(to: URL(fileURLWithPath: path))

        let store = try JSONFileTokenCacheStore(path: path)
        let contents = try store.readAll()
        #expect(contents.accessTokens.count == 1)
        #expect(contents.refreshTokens.count == 1)
        #expect(contents.accounts.count == 1)
        #expect(contents.accessTokens[atKey]?.additionalFields["future_field"] == .object(["nested": .bool(true)]))
        #expect(contents.unknownSections["FutureSection"] != nil)

        let added = Sample.accessToken(home: "new.t", secret: "AT-new")
        try store.apply(TokenCacheChange(upserts: [.accessToken(added)]))

        var expected = root
        accessTokens[added.key] = try decodeJSON(CacheEntry.accessToken(added).msalJSONData())
        expected["AccessToken"] = .object(accessTokens)
        let onDisk = try decodeJSON(Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(onDisk == .object(expected))
        #expect(try permissions(path) == 0o600)
        #expect(try store.readAll().accessTokens[added.key] == added)

        // Another store on the same file sees the change.
        #expect(try JSONFileTokenCacheStore(path: path).readAll().accessTokens.count == 2)
    }

    @Test("A missing or empty file is an empty cache; reading creates nothing")
    func missingAndEmpty() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("absent/msal_token_cache.json")
        let store = try JSONFileTokenCacheStore(path: path)
        #expect(try store.readAll() == TokenCacheContents())
        #expect(try store.changeStamp() == store.changeStamp())
        #expect(!FileManager.default.fileExists(atPath: directory.file("absent")))

        let empty = directory.file("empty.json")
        try Data().write(to: URL(fileURLWithPath: empty))
        #expect(try JSONFileTokenCacheStore(path: empty).readAll() == TokenCacheContents())
    }

    @Test("New files are 0600 in directories created 0700; the lock file is a sibling")
    func fileModes() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("a/b/msal_token_cache.json")
        let store = try JSONFileTokenCacheStore(path: path)
        try store.apply(TokenCacheChange(upserts: [.account(Sample.account(home: "h.t"))]))
        #expect(try permissions(path) == 0o600)
        #expect(try permissions(path + ".lock") == 0o600)
        #expect(try permissions(directory.file("a")) == 0o700)
        #expect(try permissions(directory.file("a/b")) == 0o700)
        // Only the cache and its lock file: no temporary file left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.file("a/b")).sorted()
            == ["msal_token_cache.json", "msal_token_cache.json.lock"])

        // A group-readable file is replaced by a 0600 one on the next write.
        chmod(path, 0o644)
        try store.apply(TokenCacheChange(upserts: [.account(Sample.account(home: "g.t"))]))
        #expect(try permissions(path) == 0o600)
    }

    @Test("A file that is not MSAL JSON is refused with a clear error and left untouched",
          arguments: ["not json at all {", "not json: \u{FF}", "[1, 2, 3]", "{\"AccessToken\": 5}"])
    func foreignFile(text: String) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("settings.json")
        let original = Data(text.utf8)
        try original.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        let store = try JSONFileTokenCacheStore(path: path)
        #expect {
            try store.readAll()
        } throws: { isCacheError($0, containing: "is not an MSAL JSON token cache") && isCacheError($0, containing: path) }
        // The error says whether the file is not JSON at all, or JSON of another shape.
        let reason = text.hasPrefix("not json") ? "it is not JSON text" : "expected a JSON object of sections"
        #expect {
            try store.readAll()
        } throws: { isCacheError($0, containing: reason) }
        #expect {
            try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "h.t", secret: "AT-secret"))]))
        } throws: { isCacheError($0, containing: "left it untouched") && !isCacheError($0, containing: "AT-secret") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == original)
        #expect(try permissions(path) == 0o644)
    }

    @Test("A path that is a directory or empty is refused")
    func badPaths() throws {
        let directory = try TemporaryDirectory()
        #expect { try JSONFileTokenCacheStore(path: directory.path) } throws: { isCacheError($0, containing: "not a regular file") }
        #expect { try JSONFileTokenCacheStore(path: "") } throws: { isCacheError($0, containing: "not a file path") }
    }
}
