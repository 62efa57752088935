import Foundation
import MSALCache
@testable import MSALCacheEncryptedFile
import MSALCore
import MSALTestSupport
import Testing

/// A fresh directory for the cache files (MSALTestSupport's).
typealias EncTemporaryDirectory = ScratchDirectory

/// The conformance suite's sample entries, plus a one-token change.
enum EncSample {
    static func accessToken(home: String, secret: String) -> AccessTokenEntry {
        ConformanceSample.accessToken(home: home, secret: secret)
    }

    static func upsert(_ home: String, _ secret: String = "AT") -> TokenCacheChange {
        TokenCacheChange(upserts: [.accessToken(accessToken(home: home, secret: secret))])
    }
}

private func mode(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

/// The cache error `body` throws (failing the test when it throws none or another).
private func cacheError(_ body: () throws -> Void) -> MSALError? {
    do {
        try body()
        Issue.record("expected a cache error")
        return nil
    } catch let error as MSALError {
        #expect(error == .internal(.cacheError, ""))
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

@Suite("EncryptedFileTokenCacheStore")
struct EncryptedFileTokenCacheStoreTests {
    enum Source: String, CaseIterable, Sendable { case key, keyFile, passphrase }

    static let fixedKey = try! EncryptedCacheKey.random()

    func make(_ directory: EncTemporaryDirectory, _ source: Source, name: String = "cache.bin") throws -> EncryptedFileTokenCacheStore {
        let keySource: EncryptedFileTokenCacheStore.KeySource = switch source {
        case .key: .key(Self.fixedKey)
        case .keyFile: .keyFile(path: directory.file("keys/cache.key"))
        case .passphrase: .passphrase("correct horse", parameters: fastScrypt)
        }
        return try EncryptedFileTokenCacheStore(path: directory.file(name), keySource: keySource)
    }

    // The TokenCacheStore contract is checked by StoreConformanceTests; here what only this store does.

    @Test("A fresh nonce on every write; no token secret in plaintext on disk")
    func noPlaintext() throws {
        let directory = try EncTemporaryDirectory()
        let store = try make(directory, .key)
        let secret = "SECRET-REFRESH-TOKEN-\(UUID().uuidString)"
        try store.apply(TokenCacheChange(upserts: [
            .refreshToken(RefreshTokenEntry(homeAccountID: "h.t", environment: ConformanceSample.environment, clientID: ConformanceSample.clientID, secret: secret)),
        ]))
        let first = try Data(contentsOf: URL(fileURLWithPath: store.path))
        #expect(try mode(store.path) == 0o600)
        #expect(first.starts(with: Array("MSALENC1".utf8)))
        #expect(first.range(of: Data(secret.utf8)) == nil)
        #expect(first.range(of: Data("RefreshToken".utf8)) == nil)
        try store.apply(EncSample.upsert("x.t"))
        try store.apply(TokenCacheChange(removals: [CacheEntryRemoval(.accessToken(EncSample.accessToken(home: "x.t", secret: "AT")))]))
        let third = try Data(contentsOf: URL(fileURLWithPath: store.path))
        #expect(third.count == first.count)
        #expect(third[42..<54] != first[42..<54])  // nonce differs
        #expect(try store.readAll().refreshTokens.values.first?.secret == secret)
    }

    // MARK: Refusals

    /// Writes a cache with `writer`, damages it with `damage`, then checks that `reader` (default:
    /// a store like `writer`) fails readAll and apply with a cache error and leaves the bytes alone.
    private func expectRefused(
        _ directory: EncTemporaryDirectory, writer: EncryptedFileTokenCacheStore,
        reader: EncryptedFileTokenCacheStore, damage: (inout Data) -> Void = { _ in }, message: String
    ) throws {
        try writer.apply(EncSample.upsert("h.t"))
        var bytes = try Data(contentsOf: URL(fileURLWithPath: writer.path))
        damage(&bytes)
        try bytes.write(to: URL(fileURLWithPath: writer.path))
        let readError = cacheError { _ = try reader.readAll() }
        #expect(readError?.message.contains(writer.path) == true)
        #expect(readError?.message.contains(message) == true, "\(readError?.message ?? "")")
        let applyError = cacheError { try reader.apply(EncSample.upsert("n.t")) }
        #expect(applyError?.message.contains(message) == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: writer.path)) == bytes)
    }

    @Test("A format version this code does not read is named, with the advice to upgrade (not to change the key), and the file is kept")
    func unreadableVersion() throws {
        let directory = try EncTemporaryDirectory()
        let store = try make(directory, .key)
        try expectRefused(directory, writer: store, reader: store, damage: { $0[8] = 3 }, message: "format version 3")
        let error = cacheError { _ = try store.readAll() }
        #expect(error?.message.contains("Upgrade swift-msal") == true)
        #expect(error?.message.contains("right key") == false)
        var wrongKey = try Data(contentsOf: URL(fileURLWithPath: store.path))
        wrongKey[8] = 2
        try wrongKey.write(to: URL(fileURLWithPath: store.path))
        let other = try EncryptedFileTokenCacheStore(path: store.path, keySource: .key(EncryptedCacheKey.random()))
        #expect(cacheError { _ = try other.readAll() }?.message.contains("right key") == true)
    }

    @Test("A wrong key is a clear error and the file is not overwritten")
    func wrongKey() throws {
        let directory = try EncTemporaryDirectory()
        let writer = try make(directory, .key)
        let reader = try EncryptedFileTokenCacheStore(path: writer.path, keySource: .key(EncryptedCacheKey.random()))
        try expectRefused(directory, writer: writer, reader: reader, message: "key or passphrase is wrong")
    }

    @Test("A flipped byte is a clear error and the file is not overwritten", arguments: [0, 9, 30, 45, 60, -1])
    func flippedByte(offset: Int) throws {
        let directory = try EncTemporaryDirectory()
        let writer = try make(directory, .key)
        let reader = try make(directory, .key)
        try expectRefused(directory, writer: writer, reader: reader, damage: { bytes in
            let index = offset < 0 ? bytes.count - 1 : offset
            bytes[index] ^= 0x01
        }, message: "Cannot open the encrypted token cache")
    }

    @Test("A truncated or empty file is a clear error and the file is not overwritten", arguments: [0, 5, 40, 69])
    func truncated(length: Int) throws {
        let directory = try EncTemporaryDirectory()
        let writer = try make(directory, .key)
        let reader = try make(directory, .key)
        try expectRefused(directory, writer: writer, reader: reader, damage: { $0 = $0.prefix(length) }, message: "truncated")
        #expect(try Data(contentsOf: URL(fileURLWithPath: writer.path)).count == length)
    }

    @Test("A plaintext JSON cache is refused and kept")
    func plaintextRefused() throws {
        let directory = try EncTemporaryDirectory()
        let writer = try make(directory, .key)
        try expectRefused(directory, writer: writer, reader: writer, damage: { $0 = Data(#"{"AccessToken":{}}"#.utf8) },
                          message: "not an encrypted swift-msal token cache")
    }

    // MARK: Key files

    @Test("A missing key file is created with the first write of a new cache, with a random key, mode 0600 in a 0700 directory, and reused")
    func keyFileCreated() throws {
        let directory = try EncTemporaryDirectory()
        let keyPath = directory.file("keys/cache.key")
        let store = try make(directory, .keyFile)
        #expect(try store.readAll().accessTokens.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: keyPath), "opening the store and reading a missing cache create no key")
        #expect(!FileManager.default.fileExists(atPath: directory.file("keys")))
        try store.apply(EncSample.upsert("h.t"))
        #expect(try mode(keyPath) == 0o600)
        #expect(try mode(directory.file("keys")) == 0o700)
        let key = try Data(contentsOf: URL(fileURLWithPath: keyPath))
        #expect(key.count == 32)
        let reopened = try make(directory, .keyFile)
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyPath)) == key)
        #expect(try reopened.readAll().accessTokens.count == 1)
        // The same key given directly opens the file too.
        let direct = try EncryptedFileTokenCacheStore(path: store.path, keySource: .key(EncryptedCacheKey(rawKey: [UInt8](key))))
        #expect(try direct.readAll().accessTokens.count == 1)
    }

    @Test("A cache file whose key file is missing is refused, with no new key made and the file untouched; reading works again once the key is back")
    func missingKeyFileOfExistingCache() throws {
        let directory = try EncTemporaryDirectory()
        let keyPath = directory.file("keys/cache.key")
        let store = try make(directory, .keyFile)
        try store.apply(EncSample.upsert("h.t"))
        let key = try Data(contentsOf: URL(fileURLWithPath: keyPath))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store.path))
        try FileManager.default.removeItem(atPath: keyPath)

        let reopened = try make(directory, .keyFile)
        let error = cacheError { _ = try reopened.readAll() }
        #expect(error?.message.contains("'\(keyPath)'") == true && error?.message.contains("does not exist") == true)
        #expect(error?.message.contains("passphrase") == false, "no advice meant for a wrong key or passphrase")
        _ = cacheError { try reopened.apply(EncSample.upsert("h.u")) }
        #expect(!FileManager.default.fileExists(atPath: keyPath), "no new key replaces the lost one")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.path)) == bytes)

        try key.write(to: URL(fileURLWithPath: keyPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        #expect(try reopened.readAll().accessTokens.count == 1)
    }

    @Test("A file that is not an encrypted cache is refused with advice to choose another path (not to delete it), and no key file is made beside it")
    func notACacheFile() throws {
        let directory = try EncTemporaryDirectory()
        let path = directory.file("notes.txt")
        let text = Data("my notes, not a token cache\n".utf8)
        try text.write(to: URL(fileURLWithPath: path))
        let store = try EncryptedFileTokenCacheStore(path: path, keySource: .keyFile(path: path + ".key"))
        let error = cacheError { _ = try store.readAll() }
        #expect(error?.message.contains("not an encrypted swift-msal token cache") == true)
        #expect(error?.message.contains("Choose another path") == true)
        #expect(error?.message.contains("delete") == false)
        _ = cacheError { try store.apply(EncSample.upsert("h.t")) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == text)
        // The cache's own lock file may be made; no key file, no key lock file.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".key") } == [])
    }

    @Test("After the cache and key files are deleted to start over, the next change makes a new key file beside the new cache (no key kept in memory)")
    func startOverWhileRunning() throws {
        let directory = try EncTemporaryDirectory()
        let keyPath = directory.file("keys/cache.key")
        let store = try make(directory, .keyFile)
        try store.apply(EncSample.upsert("h.t"))
        #expect(try store.readAll().accessTokens.count == 1)
        try FileManager.default.removeItem(atPath: store.path)
        try FileManager.default.removeItem(atPath: keyPath)

        try store.apply(EncSample.upsert("h.u"))
        #expect(FileManager.default.fileExists(atPath: keyPath))
        #expect(try make(directory, .keyFile).readAll().accessTokens.count == 1, "another process opens the new cache with the new key file")
    }

    @Test("An empty or cut-short cache file is reported as truncated, without advice meant for other files")
    func truncatedAdvice() throws {
        let directory = try EncTemporaryDirectory()
        for bytes in [Data(), Data("MSAL".utf8), Data("MSALENC1".utf8) + Data([2]) + Data(repeating: 0, count: 20)] {
            try bytes.write(to: URL(fileURLWithPath: directory.file("cache.bin")))
            let error = cacheError { _ = try make(directory, .key).readAll() }
            #expect(error?.message.contains("truncated") == true, "\(bytes.count) bytes: \(error?.message ?? "")")
            #expect(error?.message.contains("Choose another path") == false)
            #expect(error?.message.contains("passphrase") == false)
        }
    }

    @Test("A group- or world-readable key file is refused", arguments: [0o644, 0o640, 0o604])
    func keyFileModeRefused(permissions: Int) throws {
        let directory = try EncTemporaryDirectory()
        let keyPath = directory.file("cache.key")
        try Data([UInt8](repeating: 7, count: 32)).write(to: URL(fileURLWithPath: keyPath))
        try FileManager.default.setAttributes([.posixPermissions: permissions], ofItemAtPath: keyPath)
        let error = cacheError { _ = try EncryptedFileTokenCacheStore(path: directory.file("c.bin"), keySource: .keyFile(path: keyPath)) }
        #expect(error?.message.contains("chmod 600") == true)
        #expect(error?.message.contains(keyPath) == true)
    }

    @Test("A key file of the wrong length is refused")
    func keyFileLengthRefused() throws {
        let directory = try EncTemporaryDirectory()
        let keyPath = directory.file("cache.key")
        try Data([UInt8](repeating: 7, count: 31)).write(to: URL(fileURLWithPath: keyPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        let error = cacheError { _ = try EncryptedFileTokenCacheStore(path: directory.file("c.bin"), keySource: .keyFile(path: keyPath)) }
        #expect(error?.message.contains("32 bytes") == true)
    }

    // MARK: Passphrases

    @Test("A passphrase store reopens with the same passphrase and fails with another, file untouched")
    func passphrase() throws {
        let directory = try EncTemporaryDirectory()
        let store = try make(directory, .passphrase)
        try store.apply(EncSample.upsert("h.t"))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store.path))
        #expect(bytes[9] == 1)  // KDF scrypt in the header
        let salt = bytes[26..<42]
        #expect(try make(directory, .passphrase).readAll().accessTokens.count == 1)
        // Rewrites keep the salt (a new file gets a new one).
        try store.apply(EncSample.upsert("i.t"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.path))[26..<42] == salt)
        let other = try make(directory, .passphrase, name: "other.bin")
        try other.apply(EncSample.upsert("h.t"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: other.path))[26..<42] != salt)

        let wrong = try EncryptedFileTokenCacheStore(path: store.path, keySource: .passphrase("wrong horse", parameters: fastScrypt))
        try expectRefused(directory, writer: store, reader: wrong, message: "key or passphrase is wrong")
        // A key cannot open a passphrase file, nor a passphrase a key file.
        let keyed = try EncryptedFileTokenCacheStore(path: store.path, keySource: .key(Self.fixedKey))
        #expect(cacheError { _ = try keyed.readAll() }?.message.contains("protected by a passphrase") == true)
        let keyFileStore = try make(directory, .key, name: "keyed.bin")
        try keyFileStore.apply(EncSample.upsert("h.t"))
        let byPassphrase = try EncryptedFileTokenCacheStore(path: keyFileStore.path, keySource: .passphrase("x", parameters: fastScrypt))
        #expect(cacheError { _ = try byPassphrase.readAll() }?.message.contains("given a passphrase") == true)
    }
}
