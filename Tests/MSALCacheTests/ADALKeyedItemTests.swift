import Foundation
import MSALCache
import MSALCore
import MSALTestSupport
import Testing

/// ADAL's keyed items: the key layout, the archived item, and the legacy cache reader over a store.
@Suite("ADAL keyed items")
struct ADALKeyedItemTests {
    static let clientID = "c3c7f5e5-7153-44d4-90e6-329686d48d76"

    static func idToken(_ claims: [String: Any]) -> String {
        func part(_ object: [String: Any]) -> String {
            Base64URL.encode(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
        }
        return part(["typ": "JWT", "alg": "none"]) + "." + part(claims) + "."
    }

    static let aliceItem = ADALTokenCacheItem(
        resource: "https://graph.windows.net/", authority: "https://login.microsoftonline.com/Contoso.com", clientID: clientID,
        accessToken: "keyed-at-alice", accessTokenType: "Bearer", refreshToken: "keyed-rt-alice",
        expiresOn: Date(timeIntervalSince1970: 1_700_000_000.5),
        rawIDToken: idToken([
            "upn": "Alice@Contoso.com", "oid": "0a1b2c3d-0000-4000-8000-00000000a11c", "tid": "72f988bf-86f1-41af-91ab-2d7cd011db47",
            "given_name": "Alice", "family_name": "Liddell", "sub": "alice-sub",
        ]),
        userID: "Alice@Contoso.com", isUserIDDisplayable: true,
        additionalServer: ["client_info": ClientInfo(uniqueID: "0a1b2c3d-0000-4000-8000-00000000a11c", uniqueTenantID: "72f988bf-86f1-41af-91ab-2d7cd011db47").encoded, "spe_info": "x"])

    // MARK: Keys

    @Test("The service and account are ADAL's: lowercased, trimmed, base64url without padding, the nil-resource marker")
    func keyLayout() {
        // MSAL's MSIDLegacyTokenCacheKey test vectors.
        #expect(ADALKeyedItem.service(authority: "https://login.microsoftonline.com/common", resource: "resource", clientID: "client")
            == "MSOpenTech.ADAL.1|aHR0cHM6Ly9sb2dpbi5taWNyb3NvZnRvbmxpbmUuY29tL2NvbW1vbg|cmVzb3VyY2U|Y2xpZW50")
        #expect(ADALKeyedItem.service(authority: " https://loGin.microsoftonline.com/common ", resource: "RESOURCE", clientID: "Client")
            == "MSOpenTech.ADAL.1|aHR0cHM6Ly9sb2dpbi5taWNyb3NvZnRvbmxpbmUuY29tL2NvbW1vbg|cmVzb3VyY2U|Y2xpZW50")
        #expect(ADALKeyedItem.account(userID: "eric_cartman@contoso.com") == "ZXJpY19jYXJ0bWFuQGNvbnRvc28uY29t")
        #expect(ADALKeyedItem.account(userID: " Eric_Cartman@Contoso.com") == "ZXJpY19jYXJ0bWFuQGNvbnRvc28uY29t")
        let mrrt = ADALKeyedItem.service(authority: "https://login.microsoftonline.com/common", resource: nil, clientID: "client")
        #expect(mrrt == "MSOpenTech.ADAL.1|aHR0cHM6Ly9sb2dpbi5taWNyb3NvZnRvbmxpbmUuY29tL2NvbW1vbg|CC3513A0-0E69-4B4D-97FC-DFB6C91EE132|Y2xpZW50")
        #expect(ADALKeyedItem.service(authority: "https://login.microsoftonline.com/common", resource: "  ", clientID: "client") == mrrt)
    }

    @Test("A service decodes to authority, resource and client ID; anything else decodes to nil")
    func serviceParts() {
        let item = ADALKeyedItem(
            authority: "https://login.microsoftonline.com/contoso.com", resource: "https://graph.windows.net/", clientID: "Client",
            userID: "bob@contoso.com", value: Data())
        #expect(item.serviceParts == ADALKeyedItem.ServiceParts(
            authority: "https://login.microsoftonline.com/contoso.com", resource: "https://graph.windows.net/", clientID: "client"))
        #expect(item.userID == "bob@contoso.com")
        let mrrt = ADALKeyedItem(authority: "https://a.example/t", resource: nil, clientID: "c", userID: "u", value: Data())
        #expect(mrrt.serviceParts?.resource == nil)
        for service in [
            "", "MSOpenTech.ADAL.1", "MSOpenTech.ADAL.2|YQ|YQ|YQ", "MSOpenTech.ADAL.1|YQ|YQ", "MSOpenTech.ADAL.1|YQ|YQ|YQ|appkey",
            "MSOpenTech.ADAL.1||YQ|YQ", "MSOpenTech.ADAL.1|YQ|YQ|", "MSOpenTech.ADAL.1|!!|YQ|YQ", "MSOpenTech.ADAL.1|YQ|*|YQ", "MSOpenTech.ADAL.1|_w|YQ|YQ",
        ] {
            #expect(ADALKeyedItem(service: service, account: "YQ", value: Data()).serviceParts == nil, "\(service)")
        }
        #expect(ADALKeyedItem(service: item.service, account: "", value: Data()).userID == nil)
        #expect(ADALKeyedItem(service: item.service, account: "%%%", value: Data()).userID == nil)
        #expect(ADALKeyedItem(service: item.service, account: "_w", value: Data()).userID == nil)  // 0xFF: not UTF-8
        #expect(!item.description.contains("keyed-") && item.description.contains("0 bytes"))
    }

    // MARK: The archived item

    @Test("An archived ADTokenCacheItem round-trips every field, with ADAL's class names in a binary property list")
    func archiveRoundTrip() throws {
        let data = try ADALKeyedItemArchive.archive(Self.aliceItem)
        #expect(data.prefix(8) == Data("bplist00".utf8))
        let plist = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        #expect(plist["$archiver"] as? String == "NSKeyedArchiver")
        let classNames = (plist["$objects"] as? [Any] ?? []).compactMap { ($0 as? [String: Any])?["$classname"] as? String }
        #expect(Set(classNames).isSuperset(of: ["ADTokenCacheItem", "ADUserInformation"]))
        #expect(!classNames.contains { $0.contains(".") })  // no Swift module-qualified name left

        let read = try ADALTokenCacheItem(archive: data)
        #expect(read == Self.aliceItem)
        #expect(!read.description.contains("keyed-") && !read.description.contains("Alice"))
        // A minimal item (what ADAL wrote for an item without user information) reads too.
        let minimal = ADALTokenCacheItem(refreshToken: "keyed-rt-min")
        #expect(try ADALTokenCacheItem(archive: ADALKeyedItemArchive.archive(minimal)) == minimal)
    }

    /// A keyed archive as an XML property list, with `fields` of the root object given as plist XML
    /// values (each stored as its own object, as NSKeyedArchiver does).
    static func xmlArchive(rootClass: String, fields: [String: String]) -> Data {
        var objects = ["<string>$null</string>"]
        var members: [String] = []
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            objects.append(value)
            members.append("<key>\(key)</key><dict><key>CF$UID</key><integer>\(objects.count - 1)</integer></dict>")
        }
        let classIndex = objects.count + 1
        objects.append("<dict><key>$class</key><dict><key>CF$UID</key><integer>\(classIndex)</integer></dict>\(members.joined())</dict>")
        let rootIndex = objects.count - 1
        objects.append("<dict><key>$classname</key><string>\(rootClass)</string><key>$classes</key><array><string>\(rootClass)</string><string>NSObject</string></array></dict>")
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
            <key>$archiver</key><string>NSKeyedArchiver</string>
            <key>$version</key><integer>100000</integer>
            <key>$top</key><dict><key>root</key><dict><key>CF$UID</key><integer>\(rootIndex)</integer></dict></dict>
            <key>$objects</key><array>\(objects.joined(separator: "\n"))</array>
            </dict></plist>
            """
        return Data(xml.utf8)
    }

    @Test("A hand-written XML archive reads; a field of the wrong type, another root class and non-archives are cache errors")
    func hostileArchives() throws {
        let good = Self.xmlArchive(rootClass: "ADTokenCacheItem", fields: [
            "refreshToken": "<string>keyed-rt-xml</string>", "clientId": "<string>c</string>",
        ])
        let read = try ADALTokenCacheItem(archive: good)
        #expect(read.refreshToken == "keyed-rt-xml" && read.clientID == "c" && read.authority == nil)
        #expect(try ADALTokenCacheItem(archive: Self.xmlArchive(rootClass: "MSIDLegacyTokenCacheItem", fields: [
            "refreshToken": "<string>keyed-rt-msal</string>",
        ])).refreshToken == "keyed-rt-msal")

        let archivedDictionary = try NSKeyedArchiver.archivedData(withRootObject: NSDictionary(dictionary: ["refreshToken": "keyed-rt-dict"]), requiringSecureCoding: true)
        let valid = try ADALKeyedItemArchive.archive(Self.aliceItem)
        let bad: [(String, Data)] = [
            ("empty", Data()),
            ("garbage", Data("not an archive at all".utf8)),
            ("truncated", valid.prefix(valid.count / 2)),
            ("JSON", Data(#"{"refreshToken": "keyed-rt-json"}"#.utf8)),
            ("a plist that is not an archive", try PropertyListSerialization.data(fromPropertyList: ["refreshToken": "keyed-rt-plist"], format: .binary, options: 0)),
            ("another root class", archivedDictionary),
            ("an unknown root class", Self.xmlArchive(rootClass: "SomethingElse", fields: ["refreshToken": "<string>keyed-rt-other</string>"])),
            ("a number as refreshToken", Self.xmlArchive(rootClass: "ADTokenCacheItem", fields: ["refreshToken": "<integer>42</integer>"])),
            ("a string as expiresOn", Self.xmlArchive(rootClass: "ADTokenCacheItem", fields: ["expiresOn": "<string>tomorrow</string>"])),
        ]
        for (what, data) in bad {
            do {
                let item = try ADALTokenCacheItem(archive: data)
                Issue.record("\(what) was read as an item: \(item)")
            } catch {
                #expect(error.internalCode == .cacheError, "\(what)")
                #expect(!error.message.contains("keyed-rt"), "\(what)")
            }
        }
    }

    @Test("Every single-byte corruption of an archive reads or fails with a cache error, never a crash")
    func corruptedArchivesNeverCrash() throws {
        let valid = try ADALKeyedItemArchive.archive(Self.aliceItem)
        var failures = 0
        for index in valid.indices {
            for pattern: UInt8 in [0xFF, 0x01] {
                var damaged = valid
                damaged[index] ^= pattern
                do {
                    _ = try ADALTokenCacheItem(archive: damaged)
                } catch {
                    #expect(error.internalCode == .cacheError)
                    failures += 1
                }
            }
        }
        #expect(failures > 0)  // some corruptions must be detected
    }

    // MARK: The reader

    @Test("Keyed items read as legacy entries; unusable items are skipped with reasons and no secret")
    func reader() throws {
        let store = InMemoryTokenCacheStore()
        let alice = try ADALKeyedItemArchive.keyedItem(Self.aliceItem, userID: "Alice@Contoso.com")
        var mrrtItem = Self.aliceItem
        mrrtItem.resource = nil
        mrrtItem.accessToken = nil
        mrrtItem.additionalServer = [:]
        let aliceMRRT = try ADALKeyedItemArchive.keyedItem(mrrtItem, userID: "alice@contoso.com")
        // No userId in userInformation: the ID token's upn, and the authority and client ID only in the key.
        let bobArchive = try ADALKeyedItemArchive.archive(ADALTokenCacheItem(
            refreshToken: "keyed-rt-bob", rawIDToken: Self.idToken(["email": "Bob@Fabrikam.com", "oid": "b0b", "tid": "fabrikam-tid", "idp": "live.com"])))
        let bob = ADALKeyedItem(
            authority: "https://login.microsoftonline.com/fabrikam.com", resource: "https://vault.azure.net", clientID: Self.clientID,
            userID: "bob@fabrikam.com", value: bobArchive)
        let noRefresh = try ADALKeyedItemArchive.keyedItem(
            ADALTokenCacheItem(resource: "r", authority: "https://login.microsoftonline.com/common", clientID: Self.clientID, accessToken: "keyed-at-carol"),
            userID: "carol@contoso.com")
        let notArchive = ADALKeyedItem(
            authority: "https://login.microsoftonline.com/common", resource: "r", clientID: Self.clientID, userID: "dave@contoso.com",
            value: Data("keyed-rt-dave in plain text".utf8))
        let badService = ADALKeyedItem(service: "MSOpenTech.ADAL.1|not base64!|x|y", account: "ZXJpbg", value: try ADALKeyedItemArchive.archive(ADALTokenCacheItem(refreshToken: "keyed-rt-erin")))
        let badAccount = ADALKeyedItem(service: alice.service, account: "***", value: try ADALKeyedItemArchive.archive(ADALTokenCacheItem(refreshToken: "keyed-rt-frank")))
        let badAuthority = try ADALKeyedItemArchive.keyedItem(
            ADALTokenCacheItem(resource: "r", authority: "not a url", clientID: Self.clientID, refreshToken: "keyed-rt-grace"), userID: "grace@contoso.com")
        for item in [alice, aliceMRRT, bob, noRefresh, notArchive, badService, badAccount, badAuthority] { try store.setADALKeyedItem(item) }

        let cache = ADALKeyedTokenCache(store: store)
        #expect(cache.name == "ADAL keyed items in access group com.microsoft.adalcache")
        let contents = try cache.read()
        #expect(contents.entries.count + contents.skipped.count == 8)
        #expect((contents.entries.map(\.position) + contents.skipped.map(\.position)).sorted() == Array(1...8))

        let aliceEntries = contents.entries.filter { $0.userID == "Alice@Contoso.com" }
        #expect(aliceEntries.count == 2)
        let graph = try #require(aliceEntries.first { $0.resource != nil })
        #expect(graph.authority == "https://login.microsoftonline.com/Contoso.com")
        #expect(graph.clientID == Self.clientID)
        #expect(graph.resource == "https://graph.windows.net/")
        #expect(graph.refreshToken == "keyed-rt-alice")
        #expect(graph.objectID == "0a1b2c3d-0000-4000-8000-00000000a11c")
        #expect(graph.tenantID == "72f988bf-86f1-41af-91ab-2d7cd011db47")
        #expect(graph.givenName == "Alice" && graph.familyName == "Liddell")
        #expect(graph.homeAccountID == "0a1b2c3d-0000-4000-8000-00000000a11c.72f988bf-86f1-41af-91ab-2d7cd011db47")
        #expect(graph.expiresOn == Date(timeIntervalSince1970: 1_700_000_000.5))
        #expect(graph.tokenType == "Bearer" && graph.isUserIDDisplayable == true && !graph.isMRRT)
        let mrrt = try #require(aliceEntries.first { $0.resource == nil })
        #expect(mrrt.isMRRT && mrrt.homeAccountID == nil)

        let bobEntry = try #require(contents.entries.first { $0.refreshToken == "keyed-rt-bob" })
        #expect(bobEntry.userID == "Bob@Fabrikam.com")
        #expect(bobEntry.authority == "https://login.microsoftonline.com/fabrikam.com")  // from the key (lowercased)
        #expect(bobEntry.clientID == Self.clientID.lowercased() && bobEntry.resource == "https://vault.azure.net")
        #expect(bobEntry.identityProvider == "live.com" && bobEntry.tenant == "fabrikam-tid")

        let reasons = Dictionary(uniqueKeysWithValues: contents.skipped.map { ($0.userID ?? "-", $0) })
        #expect(reasons["carol@contoso.com"]?.reason == .noRefreshToken)
        #expect(reasons["dave@contoso.com"]?.message.contains("not an archived ADTokenCacheItem") == true)
        #expect(reasons["grace@contoso.com"]?.message.contains("not an absolute http(s) URL") == true)
        #expect(contents.skipped.contains { $0.message.contains("service is not MSOpenTech.ADAL.1") })
        #expect(contents.skipped.contains { $0.message.contains("account is not the base64url") })
        let texts = contents.skipped.flatMap { [$0.message, $0.description] } + contents.entries.map(\.description)
        for text in texts { #expect(!text.contains("keyed-"), "\(text)") }
        // Read-only: the store holds the same items.
        #expect(try store.adalKeyedItems().count == 8)
    }

    @Test("The item's key decides the client, resource, authority and user; the archive only supplies their spelling")
    func keyDecides() throws {
        let store = InMemoryTokenCacheStore()
        let archive = try ADALKeyedItemArchive.archive(ADALTokenCacheItem(
            resource: "https://other.example", authority: "https://login.microsoftonline.com/other.example", clientID: "other-client",
            refreshToken: "keyed-rt-carol", userID: "mallory@other.example"))
        try store.setADALKeyedItem(ADALKeyedItem(
            authority: "https://login.microsoftonline.com/contoso.com", resource: "https://graph.windows.net/", clientID: Self.clientID,
            userID: "Carol@Contoso.com", value: archive))
        let entry = try #require(try ADALKeyedTokenCache(store: store).read().entries.first)
        #expect(entry.clientID == Self.clientID.lowercased())
        #expect(entry.resource == "https://graph.windows.net/")
        #expect(entry.authority == "https://login.microsoftonline.com/contoso.com")
        #expect(entry.userID == "carol@contoso.com")
    }

    @Test("A store that cannot be read makes the whole keyed cache a cache error")
    func unreadableStore() throws {
        let directory = try ScratchDirectory()
        let path = directory.path + "/cache.json"
        try Data("not json".utf8).write(to: URL(fileURLWithPath: path))
        let store = try JSONFileTokenCacheStore(path: path)
        #expect(throws: MSALError.self) { try ADALKeyedTokenCache(store: store).read() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("not json".utf8))
    }
}
