import Foundation
import MSALCache
import MSALCacheSQLite
import MSALCore
import MSALTestSupport
import Testing

/// A fresh directory for real cache files (MSALTestSupport's), under the name the tests use.
typealias TemporaryDirectory = ScratchDirectory

/// Entries for the tests.
enum Sample {
    static let environment = "login.microsoftonline.com"
    static let clientID = "c11e0000-0000-4000-8000-000000000001"
    static let tenant = "aaaaaaaa-0000-4000-8000-00000000aaaa"
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    static func accessToken(home: String, target: String = "User.Read", secret: String, realm: String = tenant) -> AccessTokenEntry {
        AccessTokenEntry(
            homeAccountID: home, environment: environment, clientID: clientID, realm: realm, target: target,
            secret: secret, cachedAt: t0, expiresOn: t0.addingTimeInterval(3600))
    }

    static func account(home: String, realm: String = tenant) -> AccountEntry {
        AccountEntry(homeAccountID: home, environment: environment, realm: realm, localAccountID: home, username: "\(home)@example")
    }

    static func lookup(_ cache: TokenCache, home: String, scopes: ScopeSet = ["user.read"]) throws -> AccessTokenEntry? {
        try cache.accessToken(homeAccountID: home, environment: environment, realm: tenant, clientID: clientID, scopes: scopes)
    }
}

/// The `sqlite3` command-line shell, used as a second process on the same database file.
enum SQLiteShell {
    static let path = "/usr/bin/sqlite3"
    /// Whether the tests that use a second `sqlite3` process run: when the shell is installed, and
    /// always under `scripts/test.sh` (which installs it and sets `MSAL_GLEWLWYD_REQUIRED`), so a
    /// missing shell fails them there instead of skipping them.
    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: path)
            || ProcessInfo.processInfo.environment["MSAL_GLEWLWYD_REQUIRED"] != nil
    }

    /// Runs SQL in a separate `sqlite3` process. - Returns: its standard output.
    @discardableResult
    static func run(_ database: String, _ sql: String) throws -> String {
        let process = try SpawnedProcess(
            path, ["-batch", "-bail", database], standardInput: .pipe, standardOutput: .pipe, standardError: .standardOutput)
        try process.standardInput?.write(".timeout 5000\n" + sql + "\n")
        process.standardInput?.close()
        let output = try process.readOutputAndWaitUntilExit()
        let text = output.standardOutputText
        if output.termination.status != 0 { throw ShellError(output: text) }
        return text
    }

    struct ShellError: Error { let output: String }

    /// SQL string literal.
    static func quote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
}

/// A separate `sqlite3` process holding a database's write lock (`BEGIN IMMEDIATE`) until released.
final class ShellWriteLock {
    private let process: SpawnedProcess

    /// Starts the process and returns once it holds the lock (it touches `marker` then).
    init(database: String, marker: String) throws {
        process = try SpawnedProcess(SQLiteShell.path, ["-batch", database], standardInput: .pipe, standardOutput: .null)
        try process.standardInput?.write(".timeout 5000\nBEGIN IMMEDIATE;\n.system touch \(marker)\n")
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: marker) && Date() < deadline { usleep(10_000) }
        guard FileManager.default.fileExists(atPath: marker) else {
            process.terminate()
            throw SQLiteShell.ShellError(output: "sqlite3 did not take the write lock of \(database)")
        }
    }

    /// Commits (nothing was written) and ends the process.
    func release() throws {
        try process.standardInput?.write("COMMIT;\n.quit\n")
        process.standardInput?.close()
        process.waitUntilExit()
    }
}
