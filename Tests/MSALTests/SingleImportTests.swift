// This file imports MSAL alone (and Foundation and the test library): what it names must come
// with `import MSAL`, as README.md and Docs/Migration.md promise.
import Foundation
import MSAL
import Testing

@Suite("import MSAL alone brings the configuration's cache, migration and key types")
struct SingleImportTests {
    @Test("A configuration with a cache store, a legacy cache and an encrypted file's key, built with one import")
    func configurationWithOneImport() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msal-single-import-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store: any TokenCacheStore = InMemoryTokenCacheStore()
        var configuration = PublicClientApplicationConfiguration(
            clientID: "client", authority: try Authority("https://login.microsoftonline.com/common"), cacheStore: store)
        configuration.legacyCaches = [ADALPythonTokenCache(path: directory.appendingPathComponent("accessTokens.json").path)]
        configuration.readsADALKeyedItems = true
        let key = try EncryptedCacheKey(rawKey: Array(repeating: 7, count: EncryptedCacheKey.byteCount))
        configuration.cacheBackend = .encryptedFile(path: directory.appendingPathComponent("cache.bin").path, key: .key(key))
        let application = try PublicClientApplication(configuration: configuration)
        // Every backend keeps ADAL's keyed items (Docs/Migration.md).
        #expect(application.cacheStore is any ADALKeyedItemStore)
        #expect(try application.allAccounts().isEmpty)
    }
}
