import Foundation
import MSALCache
import MSALCore
import Testing

@Suite("Access groups")
struct AccessGroupTests {
    @Test("The default group is MSAL's top-level sections; other groups live in their own section")
    func partitionLayout() throws {
        let atDefault = Sample.accessToken(target: "User.Read", secret: "AT-default")
        let atShared = Sample.accessToken(home: "other.t", target: "User.Read", secret: "AT-shared")
        var defaultContents = TokenCacheContents()
        defaultContents.apply(TokenCacheChange(upserts: [.accessToken(atDefault)]))
        var sharedContents = TokenCacheContents()
        sharedContents.apply(TokenCacheChange(upserts: [.accessToken(atShared)]))

        var document = try AccessGroupPartitionedJSON(data: nil)
        document.replace(accessGroup: TokenCacheAccessGroup.default, with: defaultContents)
        document.replace(accessGroup: "com.contoso.shared", with: sharedContents)
        let data = try document.serialized()

        // What another MSAL reads: the default group only, the other group as an unknown section.
        let plain = try TokenCacheContents(msalJSON: data)
        #expect(plain.accessTokens == [atDefault.key: atDefault])
        #expect(plain.unknownSections[AccessGroupPartitionedJSON.sectionName] != nil)

        var reread = try AccessGroupPartitionedJSON(data: data)
        #expect(try reread.contents(accessGroup: TokenCacheAccessGroup.default) == defaultContents)
        #expect(try reread.contents(accessGroup: "com.contoso.shared") == sharedContents)
        #expect(try reread.contents(accessGroup: "com.contoso.none") == TokenCacheContents())

        // Rewriting the default group keeps the other groups.
        reread.replace(accessGroup: TokenCacheAccessGroup.default, with: TokenCacheContents())
        let again = try AccessGroupPartitionedJSON(data: reread.serialized())
        #expect(try again.contents(accessGroup: "com.contoso.shared") == sharedContents)
        #expect(try again.contents(accessGroup: TokenCacheAccessGroup.default).count == 0)

        // A document that only ever held another group still has MSAL's five sections.
        var other = try AccessGroupPartitionedJSON(data: nil)
        other.replace(accessGroup: "com.contoso.shared", with: sharedContents)
        let otherRoot = try #require(JSONValue(parsing: other.serialized())?.objectValue)
        #expect(Set(otherRoot.keys) == Set(CacheEntryKind.allCases.map(\.rawValue) + [AccessGroupPartitionedJSON.sectionName]))
    }

    @Test("A groups section that is not an object of objects is a cache error")
    func malformedGroupsSection() throws {
        for text in [#"{"AccessToken": {}, "swift-msal.AccessGroups": {"g": 1}}"#, #"{"swift-msal.AccessGroups": []}"#, "[1]"] {
            #expect(throws: MSALError.internal(.cacheError, "")) { try AccessGroupPartitionedJSON(data: Data(text.utf8)) }
        }
    }

    @Test("JSONValue(parsing:) reads every JSON type, Booleans apart from numbers")
    func parsing() throws {
        let value = JSONValue(parsing: Data(#"{"s": "x", "t": true, "f": false, "one": 1, "zero": 0, "d": 1.5, "n": null, "a": [1, "b", {}]}"#.utf8))
        #expect(value == .object([
            "s": .string("x"), "t": .bool(true), "f": .bool(false), "one": .number(1), "zero": .number(0), "d": .number(1.5),
            "n": .null, "a": .array([.number(1), .string("b"), .object([:])]),
        ]))
        #expect(JSONValue(parsing: Data("not json".utf8)) == nil)
        #expect(JSONValue(parsing: Data("\"fragment\"".utf8)) == .string("fragment"))
    }

    @Test("Access group names are validated", arguments: ["", String(repeating: "a", count: 256), "a\nb", "a/b"])
    func invalidNames(name: String) {
        #expect(throws: MSALError.internal(.invalidParameter, "")) { try TokenCacheAccessGroup.validate(name) }
    }

    @Test("Reasonable names are accepted")
    func validNames() throws {
        #expect(try TokenCacheAccessGroup.validate("com.microsoft.adalcache") == TokenCacheAccessGroup.default)
        #expect(try TokenCacheAccessGroup.validate("group.com.contoso.apps") == "group.com.contoso.apps")
    }
}
