import Foundation
import MSALCache
@testable import MSALCacheKeyring
import MSALCore
import Testing

extension KeyringTests {
@Suite("KeyringSecret")
struct SecretAPI {
    static let key: [UInt8] = (0..<32).map { UInt8($0 * 7 % 256) }

    @Test("Store, load, replace and remove a 32-byte key")
    func roundTrip() throws {
        let fixture = KeyringFixture("secret")
        let group = fixture.accessGroup
        #expect(try KeyringSecret.load(name: "cache key", accessGroup: group) == nil)
        try KeyringSecret.store(Self.key, name: "cache key", accessGroup: group)
        #expect(try KeyringSecret.load(name: "cache key", accessGroup: group) == Self.key)

        let replacement = [UInt8](repeating: 0xAB, count: 32)
        try KeyringSecret.store(replacement, name: "cache key", accessGroup: group, label: "Contoso cache key")
        #expect(try KeyringSecret.load(name: "cache key", accessGroup: group) == replacement)

        // One item, with the secret schema, the label given, and the bytes in base64.
        if FileManager.default.isExecutableFile(atPath: SecretTool.path) {
            let item = try #require(try SecretTool.item(["access_group": group, "name": "cache key"]))
            #expect(item.schema == KeyringItemLayout.secretSchema)
            #expect(item.label == "Contoso cache key")
            #expect(item.secret == Data(replacement).base64EncodedString())
        }

        #expect(try KeyringSecret.remove(name: "cache key", accessGroup: group))
        #expect(try KeyringSecret.load(name: "cache key", accessGroup: group) == nil)
        #expect(try !KeyringSecret.remove(name: "cache key", accessGroup: group))
    }

    @Test("Secrets are separate by name and access group, and apart from token cache items")
    func isolation() throws {
        let fixture = KeyringFixture("secret-isolation")
        let group = fixture.accessGroup
        let other = group + ".other"
        try KeyringSecret.store([1], name: "a", accessGroup: group)
        try KeyringSecret.store([2], name: "b", accessGroup: group)
        try KeyringSecret.store([3], name: "a", accessGroup: other)
        #expect(try KeyringSecret.load(name: "a", accessGroup: group) == [1])
        #expect(try KeyringSecret.load(name: "b", accessGroup: group) == [2])
        #expect(try KeyringSecret.load(name: "a", accessGroup: other) == [3])
        #expect(try fixture.store().readAll() == TokenCacheContents())
    }

    @Test("loadOrStore: racing creators all get the one key that was stored")
    func loadOrStoreRace() async throws {
        let fixture = KeyringFixture("secret-race")
        let group = fixture.accessGroup
        let lockDirectory = fixture.lockDirectory
        let keys = try await withThrowingTaskGroup(of: [UInt8].self) { tasks in
            for worker in 0..<4 {
                tasks.addTask {
                    let candidate = [UInt8](repeating: UInt8(worker + 1), count: 32)
                    return try KeyringSecret.loadOrStore(candidate, name: "shared key", accessGroup: group, lockDirectory: lockDirectory)
                }
            }
            var keys: [[UInt8]] = []
            for try await key in tasks { keys.append(key) }
            return keys
        }
        #expect(keys.count == 4)
        #expect(Set(keys).count == 1)
        #expect(try KeyringSecret.load(name: "shared key", accessGroup: fixture.accessGroup) == keys.first)
    }

    @Test("Bad sizes, names and labels are refused; a foreign item is a clear error")
    func invalidInput() throws {
        let fixture = KeyringFixture("secret-invalid")
        let group = fixture.accessGroup
        for (bytes, name, label) in [([UInt8](), "n", nil), ([UInt8](repeating: 1, count: 4097), "n", nil), ([1], "", nil), ([1], "a\nb", nil), ([1], "n", "")] as [([UInt8], String, String?)] {
            let error = #expect(throws: MSALError.self) { try KeyringSecret.store(bytes, name: name, accessGroup: group, label: label) }
            #expect(error.map { isMSALError($0, .invalidParameter) } == true)
        }
        #expect(throws: MSALError.self) { try KeyringSecret.load(name: "n", accessGroup: "bad/group") }

        // An item of the secret schema that does not hold base64: refused, and the secret is not echoed.
        try SecretServiceClient.shared.withSession(timeout: 10) { session throws(KeyringProblem) in
            _ = try session.createItem(
                in: session.defaultCollection(), label: "foreign",
                attributes: ["xdg:schema": KeyringItemLayout.secretSchema, "access_group": group, "name": "n"],
                secret: Array("not base64 %%".utf8), contentType: "text/plain")
        }
        let error = #expect(throws: MSALError.self) { try KeyringSecret.load(name: "n", accessGroup: group) }
        #expect(error.map { isMSALError($0, .cacheError, containing: "does not hold a swift-msal secret") } == true)
        #expect(error.map { !$0.message.contains("%%") } == true)
    }
}
}
