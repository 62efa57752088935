internal import CSQLite
import MSALCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// SQLite's `SQLITE_TRANSIENT` (a macro Swift cannot import): tells SQLite to copy bound text.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One SQLite connection with cached prepared statements. Not thread-safe: the store guards it
/// with a lock.
final class SQLiteConnection {
    let db: OpaquePointer
    let path: String
    let busyTimeout: Double
    /// Commits made through this connection (SQLite's `data_version` does not count them).
    var ownWrites: UInt64 = 0
    /// The result code of the last SQLite failure turned into an error by ``error(_:doing:)``, so a
    /// caller can tell corruption (`SQLITE_CORRUPT`, `SQLITE_NOTADB`) from other failures.
    var lastFailureCode: Int32 = SQLITE_OK
    private var statements: [String: OpaquePointer] = [:]
    /// The busy handler's state; SQLite holds an unretained pointer to it for `db`'s lifetime.
    private let busyWait: BusyWait

    /// Opens the existing file at `path` read-write, or read-only when `readOnly` (never creating
    /// it: the store creates it with mode 0600). A read-only connection never writes the database
    /// nor rolls back a hot journal into it.
    init(path: String, busyTimeout: Double, readOnly: Bool = false) throws(MSALError) {
        var handle: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteConnection.error(code: rc, sqliteMessage: message, path: path, busyTimeout: busyTimeout, doing: "opening the token cache")
        }
        self.db = handle
        self.path = path
        self.busyTimeout = busyTimeout
        busyWait = BusyWait(timeout: busyTimeout)
        sqlite3_busy_handler(handle, sqliteBusyHandler, Unmanaged.passUnretained(busyWait).toOpaque())
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    /// A cache error for the result code `code` with a message that says what to do; remembers
    /// `code` in ``lastFailureCode``.
    func error(_ code: Int32, doing: String) -> MSALError {
        lastFailureCode = code
        return SQLiteConnection.error(code: code, sqliteMessage: String(cString: sqlite3_errmsg(db)), path: path, busyTimeout: busyTimeout, doing: doing)
    }

    static func error(code: Int32, sqliteMessage: String, path: String, busyTimeout: Double, doing: String) -> MSALError {
        let advice: String
        switch code & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED:
            advice = "The token cache '\(path)' stayed locked by another process or connection for longer than the busy timeout (\(busyTimeout) s). Retry later, or end the program that holds it."
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            advice = "The token cache '\(path)' is damaged. Open it again (e.g. restart the program): swift-msal then moves it aside and starts an empty cache; users will sign in again."
        case SQLITE_CANTOPEN:
            advice = "The token cache '\(path)' cannot be opened. " + cannotOpenAdvice(path: path)
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH:
            advice = "The token cache '\(path)' is not writable. Make the file, its -wal and -shm files and its directory writable by this user."
        case SQLITE_FULL:
            advice = "The disk holding the token cache '\(path)' is full. Free some space and retry."
        case SQLITE_IOERR:
            advice = "An I/O error occurred on the token cache '\(path)'. Check the disk and the file system."
        default:
            advice = "SQLite failed on the token cache '\(path)'."
        }
        return .internal(.cacheError, "\(advice) (SQLite error \(code) while \(doing): \(sqliteMessage))")
    }

    /// What to check when SQLite cannot open `path`: the file's read and write permission when it
    /// exists and this user lacks one of them (`access(2)`), else its directory.
    static func cannotOpenAdvice(path: String) -> String {
        if access(path, F_OK) == 0 {
            let readable = access(path, R_OK) == 0, writable = access(path, W_OK) == 0
            if !readable || !writable {
                let missing = !readable && !writable ? "readable or writable" : (!readable ? "readable" : "writable")
                return "The file exists but is not \(missing) by this user: fix its permissions (chmod u+rw), or choose another path."
            }
        }
        return "Check that its directory exists and is writable by this user."
    }

    /// Runs SQL without results (several statements allowed).
    func execute(_ sql: String, doing: String) throws(MSALError) {
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, doing: doing) }
    }

    /// A cached prepared statement, reset and with no bindings.
    func statement(_ sql: String, doing: String) throws(MSALError) -> Statement {
        if let cached = statements[sql] {
            sqlite3_reset(cached)
            sqlite3_clear_bindings(cached)
            return Statement(handle: cached, connection: self, doing: doing)
        }
        var handle: OpaquePointer?
        let rc = sqlite3_prepare_v2(db, sql, -1, &handle, nil)
        guard rc == SQLITE_OK, let handle else { throw error(rc, doing: doing) }
        statements[sql] = handle
        return Statement(handle: handle, connection: self, doing: doing)
    }

    /// The single integer a query (e.g. a PRAGMA) returns.
    func integer(_ sql: String, doing: String) throws(MSALError) -> Int64 {
        let statement = try statement(sql, doing: doing)
        defer { statement.reset() }
        guard try statement.step() else { throw error(SQLITE_ERROR, doing: doing) }
        return statement.int64(0)
    }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE` takes the write lock first); rolls back when it throws.
    func transaction<T>(immediate: Bool, doing: String, _ body: () throws(MSALError) -> T) throws(MSALError) -> T {
        try execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN", doing: doing)
        let result: T
        do throws(MSALError) {
            result = try body()
            try execute("COMMIT", doing: doing)
        } catch {
            if sqlite3_get_autocommit(db) == 0 { sqlite3_exec(db, "ROLLBACK", nil, nil, nil) }
            throw error
        }
        return result
    }
}

/// A prepared statement being run.
struct Statement {
    let handle: OpaquePointer
    let connection: SQLiteConnection
    let doing: String

    /// Binds text to the 1-based parameter `index` (SQLite copies it).
    func bind(_ index: Int32, _ text: String) throws(MSALError) {
        let rc = sqlite3_bind_text(handle, index, text, -1, sqliteTransient)
        guard rc == SQLITE_OK else { throw connection.error(rc, doing: doing) }
    }

    /// Steps once. - Returns: `true` when a row is available, `false` when done.
    func step() throws(MSALError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            sqlite3_reset(handle)
            throw connection.error(rc, doing: doing)
        }
    }

    /// Runs to completion, ignoring rows.
    func run() throws(MSALError) {
        defer { reset() }
        while try step() {}
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        return String(cString: pointer)
    }

    func reset() { sqlite3_reset(handle) }
}

/// When the current wait for a lock of one connection ends. Used only by the thread holding the
/// connection (the store's lock), like the connection itself.
final class BusyWait {
    /// How long one wait may last, in seconds.
    let timeout: Double
    /// The end of the current wait, set when SQLite first reports the database busy.
    private var deadline: ContinuousClock.Instant = .now

    init(timeout: Double) {
        self.timeout = timeout.isNaN ? 0 : min(max(0, timeout), 1e9)
    }

    /// Whether SQLite should try again after the `count`-th busy report (0 starts a new wait):
    /// sleeps a short jittered pause (0.05 to 4.8 ms) and answers `true` until the timeout is over.
    ///
    /// SQLite's own `sqlite3_busy_timeout` handler sleeps in steps growing to 100 ms, so a waiter
    /// among many writers (16 processes on one file) tends to sleep through every hand-off and can
    /// starve past its timeout; short pauses keep each waiter in the race, as
    /// `LockedFile.withExclusiveLock` does for the file stores.
    func shouldRetry(after count: Int32) -> Bool {
        let now = ContinuousClock.now
        if count == 0 { deadline = now + .seconds(timeout) }
        guard now < deadline else { return false }
        let pause = UInt32(100) << UInt32(min(count, 5))  // microseconds: 100, 200, ..., 3200
        usleep(pause / 2 + UInt32.random(in: 0...pause))
        return true
    }
}

/// The busy handler of every connection (`sqlite3_busy_handler`): asks the connection's ``BusyWait``.
private func sqliteBusyHandler(_ context: UnsafeMutableRawPointer?, _ count: Int32) -> Int32 {
    guard let context else { return 0 }
    return Unmanaged<BusyWait>.fromOpaque(context).takeUnretainedValue().shouldRetry(after: count) ? 1 : 0
}
