import Foundation
import MSALCache
import MSALCore
import MSALTestSupport
import Testing

/// The TokenCacheStore contract (MSALTestSupport's TokenCacheStoreConformance) run on the stores of
/// MSALCache: in memory and the JSON file.
@Suite("TokenCacheStore contract: in-memory and JSON file stores")
struct StoreConformanceTests {
    static let inMemory = TokenCacheStoreHarness(name: "in-memory", instancesShareState: false, isPersistent: false) { _, group in
        group.map { InMemoryTokenCacheStore(accessGroup: $0) } ?? InMemoryTokenCacheStore()
    }

    static let jsonFile = TokenCacheStoreHarness(
        name: "JSON file", instancesShareState: true, isPersistent: true,
        damage: .init(
            response: .refused,
            storedBytes: { try Data(contentsOf: URL(fileURLWithPath: $0)) },
            damageStoredBytes: { location in
                // Half of the JSON text: no longer a JSON object.
                let bytes = try Data(contentsOf: URL(fileURLWithPath: location))
                try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: location))
            }),
        externalLock: .init(
            makeImpatientStore: { try JSONFileTokenCacheStore(path: $0, lockTimeout: 1) },
            whileLocked: holdingFileLock)
    ) { location, group in
        try group.map { try JSONFileTokenCacheStore(path: location, accessGroup: $0) } ?? JSONFileTokenCacheStore(path: location)
    }

    @Test("In-memory store", arguments: TokenCacheStoreConformance.checks)
    func inMemory(_ check: TokenCacheStoreConformance.Check) async throws {
        try await runConformance(check, on: Self.inMemory)
    }

    @Test("JSON file store", arguments: TokenCacheStoreConformance.checks)
    func jsonFile(_ check: TokenCacheStoreConformance.Check) async throws {
        try await runConformance(check, on: Self.jsonFile)
    }
}

/// Runs `check` on `harness`; a check that does not apply is recorded as a warning with its reason.
func runConformance(_ check: TokenCacheStoreConformance.Check, on harness: TokenCacheStoreHarness) async throws {
    if case .notApplicable(let reason) = try await check.run(on: harness) {
        Issue.record("Not applicable to the \(harness.name) store: \(reason)", severity: .warning)
    }
}

/// Runs `body` while holding the `<location>.lock` flock the file stores take (a lock of its own
/// open file description, so the stores of this process wait for it as another process's).
@Sendable func holdingFileLock(_ location: String, _ body: () throws -> Void) throws {
    var failure: (any Error)?
    try LockedFile(path: location).withExclusiveLock { () throws(MSALError) in
        do { try body() } catch { failure = error }
    }
    if let failure { throw failure }
}
