import CSQLite
import Foundation
import MSALCache
import MSALCacheSQLite
import MSALCore
import Synchronization
import MSALTestSupport
import Testing

@Suite("SQLiteTokenCacheStore")
struct SQLiteTokenCacheStoreTests {
    @Test("Entries survive closing and reopening the file")
    func persistence() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        do {
            let cache = TokenCache(store: try SQLiteTokenCacheStore(path: path))
            try cache.save(accessToken: Sample.accessToken(home: "a.t", secret: "AT-1"), refreshToken: nil, idToken: nil,
                           account: Sample.account(home: "a.t"), appMetadata: nil)
        }
        let reopened = TokenCache(store: try SQLiteTokenCacheStore(path: path))
        #expect(try Sample.lookup(reopened, home: "a.t")?.secret == "AT-1")
        #expect(try reopened.accounts().map(\.homeAccountID) == ["a.t"])
    }

    @Test("A second connection's TokenCache sees the first one's writes through the change stamp")
    func twoConnections() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        let writer = TokenCache(store: try SQLiteTokenCacheStore(path: path))
        let readerStore = try SQLiteTokenCacheStore(path: path)
        let reader = TokenCache(store: readerStore)
        #expect(try Sample.lookup(reader, home: "a.t") == nil)
        let stamp = try readerStore.changeStamp()
        try writer.save(accessToken: Sample.accessToken(home: "a.t", secret: "AT-1"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try readerStore.changeStamp() != stamp)
        #expect(try Sample.lookup(reader, home: "a.t")?.secret == "AT-1")
        try writer.save(accessToken: Sample.accessToken(home: "a.t", target: "user.read mail.read", secret: "AT-2"),
                        refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try Sample.lookup(reader, home: "a.t")?.secret == "AT-2")
        try reader.removeAccount(homeAccountID: "a.t", environment: Sample.environment, clientID: Sample.clientID)
        #expect(try Sample.lookup(writer, home: "a.t") == nil)
    }

    @Test("A second store on a file this process already has open keeps the first one's locks: other processes neither delete its WAL nor miss its writes")
    func secondStoreInOneProcess() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        let first = TokenCache(store: try SQLiteTokenCacheStore(path: path))
        try first.save(accessToken: Sample.accessToken(home: "a.t", secret: "AT-1"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        // Opened and released at once, as a short-lived second application instance does.
        do { _ = try SQLiteTokenCacheStore(path: path).readAll() }
        // Another process opens and closes the database. Had the first store's locks been dropped,
        // this process would take itself for the last connection and delete the WAL and -shm files
        // the first store still writes to.
        #expect(try SQLiteShell.run(path, "SELECT count(*) FROM entries;").contains("1"))
        #expect(FileManager.default.fileExists(atPath: path + "-wal"), "the first store's WAL is still there")
        try first.save(accessToken: Sample.accessToken(home: "b.t", secret: "AT-2"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        // Yet another process sees the first store's latest write, and so does a new store here.
        #expect(try SQLiteShell.run(path, "SELECT count(*) FROM entries WHERE home_account_id = 'b.t';").contains("1"))
        let reopened = TokenCache(store: try SQLiteTokenCacheStore(path: path))
        #expect(try Sample.lookup(reopened, home: "b.t")?.secret == "AT-2")
    }

    @Test("Sixteen connections writing at once on one file all get their turn within the busy timeout")
    func manyConcurrentConnections() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        _ = try SQLiteTokenCacheStore(path: path)
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for worker in 0..<16 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    // Each opens its own connection while the others already write.
                    let cache = TokenCache(store: try SQLiteTokenCacheStore(path: path))
                    for i in 0..<40 {
                        let home = "w\(worker)-\(i).t"
                        try cache.save(accessToken: Sample.accessToken(home: home, secret: "AT-\(worker)-\(i)"), refreshToken: nil,
                                       idToken: nil, account: Sample.account(home: home), appMetadata: nil)
                    }
                } catch {
                    failures.withLock { $0.append(String(describing: error)) }
                }
            }.start()
        }
        group.wait()
        #expect(failures.withLock { $0 } == [])
        let cache = TokenCache(store: try SQLiteTokenCacheStore(path: path))
        #expect(try cache.accounts().count == 640)
        #expect(try Sample.lookup(cache, home: "w15-39.t")?.secret == "AT-15-39")
    }

    @Test("A new file is 0600 (also its WAL), a created directory 0700")
    func fileModes() throws {
        let directory = try TemporaryDirectory()
        let path = directory.url.appendingPathComponent("msal/nested/cache.sqlite").path
        let store = try SQLiteTokenCacheStore(path: path)
        try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "a.t", secret: "AT"))]))
        #expect(try permissions(path) == 0o600)
        #expect(try permissions(path + "-wal") == 0o600)
        #expect(try permissions(directory.url.appendingPathComponent("msal/nested").path) == 0o700)
        #expect(try permissions(directory.url.appendingPathComponent("msal").path) == 0o700)
    }

    @Test("An existing cache readable by others is set to 0600 on open")
    func tightensPermissions() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        _ = try SQLiteTokenCacheStore(path: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        let lines = Mutex<[String]>([])
        let logger = Logger(level: .debug) { _, line in lines.withLock { $0.append(line) } }
        _ = try SQLiteTokenCacheStore(path: path, logger: logger)
        #expect(try permissions(path) == 0o600)
        #expect(lines.withLock { $0.count } == 1)
        #expect(lines.withLock { $0.first?.contains(path) } == false)  // the path is PII: masked
    }

    @Test("A file that is plainly not a database (text, JSON cache, encrypted cache) is refused and left untouched",
          arguments: ForeignFile.allCases)
    func foreignFile(kind: ForeignFile) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.txt")
        let bytes = kind.bytes
        try bytes.write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect {
            _ = try SQLiteTokenCacheStore(path: path)
        } throws: { isCacheError($0, containing: "is not an SQLite database") && isCacheError($0, containing: path) }
        // Another kind of token cache is named, with the backend that opens it; other text is not.
        let hint: String? = switch kind {
        case .jsonCache: "open it with the JSON file backend (msal --cache-backend json)"
        case .encryptedCache: "open it with the encrypted-file backend (msal --cache-backend encrypted-file)"
        case .notes, .utf8TextCutInACharacter: nil
        }
        do {
            _ = try SQLiteTokenCacheStore(path: path)
        } catch {
            #expect(hint.map { error.message.contains($0) } ?? !error.message.contains("backend"), "\(error.message)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
        #expect(try permissions(path) == 0o644)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["notes.txt"])
    }

    enum ForeignFile: String, CaseIterable, Sendable {
        case notes, jsonCache, encryptedCache, utf8TextCutInACharacter

        var bytes: Data {
            switch self {
            case .notes: Data(String(repeating: "my precious notes, not a database\n", count: 200).utf8)
            case .jsonCache: Data(#"{"AccessToken": {}, "RefreshToken": {}, "Account": {}}"#.utf8)
            case .encryptedCache: Data("MSALENC1".utf8) + Data((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37) })
            // Longer than the 4 KiB the store looks at, cut inside a two-byte character there.
            case .utf8TextCutInACharacter: Data(("a" + String(repeating: "é", count: 3000)).utf8)
            }
        }
    }

    // MARK: Damaged files

    enum Damage: String, CaseIterable, Sendable {
        case randomBytes, garbledHeader, truncatedToHalf, truncatedInsideHeader, damagedPages, damagedSchemaPage

        /// Damages the cache database at `path` (no store open).
        func apply(to path: String) throws {
            switch self {
            case .randomBytes:
                var generator = SystemRandomNumberGenerator()
                try Data((0..<5000).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: URL(fileURLWithPath: path))
            case .garbledHeader:
                var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
                for index in 0..<16 { bytes[index] ^= 0x5A }
                try bytes.write(to: URL(fileURLWithPath: path))
            case .truncatedToHalf: try DamagedDatabase.truncate(path, to: 0.5)
            case .truncatedInsideHeader:
                let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
                try bytes.prefix(50).write(to: URL(fileURLWithPath: path))
            case .damagedPages: try DamagedDatabase.garbleMiddle(path)
            case .damagedSchemaPage: try DamagedDatabase.garbleFirstPage(path)
            }
        }
    }

    /// A cache database with `count` entries (large enough to span many pages), closed.
    private func writeCache(_ path: String, count: Int = 200) throws {
        let store = try SQLiteTokenCacheStore(path: path)
        try store.apply(TokenCacheChange(upserts: (0..<count).map {
            .accessToken(Sample.accessToken(home: "h\($0).t", secret: "AT-\($0)-" + String(repeating: "x", count: 300)))
        }))
    }

    @Test("A damaged database is moved aside with its bytes, a new cache works, and the store and the log say so",
          arguments: Damage.allCases)
    func damagedDatabaseMovedAside(damage: Damage) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        try writeCache(path)
        try damage.apply(to: path)
        let damaged = try Data(contentsOf: URL(fileURLWithPath: path))
        let lines = Mutex<[(LogLevel, String)]>([])
        let logger = Logger(level: .debug) { level, line in lines.withLock { $0.append((level, line)) } }

        let before = Self.utcStamp(Date())
        let store = try SQLiteTokenCacheStore(path: path, logger: logger)
        let after = Self.utcStamp(Date())
        let aside = try #require(store.movedAsideCorruptFile)
        // <path>.corrupt-<yyyyMMdd'T'HHmmss'Z'> at the time of the move.
        #expect(aside.hasPrefix(path + ".corrupt-"))
        let stamp = String(aside.dropFirst((path + ".corrupt-").count))
        #expect(stamp.wholeMatch(of: /[0-9]{8}T[0-9]{6}Z/) != nil, "\(stamp)")
        #expect(before <= stamp && stamp <= after)
        #expect(try Data(contentsOf: URL(fileURLWithPath: aside)) == damaged)

        // The new cache is empty, works, and is an ordinary cache for the next store.
        #expect(try store.readAll() == TokenCacheContents())
        try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "new.t", secret: "AT-new"))]))
        let reopened = try SQLiteTokenCacheStore(path: path)
        #expect(reopened.movedAsideCorruptFile == nil)
        #expect(try reopened.readAll().accessTokens.count == 1)
        #expect(try permissions(path) == 0o600)
        #expect(try Data(contentsOf: URL(fileURLWithPath: aside)) == damaged)

        // One warning, with the paths masked as PII.
        let logged = lines.withLock { $0 }
        #expect(logged.count == 1)
        #expect(logged.first?.0 == .warning)
        #expect(logged.first?.1.contains("moved") == true)
        #expect(logged.first?.1.contains(directory.path) == false)
    }

    @Test("With PII logging the warning names the damaged file and where it went")
    func movedAsideLogWithPII() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        try writeCache(path)
        try Damage.damagedPages.apply(to: path)
        let lines = Mutex<[String]>([])
        let logger = Logger(level: .warning, piiLoggingEnabled: true) { _, line in lines.withLock { $0.append(line) } }
        let store = try SQLiteTokenCacheStore(path: path, logger: logger)
        let aside = try #require(store.movedAsideCorruptFile)
        let line = try #require(lines.withLock { $0.first })
        #expect(line.contains(path) && line.contains(aside))
        #expect(!line.contains("AT-"))  // no token from the damaged file
    }

    @Test("The -wal, -shm and -journal files of a damaged database move with it; taken names are not reused")
    func sidecarFilesMoveAlong() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        try Damage.randomBytes.apply(to: path)
        let sidecars = ["-wal": Data("old wal".utf8), "-shm": Data("old shm".utf8), "-journal": Data("old journal".utf8)]
        for (suffix, bytes) in sidecars { try bytes.write(to: URL(fileURLWithPath: path + suffix)) }
        let first = try #require(try SQLiteTokenCacheStore(path: path).movedAsideCorruptFile)
        for (suffix, bytes) in sidecars {
            #expect(try Data(contentsOf: URL(fileURLWithPath: first + suffix)) == bytes, "\(suffix)")
        }
        #expect(!FileManager.default.fileExists(atPath: path + "-journal"))

        // Damaged again (most likely within the same second): the second file gets a name of its own.
        try Damage.randomBytes.apply(to: path)
        let again = try Data(contentsOf: URL(fileURLWithPath: path))
        let second = try #require(try SQLiteTokenCacheStore(path: path).movedAsideCorruptFile)
        #expect(second != first)
        #expect(try Data(contentsOf: URL(fileURLWithPath: second)) == again)
        #expect(try Data(contentsOf: URL(fileURLWithPath: first)) != again)
        #expect(try Data(contentsOf: URL(fileURLWithPath: first + "-wal")) == sidecars["-wal"])
    }

    @Test("Stores opening one damaged file at once move it aside once and then share the new cache")
    func concurrentOpenersMoveOnce() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        try writeCache(path)
        try Damage.damagedPages.apply(to: path)
        let opened = Mutex<[Result<SQLiteTokenCacheStore, MSALError>]>([])
        let group = DispatchGroup()
        for _ in 0..<6 {
            group.enter()
            Thread {
                defer { group.leave() }
                let result = Result { () throws(MSALError) in try SQLiteTokenCacheStore(path: path) }
                opened.withLock { $0.append(result) }
            }.start()
        }
        group.wait()
        let stores = try opened.withLock { $0 }.map { try $0.get() }
        #expect(stores.compactMap(\.movedAsideCorruptFile).count == 1)
        let asideFiles = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasPrefix("cache.sqlite.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
        #expect(asideFiles.count == 1)
        for (index, store) in stores.enumerated() {
            try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "s\(index).t", secret: "AT"))]))
        }
        #expect(try stores[0].readAll().accessTokens.count == stores.count)
    }

    /// A second connection, used by one thread at a time (the test's, then one other thread).
    struct OtherConnection: @unchecked Sendable {
        let handle: OpaquePointer?

        /// Creates a new database at `path` (not yet WAL) and takes its write lock (`BEGIN IMMEDIATE`),
        /// as a process switching the same new file to WAL at that moment holds it.
        static func holdingWriteLockOfNewFile(_ path: String) -> OtherConnection {
            var db: OpaquePointer?
            #expect(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK)
            #expect(sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)
            return OtherConnection(handle: db)
        }

        func close() { sqlite3_close_v2(handle) }
    }

    @Test("Opening a new file while another process is also switching it to WAL waits for it, though SQLite answers busy at once there")
    func walSwitchWaitsForWriter() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        // The switch reads the file first, then asks for the write lock the other connection
        // holds: SQLite answers that upgrade SQLITE_BUSY at once, without calling the busy handler
        // (waiting there could deadlock).
        let other = OtherConnection.holdingWriteLockOfNewFile(path)
        defer { other.close() }
        let released = Atomic<Bool>(false)
        let releasing = Thread {
            usleep(300_000)
            released.store(true, ordering: .releasing)
            sqlite3_exec(other.handle, "COMMIT", nil, nil, nil)
        }
        releasing.start()
        let store = try SQLiteTokenCacheStore(path: path, busyTimeout: 5)
        let openedAfterRelease = released.load(ordering: .acquiring)
        #expect(openedAfterRelease, "the store opened once the other connection was done")
        try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "a.t", secret: "AT"))]))
        #expect(try SQLiteTokenCacheStore(path: path).readAll().accessTokens.count == 1)
    }

    @Test("While the store waits to switch a new file to WAL, another connection switches it and writes: the store opens once that write ends")
    func walSwitchedMeanwhile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        let other = OtherConnection.holdingWriteLockOfNewFile(path)
        defer { other.close() }
        let codes = Mutex<[Int32]>([])
        let switching = Thread {
            usleep(200_000)
            sqlite3_busy_timeout(other.handle, 5000)
            var results: [Int32] = []
            results.append(sqlite3_exec(other.handle, "COMMIT", nil, nil, nil))
            results.append(sqlite3_exec(other.handle, "PRAGMA journal_mode = WAL", nil, nil, nil))
            results.append(sqlite3_exec(other.handle, "BEGIN IMMEDIATE", nil, nil, nil))
            usleep(300_000)
            results.append(sqlite3_exec(other.handle, "COMMIT", nil, nil, nil))
            codes.withLock { $0 = results }
        }
        switching.start()
        let store = try SQLiteTokenCacheStore(path: path, busyTimeout: 5)
        try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "a.t", secret: "AT"))]))
        #expect(try SQLiteTokenCacheStore(path: path).readAll().accessTokens.count == 1)
        while codes.withLock({ $0.count }) < 4 { usleep(10_000) }
        #expect(codes.withLock { $0 } == [SQLITE_OK, SQLITE_OK, SQLITE_OK, SQLITE_OK])
    }

    @Test("Opening a new file whose write lock another connection keeps fails after the busy timeout, with a clear error")
    func walSwitchTimesOut() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        let other = OtherConnection.holdingWriteLockOfNewFile(path)
        defer { other.close() }
        let started = ContinuousClock.now
        let error = #expect(throws: MSALError.self) { try SQLiteTokenCacheStore(path: path, busyTimeout: 0.3) }
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        #expect(error?.internalCode == .cacheError)
        #expect(error?.message.contains("busy timeout (0.3 s)") == true)
        #expect(error?.message.contains("switching the token cache to WAL") == true)
        sqlite3_exec(other.handle, "ROLLBACK", nil, nil, nil)
    }

    @Test("An empty (0-byte) file is a new cache, not a damaged one")
    func emptyFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(), attributes: [.posixPermissions: 0o600]))
        let store = try SQLiteTokenCacheStore(path: path)
        #expect(store.movedAsideCorruptFile == nil)
        try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "a.t", secret: "AT"))]))
        #expect(try SQLiteTokenCacheStore(path: path).readAll().accessTokens.count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.contains("corrupt") })
    }

    @Test("A valid SQLite database with another application_id is refused and left untouched, not moved aside")
    func otherApplicationID() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("other.db")
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK)
        #expect(sqlite3_exec(db, "PRAGMA application_id = 42; CREATE TABLE t (x); INSERT INTO t VALUES (1);", nil, nil, nil) == SQLITE_OK)
        sqlite3_close_v2(db)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect {
            _ = try SQLiteTokenCacheStore(path: path)
        } throws: { isCacheError($0, containing: "another program (application_id 42") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["other.db"])
    }

    /// `date` as `yyyyMMdd'T'HHmmss'Z'` in UTC.
    static func utcStamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }

    @Test("A new file is switched to WAL; a file already in WAL is opened as it is, also while another process reads it", .enabled(if: SQLiteShell.isAvailable))
    func walModeIsKept() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        do {
            let store = try SQLiteTokenCacheStore(path: path)
            try store.apply(TokenCacheChange(upserts: [.account(Sample.account(home: "a.t"))]))
        }
        #expect(try SQLiteShell.run(path, "PRAGMA journal_mode;").trimmingCharacters(in: .whitespacesAndNewlines) == "wal")
        // A second store opens the file (now in WAL) and reads what the first wrote.
        let again = try SQLiteTokenCacheStore(path: path)
        #expect(try again.readAll().accounts.count == 1)
        #expect(try SQLiteShell.run(path, "PRAGMA journal_mode;").trimmingCharacters(in: .whitespacesAndNewlines) == "wal")
    }

    @Test("Another program's SQLite database is refused and left untouched", .enabled(if: SQLiteShell.isAvailable))
    func foreignDatabase() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("other.db")
        try SQLiteShell.run(path, "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('keep me');")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect {
            _ = try SQLiteTokenCacheStore(path: path)
        } throws: { isCacheError($0, containing: "another program") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try SQLiteShell.run(path, "SELECT text FROM notes;").contains("keep me"))
    }

    @Test("A cache from a newer schema version is refused with a clear error", .enabled(if: SQLiteShell.isAvailable))
    func newerSchema() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        _ = try SQLiteTokenCacheStore(path: path)
        try SQLiteShell.run(path, "PRAGMA user_version = 99;")
        #expect {
            _ = try SQLiteTokenCacheStore(path: path)
        } throws: { isCacheError($0, containing: "newer swift-msal") && isCacheError($0, containing: "99") }
        #expect(try SQLiteShell.run(path, "PRAGMA user_version;").contains("99"))
    }

    /// A cache with two accounts, rewritten into the layout of earlier versions: the same columns
    /// in a `WITHOUT ROWID` table keyed by (access group, kind, key).
    private func cacheInWithoutRowIDLayout(_ path: String) throws {
        do {
            let cache = TokenCache(store: try SQLiteTokenCacheStore(path: path))
            for (home, secret) in [("a.t", "AT-1"), ("b.t", "AT-2")] {
                try cache.save(accessToken: Sample.accessToken(home: home, secret: secret), refreshToken: nil, idToken: nil,
                               account: Sample.account(home: home), appMetadata: nil)
            }
        }
        try SQLiteShell.run(path, """
            BEGIN;
            CREATE TABLE entries_old (
                access_group TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, home_account_id TEXT NOT NULL,
                environment TEXT NOT NULL, client_id TEXT NOT NULL, realm TEXT NOT NULL, json TEXT NOT NULL,
                PRIMARY KEY (access_group, kind, key)
            ) WITHOUT ROWID;
            INSERT INTO entries_old SELECT access_group, kind, key, home_account_id, environment, client_id, realm, json FROM entries;
            DROP TABLE entries;
            ALTER TABLE entries_old RENAME TO entries;
            CREATE INDEX entries_by_account ON entries (access_group, home_account_id, environment, client_id, realm);
            COMMIT;
            """)
        #expect(try SQLiteShell.run(path, "SELECT sql FROM sqlite_master WHERE name = 'entries';").contains("WITHOUT ROWID"))
    }

    private func entriesTable(_ path: String) throws -> String {
        try SQLiteShell.run(path, "SELECT sql FROM sqlite_master WHERE name = 'entries';")
    }

    @Test("A cache of earlier versions (WITHOUT ROWID entries) is rewritten on open into the rowid table, entries and schema version kept",
          .enabled(if: SQLiteShell.isAvailable))
    func rewritesWithoutRowIDLayout() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        try cacheInWithoutRowIDLayout(path)
        let before = try SQLiteShell.run(path, "SELECT kind, key, json FROM entries ORDER BY kind, key;")

        let store = try SQLiteTokenCacheStore(path: path)
        #expect(store.movedAsideCorruptFile == nil)
        let table = try entriesTable(path)
        #expect(!table.contains("WITHOUT ROWID") && table.contains("UNIQUE"), "\(table)")
        // Earlier versions check the version and read this table with the same statements.
        #expect(try SQLiteShell.run(path, "PRAGMA user_version;").trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        #expect(try SQLiteShell.run(path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'entries_by_account';")
            .trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        #expect(try SQLiteShell.run(path, "SELECT kind, key, json FROM entries ORDER BY kind, key;") == before)
        let cache = TokenCache(store: store)
        #expect(try Sample.lookup(cache, home: "a.t")?.secret == "AT-1")
        #expect(try cache.accounts().map(\.homeAccountID).sorted() == ["a.t", "b.t"])
        // The rewritten table still replaces an entry written again under its key.
        try cache.save(accessToken: Sample.accessToken(home: "a.t", secret: "AT-3"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try Sample.lookup(TokenCache(store: try SQLiteTokenCacheStore(path: path)), home: "a.t")?.secret == "AT-3")
        #expect(try SQLiteShell.run(path, "SELECT count(*) FROM entries WHERE home_account_id = 'a.t' AND kind = 'AccessToken';")
            .trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    }

    @Test("A cache of earlier versions that cannot be rewritten (its lock held by another process) is used as it is, and rewritten at a later open",
          .enabled(if: SQLiteShell.isAvailable))
    func usesWithoutRowIDLayoutWhenLocked() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        try cacheInWithoutRowIDLayout(path)
        let lock = try ShellWriteLock(database: path, marker: directory.file("locked"))
        let store = try SQLiteTokenCacheStore(path: path, busyTimeout: 0.2)
        let cache = TokenCache(store: store)
        #expect(try Sample.lookup(cache, home: "b.t")?.secret == "AT-2")
        #expect(try cache.accounts().map(\.homeAccountID).sorted() == ["a.t", "b.t"])
        try lock.release()
        #expect(try entriesTable(path).contains("WITHOUT ROWID"))
        // The older table takes writes as the rowid one does: a key written again is replaced.
        try cache.save(accessToken: Sample.accessToken(home: "b.t", secret: "AT-4"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try SQLiteShell.run(path, "SELECT count(*) FROM entries WHERE home_account_id = 'b.t' AND kind = 'AccessToken';")
            .trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        let reopened = TokenCache(store: try SQLiteTokenCacheStore(path: path))
        #expect(!(try entriesTable(path).contains("WITHOUT ROWID")))
        #expect(try Sample.lookup(reopened, home: "b.t")?.secret == "AT-4")
        #expect(try Sample.lookup(reopened, home: "a.t")?.secret == "AT-1")
    }

    @Test("A path whose directory cannot exist gives a clear error")
    func badDirectory() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("a-file")
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        #expect {
            _ = try SQLiteTokenCacheStore(path: file + "/sub/cache.sqlite")
        } throws: { isCacheError($0, containing: "is not a directory") }
        #expect {
            _ = try SQLiteTokenCacheStore(path: directory.path)
        } throws: { isCacheError($0, containing: "not a regular file") }
    }

    @Test("A write by another process (the sqlite3 shell) is seen by an open TokenCache", .enabled(if: SQLiteShell.isAvailable))
    func otherProcessWrites() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        let cache = TokenCache(store: try SQLiteTokenCacheStore(path: path))
        #expect(try Sample.lookup(cache, home: "p.t") == nil)
        let entry = CacheEntry.accessToken(Sample.accessToken(home: "p.t", secret: "AT-from-other-process"))
        let json = String(decoding: try entry.msalJSONData(), as: UTF8.self)
        let values = ["com.microsoft.adalcache", "AccessToken", entry.key, "p.t", Sample.environment, Sample.clientID, Sample.tenant, json]
        try SQLiteShell.run(path, "INSERT INTO entries VALUES (\(values.map(SQLiteShell.quote).joined(separator: ", ")));")
        #expect(try Sample.lookup(cache, home: "p.t")?.secret == "AT-from-other-process")
        try SQLiteShell.run(path, "DELETE FROM entries;")
        #expect(try Sample.lookup(cache, home: "p.t") == nil)
    }

    @Test("A database locked by another process beyond the busy timeout gives a clear error and writes nothing",
          .enabled(if: SQLiteShell.isAvailable))
    func lockedByOtherProcess() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        let marker = directory.file("locked")
        let store = try SQLiteTokenCacheStore(path: path, busyTimeout: 0.2)
        let cache = TokenCache(store: store)
        try cache.save(accessToken: Sample.accessToken(home: "a.t", secret: "AT-1"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)

        let lock = try ShellWriteLock(database: path, marker: marker)

        #expect {
            try cache.save(accessToken: Sample.accessToken(home: "b.t", secret: "AT-b"), refreshToken: nil, idToken: nil,
                           account: Sample.account(home: "b.t"), appMetadata: nil)
        } throws: {
            isCacheError($0, containing: "locked by another process") && isCacheError($0, containing: "busy timeout (0.2 s)")
                && !String(describing: $0).contains("AT-b")
        }

        try lock.release()
        // Nothing of the failed change was written; the lock is gone and writing works again.
        #expect(try Sample.lookup(cache, home: "b.t") == nil)
        #expect(try cache.accounts().isEmpty)
        try cache.save(accessToken: Sample.accessToken(home: "b.t", secret: "AT-b"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try Sample.lookup(TokenCache(store: try SQLiteTokenCacheStore(path: path)), home: "b.t")?.secret == "AT-b")
    }

    @Test("A writer waits for another process's transaction and succeeds once it ends within the busy timeout",
          .enabled(if: SQLiteShell.isAvailable))
    func waitsForOtherProcess() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        let store = try SQLiteTokenCacheStore(path: path, busyTimeout: 30)
        try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "a.t", secret: "AT-a"))]))
        let lock = try ShellWriteLock(database: path, marker: directory.file("locked"))

        let released = Atomic<Bool>(false)
        let outcome = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            defer { done.signal() }
            do {
                try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "b.t", secret: "AT-b"))]))
                // It cannot have committed while the other process held the lock.
                outcome.withLock { $0 = released.load(ordering: .acquiring) ? "committed after the release" : "committed while locked" }
            } catch {
                outcome.withLock { $0 = "failed: \(error)" }
            }
        }.start()
        usleep(300_000)  // the writer is waiting in the busy handler meanwhile
        released.store(true, ordering: .releasing)
        try lock.release()
        done.wait()
        #expect(outcome.withLock { $0 } == "committed after the release")
        #expect(try SQLiteTokenCacheStore(path: path).readAll().accessTokens.count == 2)
    }

    @Test("The MSAL Python fixture imported into SQLite answers the same lookups")
    func fixtureThroughSQLite() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("MSALCacheTests/Fixtures")
        let contents = try TokenCacheContents(msalJSON: Data(contentsOf: fixtures.appendingPathComponent("multi_tenant.json")))
        let directory = try TemporaryDirectory()
        let store = try SQLiteTokenCacheStore(path: directory.file("cache.sqlite"))
        let upserts = CacheEntryKind.allCases.flatMap { contents.entries(of: $0).map(\.entry) }
        try store.apply(TokenCacheChange(upserts: upserts))
        #expect(try store.readAll() == contents)  // MSAL Python's keys are this version's keys
        let cache = TokenCache(store: try SQLiteTokenCacheStore(path: directory.file("cache.sqlite")))
        let alice = "0a0a0a0a-0000-4000-8000-0000000a11ce.aaaaaaaa-0000-4000-8000-00000000aaaa"
        let found = try cache.accessToken(
            homeAccountID: alice, environment: Sample.environment, realm: "bbbbbbbb-0000-4000-8000-00000000bbbb",
            clientID: Sample.clientID, scopes: ["https://management.core.windows.net//.default"])
        #expect(found?.secret == "AT-3")
        #expect(try cache.refreshTokens(homeAccountID: alice, environment: Sample.environment, clientID: Sample.clientID).map(\.secret) == ["RT-2", "RT-1"])
    }

    @Test("The default path follows XDG_DATA_HOME, else ~/.local/share")
    func defaultPath() {
        #expect(SQLiteTokenCacheStore.defaultPath(environment: ["XDG_DATA_HOME": "/data/", "HOME": "/home/u"]) == "/data/msal/msal_cache.sqlite")
        #expect(SQLiteTokenCacheStore.defaultPath(environment: ["XDG_DATA_HOME": "relative", "HOME": "/home/u"]) == "/home/u/.local/share/msal/msal_cache.sqlite")
        #expect(SQLiteTokenCacheStore.defaultPath(environment: ["HOME": "/home/u"]) == "/home/u/.local/share/msal/msal_cache.sqlite")
        #expect(SQLiteTokenCacheStore.defaultPath().hasSuffix("/msal/msal_cache.sqlite"))
    }
}
