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
///   MSAL JSON, so fields this version does not model survive. The entries table is an ordinary
///   (rowid) table with a unique index on its key: rows of 1–2 KB of JSON are what SQLite's
///   `WITHOUT ROWID` tables are not made for. The schema version is kept in `PRAGMA user_version`
///   and the file is marked as swift-msal's with `PRAGMA application_id`.
/// - **Files of earlier versions are rewritten when opened.** Earlier versions kept the entries in
///   a `WITHOUT ROWID` table (with 100k rows of 1.2 KB, twice the size on disk and three times the
///   time to write). A store that opens such a file moves the entries, as they are, to the rowid
///   table in one `BEGIN IMMEDIATE` transaction, when the file can be written; otherwise (a
///   read-only file, a lock held beyond the busy timeout) it uses the older table as it is, and a
///   later open rewrites it. The schema version stays 1 and both layouts have the same columns and
///   key, so earlier versions go on reading and writing the file. The file does not shrink (SQLite
///   reuses the freed pages for later writes).
/// - **Guarantees** (those of ``TokenCacheStore``): every ``apply(_:)`` is one `BEGIN IMMEDIATE`
///   transaction, so it is atomic and serialized with writers in other processes; readers see
///   committed states only (WAL journal); it survives crashes and restarts. ``changeStamp()`` is
///   `PRAGMA data_version` plus this connection's own write counter.
/// - **Waiting for other writers.** A connection that finds the database locked by another
///   connection or process retries in short jittered pauses (0.05 to 4.8 ms) until the busy timeout
///   is over, then fails with `.internal(.cacheError)` naming the timeout. (SQLite's default handler
///   sleeps in steps of up to 100 ms, which starves a waiter among many writers.)
/// - **Files.** A new database file is created with mode 0600 (SQLite gives its `-wal` and `-shm`
///   files the same mode) and missing directories with mode 0700. An existing database of ours that
///   is readable by group or others is set to 0600. An empty (0-byte) file is a new database.
/// - **Damaged files are moved aside, never deleted.** Opening reads the header and schema and runs
///   `PRAGMA quick_check` over every page. A file SQLite reports as damaged (`SQLITE_CORRUPT`,
///   `SQLITE_NOTADB`: garbled or truncated header, binary garbage, a truncated file, damaged pages)
///   is renamed to `<path>.corrupt-<UTC time as yyyyMMdd'T'HHmmss'Z'>`, together with its `-wal`,
///   `-shm` and `-journal` files, and an empty cache is created at `path`; users sign in again. The
///   store reports it in ``movedAsideCorruptFile`` and as a warning through its logger (paths are
///   PII). The move holds an exclusive lock on `<path>.lock` (created then, and left in place), so
///   processes opening the damaged file at the same time move it once. Damage found later, on a
///   store already open, is an `.internal(.cacheError)` and nothing is moved; the next open moves
///   it. Damage to an entry's JSON text alone is not damage to the database: that entry is kept
///   as unreadable (``TokenCacheContents/unreadableEntries``).
/// - **Never overwrites what is not ours.** A valid SQLite database of another program (another
///   `application_id`, or tables without ours), one written by a newer swift-msal (higher
///   `user_version`), and a file that is plainly not a database — text such as notes or a JSON
///   token cache, or an encrypted swift-msal cache — are refused with `.internal(.cacheError)` and
///   left untouched, also their modes.
/// - **Access groups.** Entries of different access groups share the file but never see each other
///   (the idea of MSAL for iOS/macOS keychain access groups).
///
/// Errors are ``MSALError`` `.internal(.cacheError)` whose message names the path, says what went
/// wrong and what to do; never a token.
public final class SQLiteTokenCacheStore: TokenCacheStore {
    /// The schema version this version writes and reads (`PRAGMA user_version`): 1, with either
    /// layout of the entries table (see the type's documentation).
    public static let schemaVersion: Int64 = 1
    /// The `PRAGMA application_id` that marks a database as swift-msal's token cache ("MSAL" in ASCII).
    public static let applicationID: Int64 = 0x4D53_414C

    /// The database file's path.
    public let path: String
    /// The access group whose entries this store reads and writes.
    public let accessGroup: String

    /// Where this store moved a damaged database it found at ``path`` when it opened it, or `nil`
    /// when it found none (see "Damaged files" above).
    ///
    /// The path is `<path>.corrupt-<UTC time as yyyyMMdd'T'HHmmss'Z'>` (for example
    /// `msal_cache.sqlite.corrupt-20261129T154500Z`, with `-2`, `-3`, … appended if that name is
    /// taken); the file's `-wal`, `-shm` and `-journal` files, when there were any, sit beside it with
    /// the same name plus their suffix. An app or tool should tell the user that the cache was
    /// replaced (users sign in again) and where the old file is; it may be deleted once not needed.
    public let movedAsideCorruptFile: String?

    private let connection: Mutex<SQLiteConnection>
    /// The (device, inode) of the database file this store opened, as registered in ``openFiles``.
    private let openFile: [UInt64]?

    /// The database files this process has open through stores, by (device, inode), with how many
    /// stores hold each. SQLite's locks are POSIX record locks, which belong to the process and are
    /// all released when the process closes any descriptor of the file: reading the header of such
    /// a file with a plain `open`/`close` (as the checks of a new store do) would silently drop the
    /// locks of the stores already open, after which another process's SQLite takes itself for the
    /// last connection and deletes the WAL those stores still write to, losing their writes (SQLite's
    /// "How To Corrupt An SQLite Database File", §2.2). A file in this table was checked when its
    /// first store opened it, so later stores skip the plain read; stores open one at a time per
    /// process, so no check runs while another store is opening.
    private static let openFiles = Mutex<[[UInt64]: Int]>([:])

    /// Opens (creating if needed) the token cache database at `path`.
    ///
    /// Creates missing directories (mode 0700) and a missing file (mode 0600), checks an existing
    /// file (moving a damaged one aside), switches the database to WAL and creates the schema on a
    /// new file.
    ///
    /// - Parameters:
    ///   - path: the database file, e.g. ``defaultPath()``.
    ///   - accessGroup: the partition of the file this store uses; stores with different groups on one
    ///     file never see each other's entries. Default `com.microsoft.adalcache`, MSAL for
    ///     iOS/macOS's default keychain group.
    ///   - busyTimeout: how long, in seconds, to wait for another process holding the database lock
    ///     before failing (default 5).
    ///   - logger: receives a warning when file permissions are tightened and when a damaged file is
    ///     moved aside (paths are PII).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the directory cannot be created or is not
    ///   a directory, the file cannot be created or opened, it is plainly not an SQLite database
    ///   (text, an encrypted cache) or is another program's database or was written by a newer
    ///   swift-msal (all left untouched), it is damaged and cannot be moved aside, or it stays locked
    ///   beyond `busyTimeout`; `.internal(.invalidParameter)` for an invalid access group. A damaged
    ///   file is not an error: it is moved aside (see ``movedAsideCorruptFile``).
    public init(
        path: String,
        accessGroup: String = TokenCacheAccessGroup.default,
        busyTimeout: TimeInterval = 5,
        logger: Logger = .none
    ) throws(MSALError) {
        self.path = path
        self.accessGroup = try TokenCacheAccessGroup.validate(accessGroup)
        try Self.prepareDirectory(for: path)
        let (connection, movedAside, openFile) = try Self.openFiles.withLock {
            (files: inout [[UInt64]: Int]) throws(MSALError) -> (SQLiteConnection, String?, [UInt64]?) in
            let opened = try Self.openDatabase(path, busyTimeout: busyTimeout, logger: logger) { identity in
                identity.map { (files[$0] ?? 0) > 0 } ?? false
            }
            let identity = Self.fileIdentity(path)
            if let identity { files[identity, default: 0] += 1 }
            return (opened.connection, opened.movedAside, identity)
        }
        self.connection = Mutex(connection)
        self.openFile = openFile
        movedAsideCorruptFile = movedAside
    }

    deinit {
        guard let openFile else { return }
        Self.openFiles.withLock { files in
            let count = (files[openFile] ?? 1) - 1
            files[openFile] = count > 0 ? count : nil
        }
    }

    /// Creates, checks (moving a damaged file aside) and opens the database at `path`, with its schema.
    /// - Parameter isOpenHere: whether a store of this process has the file of this identity open
    ///   (then it is not read with a plain `open`/`close`; see ``openFiles``).
    /// - Returns: the connection and where a damaged file went.
    private static func openDatabase(
        _ path: String, busyTimeout: Double, logger: Logger, isOpenHere: ([UInt64]?) -> Bool
    ) throws(MSALError) -> (connection: SQLiteConnection, movedAside: String?) {
        var created = false
        var examined: Examination
        var attempts = 0
        while true {
            created = try createFileIfMissing(path) || created
            let identity = fileIdentity(path)
            do {
                examined = try openAndExamine(path, busyTimeout: busyTimeout, readsHeader: !isOpenHere(identity))
                break
            } catch {
                // Another store moved a damaged file aside (renamed it) while this one opened it:
                // open the new file instead.
                attempts += 1
                guard attempts < 5, fileIdentity(path) != identity else { throw error }
                usleep(10_000)
            }
        }
        var movedAside: String?
        if case .damaged(let reason) = examined {
            movedAside = try moveAsideDamaged(
                path, reason: reason, busyTimeout: busyTimeout, logger: logger, readsHeader: !isOpenHere(fileIdentity(path)))
            examined = try openAndExamine(path, busyTimeout: busyTimeout, readsHeader: !isOpenHere(fileIdentity(path)))
        }
        guard case .usable(let connection, let hasSchema) = examined else {
            throw .internal(
                .cacheError,
                "The token cache '\(path)' was damaged again right after swift-msal replaced it with an empty one. Check the disk and the file system, or use another path.")
        }
        try setUpSchema(connection, hasSchema: hasSchema, logger: logger)
        if !created && movedAside == nil { tightenPermissions(path, logger: logger) }
        return (connection, movedAside)
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
        TokenCacheLocation.dataDirectory(environment: environment) + "/msal_cache.sqlite"
    }

    // MARK: TokenCacheStore

    /// Reads every entry of this store's access group in one consistent snapshot.
    /// - Returns: the contents, keyed by the stored keys. An entry whose JSON cannot be read goes to
    ///   ``TokenCacheContents/unreadableEntries``.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the database cannot be read.
    public func readAll() throws(MSALError) -> TokenCacheContents {
        let rows = try connection.withLock { (connection: inout SQLiteConnection) throws(MSALError) -> [(String, String, String)] in
            let doing = "reading the token cache"
            // The whole table in rowid order: pages one after another. Through an index on the
            // access group SQLite would fetch each row by rowid, out of order (twice the time at
            // 100k tokens); a file rarely holds more than one group.
            let statement = try connection.statement("SELECT kind, key, json FROM entries NOT INDEXED WHERE access_group = ?1", doing: doing)
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
        for (key, entry) in change.keyedUpserts {
            let json = String(decoding: try entry.msalJSONData(), as: UTF8.self)
            let columns = [entry.homeAccountID, entry.environment, entry.clientID, entry.realm].map { $0.lowercased() }
            rows.append((entry.kind.rawValue, key, columns, json))
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

    /// What opening the file found.
    /// The (device, inode) of the file at `path`, or `nil` when there is none.
    private static func fileIdentity(_ path: String) -> [UInt64]? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return [UInt64(info.st_dev), UInt64(info.st_ino)]
    }

    private enum Examination {
        /// A connection to a database of ours (`hasSchema`) or to an empty one (not `hasSchema`).
        case usable(SQLiteConnection, hasSchema: Bool)
        /// The file is a damaged database; the reason is SQLite's description (no content of the file).
        case damaged(reason: String)
    }

    /// Examines the file at `path` without writing to it, then opens the store's connection.
    ///
    /// A non-empty file that does not start with SQLite's 16-byte header is never given to SQLite:
    /// it is refused (text, an encrypted cache) or damaged. Otherwise a read-only connection reads
    /// the header and schema and runs `PRAGMA quick_check`; only when SQLite needs to write to read
    /// the file at all (`SQLITE_READONLY_*`, e.g. a hot journal of an interrupted transaction to roll
    /// back, SQLite's own crash recovery) is a read-write connection used for that.
    /// - Returns: ``Examination/usable(_:hasSchema:)`` with a read-write connection or, when the file
    ///   is damaged, ``Examination/damaged(reason:)`` (then no connection to the file is left open,
    ///   so it can be moved).
    /// - Throws: the refusals of ``checkOwnership(_:doing:)`` and ``refuseIfNotADatabase(_:)``; any
    ///   other SQLite failure (e.g. locked beyond the busy timeout).
    /// - Parameter readsHeader: `false` when a store of this process has the file open (see ``openFiles``).
    private static func openAndExamine(_ path: String, busyTimeout: Double, readsHeader: Bool) throws(MSALError) -> Examination {
        if readsHeader, let prefix = readPrefix(of: path, count: 4096), !prefix.starts(with: sqliteHeader) {
            try refuseIfNotADatabase(path)
            return .damaged(reason: "the file does not start with the SQLite header")
        }
        let hasSchema: Bool
        switch try examine(SQLiteConnection(path: path, busyTimeout: busyTimeout, readOnly: true)) {
        case .damaged(let reason): return .damaged(reason: reason)
        case .needsWriting:
            let connection = try SQLiteConnection(path: path, busyTimeout: busyTimeout)
            switch try examine(connection) {
            case .damaged(let reason): return .damaged(reason: reason)
            case .needsWriting: throw connection.error(connection.lastFailureCode, doing: "checking the token cache")
            case .usable(let ours):
                return .usable(connection, hasSchema: ours)
            }
        case .usable(let ours): hasSchema = ours
        }
        return .usable(try SQLiteConnection(path: path, busyTimeout: busyTimeout), hasSchema: hasSchema)
    }

    /// What ``examine(_:)`` found.
    private enum Finding {
        /// Ours (`true`) or empty (`false`).
        case usable(hasSchema: Bool)
        case damaged(reason: String)
        /// A read-only connection cannot read the file (`SQLITE_READONLY_*`): SQLite must write first.
        case needsWriting
    }

    /// Reads the header and schema of the database behind `connection` and checks every page.
    /// - Throws: the refusals of ``checkOwnership(_:doing:)``; SQLite failures other than damage.
    private static func examine(_ connection: SQLiteConnection) throws(MSALError) -> Finding {
        let doing = "checking the token cache"
        do {
            let hasSchema = try checkOwnership(connection, doing: doing)
            if hasSchema {
                // Reads every page of the file (no index cross-checks, so it stays fast).
                let check = try connection.statement("PRAGMA quick_check(1)", doing: doing)
                defer { check.reset() }
                guard try check.step(), check.text(0) == "ok" else { return .damaged(reason: "PRAGMA quick_check found damaged pages") }
            }
            return .usable(hasSchema: hasSchema)
        } catch {
            let code = connection.lastFailureCode
            switch code & 0xFF {
            case SQLITE_CORRUPT, SQLITE_NOTADB: return .damaged(reason: String(cString: sqlite3_errstr(code)))
            case SQLITE_READONLY: return .needsWriting
            default: throw error
            }
        }
    }

    /// The first 16 bytes of every SQLite database file: `SQLite format 3` and a NUL.
    private static let sqliteHeader = Array("SQLite format 3\u{0}".utf8)

    /// Refuses a file that is not an SQLite database and looks like another kind of file a user
    /// keeps: text (notes, a JSON token cache) or an encrypted swift-msal cache (`MSALENC1`).
    /// Binary data that is neither, or that starts with `SQLite`, is a damaged database (the caller
    /// moves it aside).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` saying the file is not an SQLite database and
    ///   was left untouched.
    private static func refuseIfNotADatabase(_ path: String) throws(MSALError) {
        guard let prefix = readPrefix(of: path, count: 4096), !prefix.starts(with: Array("SQLite".utf8)) else { return }
        let isEncryptedCache = prefix.starts(with: Array("MSALENC1".utf8))
        // Text: no NUL byte and valid UTF-8 (a character cut at the end of the prefix allowed).
        let isText = !prefix.contains(0) && (0...min(3, prefix.count - 1)).contains { cut in
            String(validating: prefix.dropLast(cut), as: UTF8.self) != nil
        }
        guard isEncryptedCache || isText else { return }
        // Name the backend that wrote another kind of token cache: the user likely picked the wrong one.
        let firstByte = prefix.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
        let hint = isEncryptedCache
            ? " It is an encrypted swift-msal token cache: open it with the encrypted-file backend (msal --cache-backend encrypted-file)."
            : firstByte == UInt8(ascii: "{")
                ? " It looks like a JSON token cache (MSAL's JSON format): open it with the JSON file backend (msal --cache-backend json)."
                : ""
        throw .internal(
            .cacheError,
            "The file '\(path)' is not an SQLite database, so swift-msal left it untouched. Move it away or use another path for the token cache.\(hint)")
    }

    /// Up to `count` bytes from the start of the file, or `nil` when it cannot be read.
    private static func readPrefix(of path: String, count: Int) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, count - filled) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            filled += got
        }
        return filled > 0 ? Array(bytes[0..<filled]) : nil
    }

    /// Moves the damaged database at `path` (with its `-wal`, `-shm` and `-journal` files) aside and
    /// creates an empty file in its place, holding the exclusive lock on `<path>.lock` so that
    /// processes opening the damaged file at the same time move it once.
    /// - Returns: where the file went, or `nil` when, once the lock was held, `path` was no longer
    ///   damaged (another process had moved it aside).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when a file cannot be renamed (what was
    ///   renamed is put back) or the lock is held beyond `busyTimeout` (at least one second).
    /// - Parameter readsHeader: as for ``openAndExamine(_:busyTimeout:readsHeader:)``.
    private static func moveAsideDamaged(
        _ path: String, reason: String, busyTimeout: Double, logger: Logger, readsHeader: Bool
    ) throws(MSALError) -> String? {
        let lock = try LockedFile(path: path, lockTimeout: max(busyTimeout, 1))
        return try lock.withExclusiveLock { () throws(MSALError) -> String? in
            _ = try createFileIfMissing(path)
            if case .usable = try openAndExamine(path, busyTimeout: busyTimeout, readsHeader: readsHeader) { return nil }
            let destination = availableAsideName(for: path)
            // The WAL first: an empty database next to a stale WAL would take that WAL's pages.
            var moved: [(from: String, to: String)] = []
            for suffix in ["-wal", "-shm", "-journal", ""] {
                let from = path + suffix
                var info = stat()
                guard lstat(from, &info) == 0 else { continue }
                guard rename(from, destination + suffix) == 0 else {
                    let reasonText = String(cString: strerror(errno))
                    for file in moved.reversed() { rename(file.to, file.from) }
                    throw .internal(
                        .cacheError,
                        "The token cache '\(path)' is damaged (\(reason)) and could not be moved aside to '\(destination + suffix)' (\(reasonText)). Make its directory writable, or move the file and its -wal and -shm files away yourself; users will sign in again.")
                }
                moved.append((from, destination + suffix))
            }
            _ = try createFileIfMissing(path)
            logger.warning("The token cache \(pii: path) was damaged (\(reason)); it was moved to \(pii: destination) and an empty cache was created in its place. Users sign in again; delete the old file once it is no longer needed.")
            return destination
        }
    }

    /// `<path>.corrupt-<UTC time>`, with `-2`, `-3`, … appended while that name or one of its
    /// `-wal`, `-shm`, `-journal` siblings exists.
    private static func availableAsideName(for path: String) -> String {
        let base = path + ".corrupt-" + compactUTCTimestamp(Date())
        var candidate = base
        var number = 1
        while ["", "-wal", "-shm", "-journal"].contains(where: { suffix in
            var info = stat()
            return lstat(candidate + suffix, &info) == 0
        }) {
            number += 1
            candidate = base + "-\(number)"
        }
        return candidate
    }

    /// `date` in UTC as `yyyyMMdd'T'HHmmss'Z'` (ISO 8601 basic format), e.g. `20261129T154500Z`.
    static func compactUTCTimestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return padded(parts.tm_year + 1900, 4) + padded(parts.tm_mon + 1, 2) + padded(parts.tm_mday, 2) + "T"
            + padded(parts.tm_hour, 2) + padded(parts.tm_min, 2) + padded(parts.tm_sec, 2) + "Z"
    }

    /// Switches to WAL (unless the file already is) and, on an empty database, creates the schema (in a `BEGIN IMMEDIATE`
    /// transaction that checks again, since another process may be creating it too). A database that
    /// already has our schema takes no write lock, unless its entries table has the older
    /// `WITHOUT ROWID` layout: then one `BEGIN IMMEDIATE` transaction rewrites it, and when that
    /// fails (read-only file, lock held beyond the busy timeout) the older table is kept and used.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when switching to WAL or creating the schema
    ///   fails, and the refusals of ``checkOwnership(_:doing:)``; never for a failed rewrite.
    private static func setUpSchema(_ connection: SQLiteConnection, hasSchema: Bool, logger: Logger) throws(MSALError) {
        let doing = "checking the token cache"
        // The journal mode is kept in the file: once one connection has switched it to WAL, others
        // only read it (switching needs the database to itself, which many processes opening a new
        // file at once would otherwise all wait for).
        //
        // The switch reads the file, then asks for the write lock. When another connection holds
        // it (another process switching the same new file at the same moment), SQLite answers that
        // upgrade SQLITE_BUSY at once, without calling the busy handler (waiting while holding a
        // read lock could deadlock). So a busy switch is tried again, the mode read again first,
        // with the busy handler's pauses until the busy timeout. (An attempt's read of the file
        // may itself wait in the busy handler, up to the timeout, so a switch that never gets the
        // lock fails after one to two busy timeouts.)
        let wait = BusyWait(timeout: connection.busyTimeout)
        var attempt: Int32 = 0
        while true {
            let current = try connection.statement("PRAGMA journal_mode", doing: doing)
            let isWAL = try current.step() && current.text(0).lowercased() == "wal"
            current.reset()
            if isWAL { break }
            do throws(MSALError) {
                let mode = try connection.statement("PRAGMA journal_mode = WAL", doing: "switching the token cache to WAL")
                defer { mode.reset() }
                _ = try mode.step()
                break
            } catch {
                guard connection.lastFailureCode & 0xFF == SQLITE_BUSY, wait.shouldRetry(after: attempt) else { throw error }
                attempt += 1
            }
        }
        if hasSchema {
            // Ours. A file written before the rowid layout holds its entries in a `WITHOUT ROWID`
            // table: rewritten now when the file can be written (checked again under the write
            // lock, since another process may be rewriting it too). When it cannot be (a read-only
            // file, a lock held beyond the busy timeout), the table is used as it is: the same
            // columns and key, read and written by the same statements. A later open rewrites it.
            guard try hasWithoutRowIDEntries(connection, doing: doing) else { return }
            do throws(MSALError) {
                try connection.transaction(immediate: true, doing: "rewriting the token cache's entries table") { () throws(MSALError) in
                    if try hasWithoutRowIDEntries(connection, doing: doing) { try rewriteEntriesTable(connection) }
                }
            } catch {
                logger.info("The token cache keeps its older table layout until a later open (rewriting it failed with SQLite error \(connection.lastFailureCode)).")
            }
            return
        }
        try connection.transaction(immediate: true, doing: "creating the token cache schema") { () throws(MSALError) in
            if try checkOwnership(connection, doing: doing) {
                // Another process created it meanwhile (an older swift-msal: the older layout).
                if try hasWithoutRowIDEntries(connection, doing: doing) { try rewriteEntriesTable(connection) }
                return
            }
            try connection.execute(
                entriesTable(named: "entries") + entriesByAccount + """
                PRAGMA application_id = \(applicationID);
                PRAGMA user_version = \(schemaVersion);
                """, doing: "creating the token cache schema")
        }
    }

    /// The entries table and its index by account, as SQL statements (each ending with `;`).
    ///
    /// A rowid table with a unique index on the key: the `WITHOUT ROWID` table of earlier versions
    /// kept its 1–2 KB rows in the key's B-tree, which SQLite advises against for rows over
    /// about a twentieth of a page. Measured with 100k rows of 1.2 KB of JSON: 475 against 226 MB
    /// (plus as much again in the WAL until a checkpoint), 11.8 against 4.1 s to write them in one
    /// transaction; the benchmark's 100k-token cache (122,501 entries) is written in 13.5 s against 21 s.
    private static func entriesTable(named name: String) -> String {
        """
        CREATE TABLE \(name) (
            access_group TEXT NOT NULL,
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            home_account_id TEXT NOT NULL,
            environment TEXT NOT NULL,
            client_id TEXT NOT NULL,
            realm TEXT NOT NULL,
            json TEXT NOT NULL,
            UNIQUE (access_group, kind, key)
        );

        """
    }

    /// The index by account of the entries table (dropped with the table it is on).
    private static let entriesByAccount = """
        CREATE INDEX entries_by_account ON entries (access_group, home_account_id, environment, client_id, realm);

        """

    /// Whether the entries table is the `WITHOUT ROWID` table swift-msal created before the rowid
    /// layout (`false` when there is no entries table).
    private static func hasWithoutRowIDEntries(_ connection: SQLiteConnection, doing: String) throws(MSALError) -> Bool {
        let statement = try connection.statement(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'entries'", doing: doing)
        defer { statement.reset() }
        guard try statement.step() else { return false }
        return statement.text(0).uppercased().contains("WITHOUT ROWID")
    }

    /// Moves the entries, as they are, from the `WITHOUT ROWID` table to a rowid table with the
    /// same columns and key, inside the caller's `BEGIN IMMEDIATE` transaction. The schema version
    /// stays 1: versions of swift-msal that created the older table read and write this one with
    /// the same statements, so apps of different versions can go on sharing the file.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when SQLite fails (the transaction then
    ///   rolls back and the table stays as it was).
    private static func rewriteEntriesTable(_ connection: SQLiteConnection) throws(MSALError) {
        let columns = "access_group, kind, key, home_account_id, environment, client_id, realm, json"
        try connection.execute(
            entriesTable(named: "entries_rowid") + """
            INSERT INTO entries_rowid (\(columns)) SELECT \(columns) FROM entries;
            DROP TABLE entries;
            ALTER TABLE entries_rowid RENAME TO entries;

            """ + entriesByAccount, doing: "rewriting the token cache's entries table")
    }

    /// - Returns: `true` when the database already has our current schema, `false` when it is empty.
    /// - Throws: when it is another program's database or from a newer version (or SQLite fails,
    ///   e.g. `SQLITE_NOTADB` for a file that is not a database).
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

extension SQLiteTokenCacheStore: ADALKeyedItemStore {
    /// The table of keyed items, created by the first ``setADALKeyedItem(_:)`` (a database without it
    /// has no items; older versions of swift-msal ignore it).
    private static let keyedItemsTable = """
        CREATE TABLE IF NOT EXISTS adal_keyed_items (
            access_group TEXT NOT NULL,
            service TEXT NOT NULL,
            account TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (access_group, service, account)
        ) WITHOUT ROWID
        """

    /// The keyed items of this store's access group, from the table `adal_keyed_items` (the data in
    /// standard base64 in column `value`).
    /// - Returns: the items sorted by service then account; a value that is not base64 comes back as
    ///   empty data (a reader reports the item as malformed).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the database cannot be read.
    public func adalKeyedItems() throws(MSALError) -> [ADALKeyedItem] {
        let group = accessGroup
        return try connection.withLock { (connection: inout SQLiteConnection) throws(MSALError) -> [ADALKeyedItem] in
            let doing = "reading the ADAL keyed items"
            let tables = try connection.integer(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'adal_keyed_items'", doing: doing)
            if tables == 0 { return [] }
            let statement = try connection.statement(
                "SELECT service, account, value FROM adal_keyed_items WHERE access_group = ?1 ORDER BY service, account", doing: doing)
            defer { statement.reset() }
            try statement.bind(1, group)
            var items: [ADALKeyedItem] = []
            while try statement.step() {
                items.append(ADALKeyedItem(
                    service: statement.text(0), account: statement.text(1), value: Data(base64Encoded: statement.text(2)) ?? Data()))
            }
            return items
        }
    }

    /// Stores the item in one `BEGIN IMMEDIATE` transaction (creating the table when missing).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when it could not be committed; then nothing was written.
    public func setADALKeyedItem(_ item: ADALKeyedItem) throws(MSALError) {
        let group = accessGroup
        try writeKeyedItems { (connection: inout SQLiteConnection, doing: String) throws(MSALError) in
            let insert = try connection.statement(
                "INSERT OR REPLACE INTO adal_keyed_items (access_group, service, account, value) VALUES (?1, ?2, ?3, ?4)", doing: doing)
            try insert.bind(1, group)
            try insert.bind(2, item.service)
            try insert.bind(3, item.account)
            try insert.bind(4, item.value.base64EncodedString())
            try insert.run()
        }
    }

    /// Removes the item in one `BEGIN IMMEDIATE` transaction.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when it could not be committed.
    public func removeADALKeyedItem(service: String, account: String) throws(MSALError) {
        let group = accessGroup
        try writeKeyedItems { (connection: inout SQLiteConnection, doing: String) throws(MSALError) in
            let delete = try connection.statement(
                "DELETE FROM adal_keyed_items WHERE access_group = ?1 AND service = ?2 AND account = ?3", doing: doing)
            try delete.bind(1, group)
            try delete.bind(2, service)
            try delete.bind(3, account)
            try delete.run()
        }
    }

    private func writeKeyedItems(_ body: (inout SQLiteConnection, String) throws(MSALError) -> Void) throws(MSALError) {
        try connection.withLock { (connection: inout SQLiteConnection) throws(MSALError) in
            let doing = "writing an ADAL keyed item"
            try connection.transaction(immediate: true, doing: doing) { () throws(MSALError) in
                try connection.execute(Self.keyedItemsTable, doing: doing)
                try body(&connection, doing)
            }
            connection.ownWrites &+= 1
        }
    }
}
