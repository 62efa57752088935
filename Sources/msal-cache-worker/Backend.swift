import Foundation
import MSALCache
import MSALCacheEncryptedFile
import MSALCacheKeyring
import MSALCacheSQLite
import MSALCore
internal import CSQLite

/// The persistent token cache backends the process tests run against.
///
/// Adding one (the Secret Service keyring, `KeyringTokenCacheStore`) is one case here, its arm in
/// each switch, and one dependency of this target: its ``makeStore(_:)`` uses `path` as the lock
/// directory, ``isolatesByPath`` is `false` (the keyring is shared, so tests give each run access
/// groups of its own and empty them with ``removeAllEntries(_:)`` when done), ``lockFilePath(_:)``
/// is the keyring store's lock file in that directory, it leaves no temporary files, and
/// ``integrityProblem(_:)`` reads the store. The tests run every case of ``allCases``.
enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case json
    case encryptedFile = "encrypted-file"
    /// The Secret Service keyring: `path` is the store's lock directory.
    case keyring

    var description: String { rawValue }

    /// Whether two stores with different `path`s never share entries. When `false`, tests keep
    /// runs apart with access groups of their own.
    var isolatesByPath: Bool { self != .keyring }

    /// The store's file name in a test directory.
    var defaultFileName: String {
        switch self {
        case .sqlite: "cache.sqlite"
        case .json: "msal_token_cache.json"
        case .encryptedFile: "msal_token_cache.bin"
        case .keyring: "keyring-locks"
        }
    }

    /// Options for a store in `directory` (the encrypted file gets its key file there too).
    func options(directory: String, accessGroup: String = TokenCacheAccessGroup.default) -> StoreOptions {
        StoreOptions(
            path: directory + "/" + defaultFileName,
            keyFile: self == .encryptedFile ? directory + "/cache.key" : nil,
            accessGroup: accessGroup)
    }

    /// Opens the store `options` describe.
    /// - Throws: ``MSALError`` as the backend's initializer does; `.internal(.invalidParameter)`
    ///   when the encrypted file has no key file.
    func makeStore(_ options: StoreOptions) throws(MSALError) -> any TokenCacheStore {
        switch self {
        case .sqlite:
            guard let timeout = options.lockTimeout else { return try SQLiteTokenCacheStore(path: options.path, accessGroup: options.accessGroup) }
            return try SQLiteTokenCacheStore(path: options.path, accessGroup: options.accessGroup, busyTimeout: timeout)
        case .json:
            guard let timeout = options.lockTimeout else { return try JSONFileTokenCacheStore(path: options.path, accessGroup: options.accessGroup) }
            return try JSONFileTokenCacheStore(path: options.path, accessGroup: options.accessGroup, lockTimeout: timeout)
        case .encryptedFile:
            guard let keyFile = options.keyFile else {
                throw .internal(.invalidParameter, "--key-file is required for the encrypted-file backend")
            }
            guard let timeout = options.lockTimeout else {
                return try EncryptedFileTokenCacheStore(path: options.path, keySource: .keyFile(path: keyFile), accessGroup: options.accessGroup)
            }
            return try EncryptedFileTokenCacheStore(
                path: options.path, keySource: .keyFile(path: keyFile), accessGroup: options.accessGroup, lockTimeout: timeout)
        case .keyring:
            return try KeyringTokenCacheStore(
                accessGroup: options.accessGroup, lockDirectory: options.path, lockTimeout: options.lockTimeout ?? 10)
        }
    }

    /// The file whose `flock` serializes writers, or `nil` when the lock is inside the store
    /// (SQLite's own locks).
    func lockFilePath(_ options: StoreOptions) -> String? {
        switch self {
        case .sqlite: nil
        case .json, .encryptedFile: options.path + ".lock"
        case .keyring: options.path + "/keyring." + options.accessGroup + ".lock"
        }
    }

    /// Temporary files beside the store that a writer killed mid-write may leave: the names
    /// ``LockedFile`` gives them (`.<name>.tmp-<pid>-<random>`). SQLite's `-wal` and `-shm` files
    /// are part of the store, not leftovers.
    func temporaryFiles(_ options: StoreOptions) -> [String] {
        if self == .keyring { return [] }  // it writes no files but its lock file
        let directory = (options.path as NSString).deletingLastPathComponent
        let name = (options.path as NSString).lastPathComponent
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? []
        return names.filter { $0.hasPrefix("." + name + ".tmp-") }.sorted()
    }

    /// Removes every entry of the store's access group: how tests clean up a backend that does not
    /// isolate by path (on the others, removing the test directory is enough).
    /// - Throws: ``MSALError`` as the store does.
    func removeAllEntries(_ options: StoreOptions) throws(MSALError) {
        let store = try makeStore(options)
        let contents = try store.readAll()
        let removals = CacheEntryKind.allCases.flatMap { kind in
            contents.entries(of: kind).map { CacheEntryRemoval(kind: kind, key: $0.key) }
        }
        try store.apply(TokenCacheChange(removals: removals))
    }

    /// Checks the store's storage below the ``TokenCacheStore`` API: SQLite's
    /// `PRAGMA integrity_check`; for the files, that they read back through a fresh store.
    /// - Returns: `nil` when sound, else what is wrong (never a secret).
    func integrityProblem(_ options: StoreOptions) -> String? {
        switch self {
        case .sqlite:
            return SQLiteCheck.integrityProblem(path: options.path)
        case .json, .encryptedFile, .keyring:
            do {
                _ = try makeStore(options).readAll()
                return nil
            } catch {
                return error.message
            }
        }
    }
}

/// Where a store lives and how it is opened: the `--backend`'s options.
struct StoreOptions: Sendable, Hashable {
    var path: String
    var keyFile: String?
    var accessGroup: String = TokenCacheAccessGroup.default
    /// Seconds a writer waits for the lock (SQLite's busy timeout, the file stores' lock timeout);
    /// `nil` for the backend's default, which the tests use unless they test the timeout itself.
    var lockTimeout: TimeInterval?

    /// The command-line arguments that give a worker these options, after `--backend <backend>`.
    var arguments: [String] {
        var arguments = ["--path", path, "--access-group", accessGroup]
        if let lockTimeout { arguments += ["--lock-timeout", String(lockTimeout)] }
        if let keyFile { arguments += ["--key-file", keyFile] }
        return arguments
    }
}

/// Direct SQLite access for what the store's API does not offer: an integrity check and holding
/// the write lock.
enum SQLiteCheck {
    /// Runs `PRAGMA integrity_check` on a read-only connection.
    /// - Returns: `nil` when SQLite answers `ok`, else its answer or the error.
    static func integrityProblem(path: String) -> String? {
        var handle: OpaquePointer?
        defer { sqlite3_close_v2(handle) }
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else {
            return "cannot open: \(String(cString: sqlite3_errmsg(handle)))"
        }
        sqlite3_busy_timeout(handle, 10_000)
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        guard sqlite3_prepare_v2(handle, "PRAGMA integrity_check", -1, &statement, nil) == SQLITE_OK else {
            return "cannot check: \(String(cString: sqlite3_errmsg(handle)))"
        }
        var answers: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            answers.append(sqlite3_column_text(statement, 0).map { String(cString: $0) } ?? "")
        }
        return answers == ["ok"] ? nil : "integrity_check: \(answers.joined(separator: "; "))"
    }

    /// Opens the database and takes its write lock with `BEGIN IMMEDIATE`, which a writer holds for
    /// its whole change; the connection is never closed (the process is meant to be killed).
    /// - Returns: `nil` when the lock is held, else the error.
    static func holdWriteLock(path: String) -> String? {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else {
            return "cannot open: \(String(cString: sqlite3_errmsg(handle)))"
        }
        sqlite3_busy_timeout(handle, 10_000)
        guard sqlite3_exec(handle, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else {
            return "cannot begin: \(String(cString: sqlite3_errmsg(handle)))"
        }
        return nil
    }
}
