import Foundation
import MSAL
import MSALCacheEncryptedFile
import MSALWebAuth
import Testing

/// Printing a configuration or parameters while debugging is what users do: what they print must
/// not show a passphrase, a key or the process environment (which holds other programs' secrets).
@Suite("Configurations and parameters print without passphrases, keys or environment values")
struct RedactedDescriptionsTests {
    static let passphrase = "s3cret-passphrase-7f1c"
    static let environmentSecret = "ghp_fake0a1b2c3d4e5f"

    /// Every way Swift shows a value: `print`, `debugPrint`, `dump`.
    static func renderings(_ value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), dumped]
    }

    static func expectNoSecret(_ value: Any, _ secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for rendering in renderings(value) {
            for secret in secrets {
                #expect(!rendering.contains(secret), "\(rendering)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("A passphrase or key in the encrypted-file backend is redacted, as part of a configuration too; the key file's path shows")
    func encryptedFileKey() throws {
        let key = try EncryptedCacheKey(rawKey: Array(repeating: 0xAB, count: 32))
        for backendKey in [EncryptedFileKey.passphrase(Self.passphrase), .key(key)] {
            let backend = TokenCacheBackend.encryptedFile(path: "/tmp/cache.bin", key: backendKey)
            var configuration = PublicClientApplicationConfiguration(clientID: "client", authority: try Authority("https://login.microsoftonline.com/common"))
            configuration.cacheBackend = backend
            Self.expectNoSecret(backendKey, [Self.passphrase, "abab", "171, 171"])
            Self.expectNoSecret(backend, [Self.passphrase, "abab", "171, 171"])
            Self.expectNoSecret(configuration, [Self.passphrase, "abab", "171, 171"])
            #expect(String(describing: configuration).contains("redacted"))
        }
        #expect(String(describing: EncryptedFileKey.passphrase(Self.passphrase)) == "passphrase(redacted)")
        #expect(String(describing: EncryptedFileKey.keyFile(path: "/tmp/k.key")) == #"keyFile(path: "/tmp/k.key")"#)
        #expect(String(describing: EncryptedFileKey.keyring) == "keyring")

        let source = EncryptedFileTokenCacheStore.KeySource.passphrase(Self.passphrase)
        Self.expectNoSecret(source, [Self.passphrase])
        #expect(String(describing: source).hasPrefix("passphrase(redacted, parameters: scrypt("))
        #expect(String(describing: EncryptedFileTokenCacheStore.KeySource.keyFile(path: "/k")) == #"keyFile(path: "/k")"#)
    }

    @Test("The system browser launcher shows BROWSER and how many variables it holds, never their values, in interactive parameters too")
    func browserEnvironment() {
        let environment = ["BROWSER": "firefox", "GITHUB_TOKEN": Self.environmentSecret, "MSAL_CACHE_PASSPHRASE": Self.passphrase]
        let launcher = SystemBrowserLauncher(environment: environment)
        let parameters = InteractiveTokenParameters(scopes: ["User.Read"], browser: launcher)
        Self.expectNoSecret(launcher, [Self.environmentSecret, Self.passphrase, "GITHUB_TOKEN"])
        Self.expectNoSecret(parameters, [Self.environmentSecret, Self.passphrase, "GITHUB_TOKEN"])
        #expect(String(describing: launcher) == #"SystemBrowserLauncher(BROWSER: "firefox", environment: 3 variables, redacted)"#)
        // The default launcher carries the process's own environment: none of its values shows
        // (read only: setting a variable while other tests read the environment is unsafe).
        let values = ProcessInfo.processInfo.environment.values.filter { $0.count >= 12 }
        Self.expectNoSecret(InteractiveTokenParameters(scopes: ["User.Read"]), Array(values))
    }

    @Test("dump of an application or of an encrypted-file store shows no passphrase, whether the backend or the store was configured")
    func storeAndApplication() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msal-redaction-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let fast = ScryptParameters(n: 1 << 10, r: 8, p: 1)
        let store = try EncryptedFileTokenCacheStore(
            path: directory.appendingPathComponent("store.bin").path, keySource: .passphrase(Self.passphrase, parameters: fast))
        Self.expectNoSecret(store, [Self.passphrase])
        #expect(Self.renderings(store)[2].contains("store.bin"))

        let authority = try Authority("https://login.microsoftonline.com/common")
        var configured = PublicClientApplicationConfiguration(clientID: "client", authority: authority, cacheStore: store)
        Self.expectNoSecret(configured, [Self.passphrase])
        Self.expectNoSecret(try PublicClientApplication(configuration: configured), [Self.passphrase])
        configured = PublicClientApplicationConfiguration(clientID: "client", authority: authority)
        configured.cacheBackend = .encryptedFile(path: directory.appendingPathComponent("backend.bin").path, key: .passphrase(Self.passphrase))
        Self.expectNoSecret(try PublicClientApplication(configuration: configured), [Self.passphrase])
    }
}
