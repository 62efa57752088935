import Foundation
import MSALCache
import MSALCacheEncryptedFile
import MSALCore
import MSALTestSupport
import Testing

/// The TokenCacheStore contract (MSALTestSupport's TokenCacheStoreConformance) run on the encrypted
/// file store, with a key file and with a passphrase (small scrypt parameters, to stay fast).
@Suite("TokenCacheStore contract: encrypted file store")
struct StoreConformanceTests {
    static let keyFile = harness("encrypted file with a key file") { .keyFile(path: $0 + ".key") }
    static let passphrase = harness("encrypted file with a passphrase") { _ in .passphrase("correct horse", parameters: fastScrypt) }

    static func harness(
        _ name: String, keySource: @escaping @Sendable (_ location: String) -> EncryptedFileTokenCacheStore.KeySource
    ) -> TokenCacheStoreHarness {
        TokenCacheStoreHarness(
            name: name, instancesShareState: true, isPersistent: true,
            damage: .init(
                response: .refused,
                storedBytes: { try Data(contentsOf: URL(fileURLWithPath: $0)) },
                damageStoredBytes: { location in
                    // One flipped bit in the ciphertext: authentication fails.
                    var bytes = try Data(contentsOf: URL(fileURLWithPath: location))
                    bytes[bytes.count / 2] ^= 0x01
                    try bytes.write(to: URL(fileURLWithPath: location))
                }),
            externalLock: .init(
                makeImpatientStore: { try EncryptedFileTokenCacheStore(path: $0, keySource: keySource($0), lockTimeout: 1) },
                whileLocked: { location, body in
                    var failure: (any Error)?
                    try LockedFile(path: location).withExclusiveLock { () throws(MSALError) in
                        do { try body() } catch { failure = error }
                    }
                    if let failure { throw failure }
                })
        ) { location, group in
            try group.map { try EncryptedFileTokenCacheStore(path: location, keySource: keySource(location), accessGroup: $0) }
                ?? EncryptedFileTokenCacheStore(path: location, keySource: keySource(location))
        }
    }

    @Test("Encrypted file store with a key file", arguments: TokenCacheStoreConformance.checks)
    func withKeyFile(_ check: TokenCacheStoreConformance.Check) async throws {
        try await Self.run(check, on: Self.keyFile)
    }

    @Test("Encrypted file store with a passphrase", arguments: TokenCacheStoreConformance.checks)
    func withPassphrase(_ check: TokenCacheStoreConformance.Check) async throws {
        try await Self.run(check, on: Self.passphrase)
    }

    /// Runs `check`; a check that does not apply is recorded as a warning with its reason.
    static func run(_ check: TokenCacheStoreConformance.Check, on harness: TokenCacheStoreHarness) async throws {
        if case .notApplicable(let reason) = try await check.run(on: harness) {
            Issue.record("Not applicable to the \(harness.name) store: \(reason)", severity: .warning)
        }
    }
}
