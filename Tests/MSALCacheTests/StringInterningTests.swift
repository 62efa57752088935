import Foundation
@testable import MSALCache
import MSALCore
import Testing

/// Entries kept by the in-memory store and read from MSAL JSON share one copy of each repeated
/// identifier, and no value changes.
@Suite("Shared identifier strings")
struct StringInterningTests {
    /// A copy of `string` in its own allocation, as a parsed or received string is.
    static func fresh(_ string: String) -> String { String(decoding: Array(string.utf8), as: UTF8.self) }

    /// Where a native string's bytes are: equal for strings that share one storage.
    static func storage(_ string: String) -> UnsafeRawPointer? {
        var string = string
        return string.withUTF8 { UnsafeRawPointer($0.baseAddress) }
    }

    static func accessToken(target: String, secret: String) -> AccessTokenEntry {
        Sample.accessToken(home: fresh(Sample.home), realm: fresh(Sample.tenant), clientID: fresh(Sample.clientID), target: target, secret: secret)
    }

    @Test("The in-memory store keeps one copy of each repeated identifier; values do not change")
    func inMemoryStoreSharesIdentifiers() throws {
        var contents = TokenCacheContents()
        for (index, target) in ["a", "b", "c"].enumerated() {
            contents.insert(.accessToken(Self.accessToken(target: target, secret: "AT-\(index)")), storedKey: "key-\(index)")
        }
        #expect(Set(contents.accessTokens.values.map { Self.storage($0.homeAccountID) }).count == 3)

        let store = InMemoryTokenCacheStore(contents: contents)
        var read = try store.readAll()
        #expect(read == contents)
        #expect(Set(read.accessTokens.values.map { Self.storage($0.homeAccountID) }).count == 1)
        #expect(Set(read.accessTokens.values.map { Self.storage($0.realm) }).count == 1)

        // An entry stored later (a token response's) shares them too.
        try store.apply(TokenCacheChange(upserts: [.accessToken(Self.accessToken(target: "d", secret: "AT-3"))]))
        read = try store.readAll()
        #expect(read.accessTokens.count == 4)
        #expect(Set(read.accessTokens.values.map { Self.storage($0.homeAccountID) }).count == 1)
        #expect(read.accessTokens.values.contains { $0.secret == "AT-3" && $0.target == "d" && $0.homeAccountID == Sample.home })
    }

    @Test("Entries read from MSAL JSON share their identifiers and round-trip unchanged")
    func jsonEntriesShareIdentifiers() throws {
        var contents = TokenCacheContents()
        contents.insert(.accessToken(Self.accessToken(target: "a", secret: "AT-a")), storedKey: "k-a")
        contents.insert(.accessToken(Self.accessToken(target: "b", secret: "AT-b")), storedKey: "k-b")
        contents.insert(.idToken(Sample.idToken(home: Self.fresh(Sample.home), secret: "ID")), storedKey: "k-id")
        let read = try TokenCacheContents(msalJSON: try contents.msalJSON())
        #expect(read == contents)
        let homes = read.accessTokens.values.map(\.homeAccountID) + read.idTokens.values.map(\.homeAccountID)
        #expect(Set(homes.map(Self.storage)).count == 1)
    }

    @Test("Past its limit the interner starts over and still returns equal strings")
    func internerLimit() {
        var interner = StringInterner()
        let first = interner.intern(Self.fresh("identifier-0000000000000000000000"))
        let allEqual = (0...StringInterner.limit).allSatisfy { index in
            let string = "identifier-\(index)-padding-to-be-a-heap-string"
            return interner.intern(Self.fresh(string)) == string
        }
        #expect(allEqual)
        #expect(interner.intern(Self.fresh("identifier-0000000000000000000000")) == first)
    }
}
