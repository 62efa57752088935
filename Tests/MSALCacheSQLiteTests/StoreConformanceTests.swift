import CSQLite
import Foundation
import MSALCache
import MSALCacheSQLite
import MSALCore
import MSALTestSupport
import Testing

/// The TokenCacheStore contract (MSALTestSupport's TokenCacheStoreConformance) run on the SQLite store.
@Suite("TokenCacheStore contract: SQLite store")
struct StoreConformanceTests {
    static let sqlite = TokenCacheStoreHarness(
        name: "SQLite", instancesShareState: true, isPersistent: true,
        damage: .init(
            response: .movedAside(movedTo: { ($0 as? SQLiteTokenCacheStore)?.movedAsideCorruptFile }),
            storedBytes: { try Data(contentsOf: URL(fileURLWithPath: $0)) },
            damageStoredBytes: { location in try DamagedDatabase.garbleFirstPage(location) }),
        externalLock: .init(
            makeImpatientStore: { try SQLiteTokenCacheStore(path: $0, busyTimeout: 0.2) },
            whileLocked: DamagedDatabase.holdingWriteLock)
    ) { location, group in
        try group.map { try SQLiteTokenCacheStore(path: location, accessGroup: $0) } ?? SQLiteTokenCacheStore(path: location)
    }

    @Test("SQLite store", arguments: TokenCacheStoreConformance.checks)
    func sqlite(_ check: TokenCacheStoreConformance.Check) async throws {
        if case .notApplicable(let reason) = try await check.run(on: Self.sqlite) {
            Issue.record("Not applicable to the SQLite store: \(reason)", severity: .warning)
        }
    }
}

/// Ways to damage or lock a database file from outside the store.
enum DamagedDatabase {
    /// Overwrites page 1 after the 100-byte header (the schema's b-tree page) with a pattern, so the
    /// file still starts like an SQLite database but its schema cannot be read. Expects no store to
    /// be open (the last one closing checkpoints and removes the WAL).
    static func garbleFirstPage(_ path: String) throws {
        try requireNoWAL(path)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        for index in 100..<min(bytes.count, 4096) { bytes[index] = UInt8(truncatingIfNeeded: index &* 31 &+ 7) }
        try bytes.write(to: URL(fileURLWithPath: path))
    }

    /// Overwrites `count` bytes in the middle of the file, where the entries' pages are.
    static func garbleMiddle(_ path: String, count: Int = 3000) throws {
        try requireNoWAL(path)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let start = bytes.count / 2
        for index in start..<min(bytes.count, start + count) { bytes[index] = UInt8(truncatingIfNeeded: index &* 7) }
        try bytes.write(to: URL(fileURLWithPath: path))
    }

    /// Cuts the file to `fraction` of its length.
    static func truncate(_ path: String, to fraction: Double) throws {
        try requireNoWAL(path)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(Int(Double(bytes.count) * fraction)).write(to: URL(fileURLWithPath: path))
    }

    private static func requireNoWAL(_ path: String) throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? NSNumber)?.intValue ?? 0
        guard size == 0 else { throw Unexpected("a WAL of \(size) bytes is left beside \(path): a store of it is still open") }
    }

    /// Runs `body` while another connection holds the database's write lock (`BEGIN IMMEDIATE`).
    @Sendable static func holdingWriteLock(_ path: String, _ body: () throws -> Void) throws {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else {
            sqlite3_close_v2(db)
            throw Unexpected("cannot open \(path)")
        }
        defer { sqlite3_close_v2(db) }
        sqlite3_busy_timeout(db, 5000)
        guard sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else {
            throw Unexpected("BEGIN IMMEDIATE failed: \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_exec(db, "ROLLBACK", nil, nil, nil) }
        try body()
    }

    struct Unexpected: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
