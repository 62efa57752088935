public import Foundation
public import MSALCache
public import MSALCore
internal import CSQLite
internal import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A token cache store in an SQLite database file, safe to share between threads and processes.
///
/// - **Layout.** One table of entries keyed by (access group, section, key) with the identifying
///   columns (home account ID, environment, client ID, realm; lowercased) indexed, and each entry's
///   MSAL JSON, so fields this version does not model survive. The schema version is kept in
///   `PRAGMA user_version` and the file is marked as swift-msal's with `PRAGMA application_id`.
/// - **Guarantees** (those of ``TokenCacheStore``): every ``apply(_:)`` is one `BEGIN IMMEDIATE`
///   transaction, so it is atomic and serialized with writers in other processes (they wait up to
///   the busy timeout); readers see committed states only (WAL journal); it survives crashes and
///   restarts. ``changeStamp()`` is `PRAGMA data_version` plus this connection's own write counter.
/// - **Files.** A new database file is created with mode 0600 (SQLite gives its `-wal` and `-shm`
///   files the same mode) and missing directories with mode 0700. An existing database of ours that
///   is readable by group or others is set to 0600.
/// - **Never overwrites what is not ours.** A file that is not an SQLite database, an SQLite
///   database of another program, or one written by a newer swift-msal is refused with an error and
///   left untouched.
/// - **Access groups.** Entries of different access groups share the file but never see each other
///   (the idea of MSAL for iOS/macOS keychain access groups).
///
/// Errors are ``MSALError`` `.internal(.cacheError)` whose message names the path, says what went
/// wrong and what to do; never a token.
public final class SQLiteTokenCacheStore: TokenCacheStore {
    /// The schema version this version writes and reads (`PRAGMA user_version`).
    public static let schemaVersion: Int64 = 1
    /// The `PRAGMA application_id` that marks a database as swift-msal's token cache ("MSAL" in ASCII).
    public static let applicationID: Int64 = 0x4D53_414C

    /// The database file's path.
    public let path: String
    /// The access group whose entries this store reads and writes.
    public let accessGroup: String

    private let connection: Mutex<SQLiteConnection>

    /// Opens (creating if needed) the token cache database at `path`.
    ///
    /// Creates missing directories (mode 0700) and a missing file (mode 0600), switches the database
    /// to WAL, creates the schema on a new file and checks it on an existing one.
    ///
    /// - Parameters:
    ///   - path: the database file, e.g. ``defaultPath()``.
    ///   - accessGroup: the partition of the file this store uses; stores with different groups on one
    ///     file never see each other's entries. Default `com.microsoft.adalcache`, MSAL for
    ///     iOS/macOS's default keychain group.
    ///   - busyTimeout: how long, in seconds, to wait for another process holding the database lock
    ///     before failing (default 5).
    ///   - logger: receives a warning when file permissions are tightened (the path is PII).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the directory cannot be created or is not
    ///   a directory, the file cannot be created or opened, it is not an SQLite database or is
    ///   another program's database or was written by a newer swift-msal (all left untouched), it is
    ///   corrupt, or it stays locked beyond `busyTimeout`; `.internal(.invalidParameter)` for an invalid access group.
    public init(
        path: String,
        accessGroup: String = TokenCacheAccessGroup.default,
        busyTimeout: TimeInterval = 5,
        logger: Logger = .none
    ) throws(MSALError) {
        self.path = path
        self.accessGroup = try TokenCacheAccessGroup.validate(accessGroup)
        try Self.prepareDirectory(for: path)
        let created = try Self.createFileIfMissing(path)
        let connection = try SQLiteConnection(path: path, busyTimeout: busyTimeout)
        try Self.setUpSchema(connection)
        if !created { Self.tightenPermissions(path, logger: logger) }
        self.connection = Mutex(connection)
    }

    /// The default location of the token cache: `$XDG_DATA_HOME/msal/msal_cache.sqlite` when
    /// `XDG_DATA_HOME` is set to an absolute path, else `~/.local/share/msal/msal_cache.sqlite`
    /// (XDG Base Directory Specification).
    /// - Returns: an absolute path.
    public static func defaultPath() -> String {
        defaultPath(environment: ProcessInfo.processInfo.environment)
    }

    /// ``defaultPath()`` computed from the given environment variables (`XDG_DATA_HOME`, `HOME`).
    /// - Returns: an absolute path.
    public static func defaultPath(environment: [String: String]) -> String {
        if let dataHome = environment["XDG_DATA_HOME"], dataHome.hasPrefix("/") {
            return (dataHome.hasSuffix("/") ? String(dataHome.dropLast()) : dataHome) + "/msal/msal_cache.sqlite"
        }
        var home = environment["HOME"] ?? ""
        if !home.hasPrefix("/") { home = NSHomeDirectory() }
        if home.hasSuffix("/") { home.removeLast() }
        return home + "/.local/share/msal/msal_cache.sqlite"
    }

    // MARK: TokenCacheStore

    /// Reads every entry of this store's access group in one consistent snapshot.
    /// - Returns: the contents, keyed by the stored keys. An entry whose JSON cannot be read goes to
    ///   ``TokenCacheContents/unreadableEntries``.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the database cannot be read.
    public func readAll() throws(MSALError) -> TokenCacheContents {
        let rows = try connection.withLock { (connection: inout SQLiteConnection) throws(MSALError) -> [(String, String, String)] in
            let doing = "reading the token cache"
            let statement = try connection.statement("SELECT kind, key, json FROM entries WHERE access_group = ?1", doing: doing)
            defer { statement.reset() }
            try statement.bind(1, accessGroup)
            var rows: [(String, String, String)] = []
            while try statement.step() { rows.append((statement.text(0), statement.text(1), statement.text(2))) }
            return rows
        }
        var contents = TokenCacheContents()
        for (kindName, key, json) in rows {
            let data = Data(json.utf8)
            if let kind = CacheEntryKind(rawValue: kindName), let entry = try? CacheEntry(kind: kind, msalJSONData: data) {
                contents.insert(entry, storedKey: key)
            } else {
                let raw = JSONValue(parsing: data) ?? .string(json)
                contents.unreadableEntries[kindName, default: [:]][key] = raw
            }
        }
        return contents
    }

    /// Applies the change in one `BEGIN IMMEDIATE` transaction: all of it or nothing.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when it could not be committed (e.g. locked
    ///   beyond the busy timeout, disk full); then nothing was written.
    public func apply(_ change: TokenCacheChange) throws(MSALError) {
        _ = try applyReportingStamps(change)
    }

    /// `PRAGMA data_version` (changes when another connection commits) plus this connection's own
    /// commit count.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the database cannot be read.
    public func changeStamp() throws(MSALError) -> UInt64 {
        try connection.withLock { (connection: inout SQLiteConnection) throws(MSALError) -> UInt64 in
            let version = try connection.integer("PRAGMA data_version", doing: "checking the token cache for changes")
            return UInt64(bitPattern: version) &+ connection.ownWrites
        }
    }

    /// Applies the change in one `BEGIN IMMEDIATE` transaction and reads the stamps inside it, while
    /// holding the write lock.
    /// - Returns: the change stamps before and after the change.
    /// - Throws: as ``apply(_:)``.
    public func applyReportingStamps(_ change: TokenCacheChange) throws(MSALError) -> AppliedChangeStamps {
        var rows: [(kind: String, key: String, columns: [String], json: String)] = []
        for entry in change.upserts {
            let json = String(decoding: try entry.msalJSONData(), as: UTF8.self)
            let columns = [entry.homeAccountID, entry.environment, entry.clientID, entry.realm].map { $0.lowercased() }
            rows.append((entry.kind.rawValue, entry.key, columns, json))
        }
        let group = accessGroup
        return try connection.withLock { (connection: inout SQLiteConnection) throws(MSALError) -> AppliedChangeStamps in
            let doing = "writing the token cache"
            let version = try connection.transaction(immediate: true, doing: doing) { () throws(MSALError) -> Int64 in
                let version = try connection.integer("PRAGMA data_version", doing: doing)
                if change.isEmpty { return version }
                let delete = try connection.statement("DELETE FROM entries WHERE access_group = ?1 AND kind = ?2 AND key = ?3", doing: doing)
                for removal in change.removals {
                    try delete.bind(1, group)
                    try delete.bind(2, removal.kind.rawValue)
                    try delete.bind(3, removal.key)
                    try delete.run()
                }
                let insert = try connection.statement(
                    """
                    INSERT OR REPLACE INTO entries (access_group, kind, key, home_account_id, environment, client_id, realm, json)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                    """, doing: doing)
                for row in rows {
                    try insert.bind(1, group)
                    try insert.bind(2, row.kind)
                    try insert.bind(3, row.key)
                    for (offset, column) in row.columns.enumerated() { try insert.bind(Int32(4 + offset), column) }
                    try insert.bind(8, row.json)
                    try insert.run()
                }
                return version
            }
            let before = UInt64(bitPattern: version) &+ connection.ownWrites
            if !change.isEmpty { connection.ownWrites &+= 1 }
            return AppliedChangeStamps(before: before, after: UInt64(bitPattern: version) &+ connection.ownWrites)
        }
    }

    // MARK: Opening

    /// Creates the missing directories of `path` with mode 0700.
    private static func prepareDirectory(for path: String) throws(MSALError) {
        guard !path.isEmpty else {
            throw .internal(.cacheError, "The token cache path is empty; pass a file path such as SQLiteTokenCacheStore.defaultPath().")
        }
        try LockedFile.prepareDirectory(for: path)
    }

    /// Creates the file with mode 0600 if it does not exist. - Returns: whether it was created.
    private static func createFileIfMissing(_ path: String) throws(MSALError) -> Bool {
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            fchmod(descriptor, 0o600)
            close(descriptor)
            return true
        }
        let code = errno
        if code == EEXIST {
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
                throw .internal(.cacheError, "The token cache path '\(path)' exists but is not a regular file. Choose another path.")
            }
            return false
        }
        throw .internal(
            .cacheError,
            "Cannot create the token cache file '\(path)' (\(String(cString: strerror(code)))). Check that the directory exists and is writable by this user.")
    }

    /// Checks the file is ours (or empty), then switches to WAL and creates or checks the schema.
    private static func setUpSchema(_ connection: SQLiteConnection) throws(MSALError) {
        let doing = "checking the token cache"
        // Read-only checks first: nothing is written to a file that is not ours.
        try checkOwnership(connection, doing: doing)
        let mode = try connection.statement("PRAGMA journal_mode = WAL", doing: "switching the token cache to WAL")
        _ = try mode.step()
        mode.reset()
        try connection.transaction(immediate: true, doing: "creating the token cache schema") { () throws(MSALError) in
            if try checkOwnership(connection, doing: doing) { return }
            try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS entries (
                    access_group TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    key TEXT NOT NULL,
                    home_account_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    client_id TEXT NOT NULL,
                    realm TEXT NOT NULL,
                    json TEXT NOT NULL,
                    PRIMARY KEY (access_group, kind, key)
                ) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS entries_by_account
                    ON entries (access_group, home_account_id, environment, client_id, realm);
                PRAGMA application_id = \(applicationID);
                PRAGMA user_version = \(schemaVersion);
                """, doing: "creating the token cache schema")
        }
    }

    /// - Returns: `true` when the database already has our current schema, `false` when it is empty.
    /// - Throws: when it is not a database, another program's database, or from a newer version.
    @discardableResult
    private static func checkOwnership(_ connection: SQLiteConnection, doing: String) throws(MSALError) -> Bool {
        let tables = try connection.integer("SELECT count(*) FROM sqlite_master", doing: doing)
        let application = try connection.integer("PRAGMA application_id", doing: doing)
        let version = try connection.integer("PRAGMA user_version", doing: doing)
        if application == applicationID {
            if version > schemaVersion {
                throw .internal(
                    .cacheError,
                    "The token cache '\(connection.path)' was written by a newer swift-msal (schema version \(version); this version reads up to \(schemaVersion)). Update swift-msal, or use another path; the file was left untouched.")
            }
            if version == schemaVersion { return true }
        }
        if tables == 0 && application == 0 && version == 0 { return false }
        if application == applicationID && version < schemaVersion {
            throw .internal(.cacheError, "The token cache '\(connection.path)' has an unknown schema version \(version). Delete it; users will sign in again.")
        }
        throw .internal(
            .cacheError,
            "The file '\(connection.path)' is an SQLite database of another program (application_id \(application), \(tables) schema objects), so swift-msal left it untouched. Use another path for the token cache.")
    }

    /// Sets an existing database file to mode 0600 if group or others may access it.
    private static func tightenPermissions(_ path: String, logger: Logger) {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o077 != 0 else { return }
        if chmod(path, 0o600) == 0 {
            logger.warning("The token cache file \(pii: path) was accessible to group or others; its mode is now 0600.")
        } else {
            logger.warning("The token cache file \(pii: path) is accessible to group or others and its mode could not be changed.")
        }
    }
}
