import Foundation
import MSALCache
@testable import MSALCacheKeyring
import MSALCore
import MSALTestSupport
import Testing

extension KeyringTests {
/// The TokenCacheStore contract (MSALTestSupport's TokenCacheStoreConformance) run on the keyring
/// store. A check's location becomes the store's test namespace (an extra item attribute, so checks
/// running at once never share items, also those of the default access group) and the directory of
/// its lock files.
@Suite("TokenCacheStore contract: keyring")
struct Conformance {
    /// The attribute a test namespace sets.
    static let namespaceAttribute = "swift-msal-test-namespace"

    /// A store of the check's location. The lock timeout is generous: every test of the run shares one
    /// gnome-keyring daemon, which rewrites its keyring file for every item it writes, so on a loaded
    /// machine six writers queue for longer than the default 10 seconds (a hang guard, not a speed limit).
    static func store(_ location: String, group: String?, lockTimeout: TimeInterval = 120) throws -> KeyringTokenCacheStore {
        try KeyringTokenCacheStore(
            accessGroup: group ?? TokenCacheAccessGroup.default, lockDirectory: location + "-locks", testNamespace: location,
            lockTimeout: lockTimeout, serviceTimeout: 10, logger: .none)
    }

    static let harness = TokenCacheStoreHarness(
        name: "Secret Service keyring",
        instancesShareState: true,
        isPersistent: true,
        // No damage hook: the keyring has no file whose bytes a harness could damage; an item whose
        // secret is not a swift-msal record is skipped (and replaced or removed by a change of its key).
        externalLock: .init(
            makeImpatientStore: { location in try store(location, group: nil, lockTimeout: 0.2) },
            whileLocked: { location, body in
                let lock = KeyringLockFile(
                    directory: location + "-locks", accessGroup: TokenCacheAccessGroup.default,
                    attributes: [namespaceAttribute: location], timeout: 10)
                let descriptor = open(lock.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
                guard descriptor >= 0, flock(descriptor, LOCK_EX) == 0 else { throw POSIXError(.EIO) }
                defer { close(descriptor) }  // another open file description: excludes the store's
                try body()
            }),
        removeStore: { location in
            let attributes = [KeyringItemLayout.schemaAttribute: KeyringItemLayout.tokenCacheSchema, namespaceAttribute: location]
            try SecretServiceClient.shared.withSession(timeout: 10) { session throws(KeyringProblem) in
                for path in try session.search(attributes).unlocked { try session.delete(path) }
            }
        },
        makeStore: { location, group in try store(location, group: group) })

    @Test("Keyring store", arguments: TokenCacheStoreConformance.checks)
    func keyring(_ check: TokenCacheStoreConformance.Check) async throws {
        if case .notApplicable(let reason) = try await check.run(on: Self.harness) {
            Issue.record("Not applicable to the \(Self.harness.name) store: \(reason)", severity: .warning)
        }
    }
}
}
