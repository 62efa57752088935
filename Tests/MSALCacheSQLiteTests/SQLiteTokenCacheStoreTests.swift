import Foundation
import MSALCache
import MSALCacheSQLite
import MSALCore
import Synchronization
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

    @Test("Concurrent writers on separate connections lose nothing")
    func concurrentConnections() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        _ = try SQLiteTokenCacheStore(path: path)
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for worker in 0..<6 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let cache = TokenCache(store: try SQLiteTokenCacheStore(path: path))
                    for i in 0..<30 {
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
        #expect(try cache.accounts().count == 180)
        #expect(try Sample.lookup(cache, home: "w5-29.t")?.secret == "AT-5-29")
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

    @Test("A file that is not a database gives a clear error and is left untouched")
    func garbageFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.txt")
        let bytes = Data(String(repeating: "my precious notes, not a database\n", count: 200).utf8)
        try bytes.write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect {
            _ = try SQLiteTokenCacheStore(path: path)
        } throws: { isCacheError($0, containing: "is not an SQLite database") && isCacheError($0, containing: path) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
        #expect(try permissions(path) == 0o644)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
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

    @Test("Access groups in one file never see each other's entries")
    func accessGroups() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("cache.sqlite")
        let one = TokenCache(store: try SQLiteTokenCacheStore(path: path, accessGroup: "com.example.one"))
        let two = TokenCache(store: try SQLiteTokenCacheStore(path: path, accessGroup: "com.example.two"))
        try one.save(accessToken: Sample.accessToken(home: "a.t", secret: "AT-one"), refreshToken: nil, idToken: nil,
                     account: Sample.account(home: "a.t"), appMetadata: nil)
        try two.save(accessToken: Sample.accessToken(home: "a.t", secret: "AT-two"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try Sample.lookup(one, home: "a.t")?.secret == "AT-one")
        #expect(try Sample.lookup(two, home: "a.t")?.secret == "AT-two")
        #expect(try two.accounts().isEmpty)
        try two.removeAccount(homeAccountID: "a.t", environment: Sample.environment, clientID: Sample.clientID)
        #expect(try Sample.lookup(one, home: "a.t")?.secret == "AT-one")
        #expect(try one.accounts().count == 1)
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

        let process = Process()
        process.executableURL = URL(fileURLWithPath: SQLiteShell.path)
        process.arguments = ["-batch", path]
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data("BEGIN IMMEDIATE;\n.system touch \(marker)\n".utf8))
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: marker) && Date() < deadline { usleep(10_000) }
        #expect(FileManager.default.fileExists(atPath: marker))

        #expect {
            try cache.save(accessToken: Sample.accessToken(home: "b.t", secret: "AT-b"), refreshToken: nil, idToken: nil,
                           account: Sample.account(home: "b.t"), appMetadata: nil)
        } throws: { isCacheError($0, containing: "locked by another process") && !String(describing: $0).contains("AT-b") }

        input.fileHandleForWriting.write(Data("COMMIT;\n.quit\n".utf8))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        // Nothing of the failed change was written; the lock is gone and writing works again.
        #expect(try Sample.lookup(cache, home: "b.t") == nil)
        #expect(try cache.accounts().isEmpty)
        try cache.save(accessToken: Sample.accessToken(home: "b.t", secret: "AT-b"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        #expect(try Sample.lookup(TokenCache(store: try SQLiteTokenCacheStore(path: path)), home: "b.t")?.secret == "AT-b")
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
