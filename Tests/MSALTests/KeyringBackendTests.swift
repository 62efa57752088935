import Foundation
import MSAL
import MSALCache
import MSALCacheEncryptedFile
import MSALCacheKeyring
import MSALTestSupport
import Testing

/// The keyring through the facade: `.keyring`, `.encryptedFile(key: .keyring)` and the default
/// chain's first choice. Only in a throwaway keyring session (scripts/test.sh); required there.
@Suite("Keyring-backed configurations", .enabled(if: ThrowawayKeyring.inUse))
struct KeyringBackendTests {
    /// Signs in with `backend`, then a second application on the same backend serves the token from
    /// the cache without asking the provider.
    func signInThenSilent(_ backend: TokenCacheBackend, group: String) async throws -> (PublicClientApplication, LocalFixture) {
        let fixture = try LocalFixture()
        var configuration = PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID, authority: fixture.authority, cacheBackend: backend, accessGroup: group)
        configuration.clock = fixture.clock
        let clock = fixture.clock
        configuration.sleep = { seconds in clock.advance(by: max(seconds, 1)) }
        let first = try PublicClientApplication(configuration: configuration)
        let signedIn = try await fixture.signIn(first)
        let second = try PublicClientApplication(configuration: configuration)
        let requests = fixture.provider.requests.count
        let account = try #require(try second.account(forIdentifier: signedIn.account.identifier))
        let silent = try await second.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: account))
        #expect(silent.tokenSource == .cache)
        #expect(silent.accessToken == signedIn.accessToken)
        #expect(fixture.provider.requests.count == requests)
        return (second, fixture)
    }

    @Test(".keyring keeps the tokens in the Secret Service")
    func keyring() async throws {
        let group = "org.swift-msal.tests.facade-\(UUID().uuidString.prefix(8).lowercased())"
        let (application, fixture) = try await signInThenSilent(.keyring, group: group)
        defer { fixture.stop() }
        #expect(application.cacheStore is KeyringTokenCacheStore)
        if let account = try application.allAccounts().first { _ = try application.remove(account: account) }
    }

    @Test("The default chain picks the keyring when one is reachable")
    func defaultChainPicksTheKeyring() throws {
        let application = try PublicClientApplication(configuration: PublicClientApplicationConfiguration(
            clientID: "app", authority: try Authority("https://login.microsoftonline.com/common"),
            accessGroup: "org.swift-msal.tests.chain-\(UUID().uuidString.prefix(8).lowercased())"))
        #expect(application.cacheStore is KeyringTokenCacheStore)
    }

    @Test(".encryptedFile(key: .keyring): the file's key lives in the keyring, created once")
    func encryptedFileWithAKeyringKey() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("cache.bin")
        let group = "org.swift-msal.tests.enc-\(UUID().uuidString.prefix(8).lowercased())"
        let (application, fixture) = try await signInThenSilent(.encryptedFile(path: path, key: .keyring), group: group)
        defer { fixture.stop() }
        #expect(application.cacheStore is EncryptedFileTokenCacheStore)
        let key = try #require(try KeyringSecret.load(name: "msal_cache key \(path)", accessGroup: group))
        #expect(key.count == EncryptedCacheKey.byteCount)
        // The key opens the file; no key file was written.
        let store = try EncryptedFileTokenCacheStore(path: path, keySource: .key(try EncryptedCacheKey(rawKey: key)), accessGroup: group)
        #expect(try store.readAll().accounts.count == 1)
        #expect(!FileManager.default.fileExists(atPath: path + ".key"))
        _ = try KeyringSecret.remove(name: "msal_cache key \(path)", accessGroup: group)
    }
}

/// Whether this run has a throwaway keyring (scripts/lib/keyring-session.sh), or must have one.
enum ThrowawayKeyring {
    static var inUse: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["MSAL_TEST_KEYRING_SESSION"] == "1" || environment["MSAL_KEYRING_REQUIRED"] == "1"
    }
}
