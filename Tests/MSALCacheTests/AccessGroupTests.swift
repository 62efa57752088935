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

        var document = try AccessGroupPartitionedJSON.replacing(accessGroup: TokenCacheAccessGroup.default, with: defaultContents, in: nil)
        document = try AccessGroupPartitionedJSON.replacing(accessGroup: "com.contoso.shared", with: sharedContents, in: document)

        // What another MSAL reads: the default group only, the other group as an unknown section.
        let plain = try TokenCacheContents(msalJSON: document)
        #expect(plain.accessTokens == [atDefault.key: atDefault])
        #expect(plain.unknownSections[AccessGroupPartitionedJSON.sectionName] != nil)

        #expect(try AccessGroupPartitionedJSON.contents(in: document, accessGroup: TokenCacheAccessGroup.default) == defaultContents)
        #expect(try AccessGroupPartitionedJSON.contents(in: document, accessGroup: "com.contoso.shared") == sharedContents)
        #expect(try AccessGroupPartitionedJSON.contents(in: document, accessGroup: "com.contoso.none") == TokenCacheContents())

        // Rewriting the default group keeps the other groups.
        document = try AccessGroupPartitionedJSON.replacing(accessGroup: TokenCacheAccessGroup.default, with: TokenCacheContents(), in: document)
        #expect(try AccessGroupPartitionedJSON.contents(in: document, accessGroup: "com.contoso.shared") == sharedContents)
        #expect(try AccessGroupPartitionedJSON.contents(in: document, accessGroup: TokenCacheAccessGroup.default).count == 0)
    }

    @Test("A groups section that is not an object of objects is a cache error")
    func malformedGroupsSection() throws {
        let document = Data(#"{"AccessToken": {}, "swift-msal.AccessGroups": {"g": 1}}"#.utf8)
        #expect(throws: MSALError.internal(.cacheError, "")) {
            try AccessGroupPartitionedJSON.contents(in: document, accessGroup: "g")
        }
        #expect(throws: MSALError.internal(.cacheError, "")) {
            try AccessGroupPartitionedJSON.replacing(accessGroup: "g", with: TokenCacheContents(), in: document)
        }
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
