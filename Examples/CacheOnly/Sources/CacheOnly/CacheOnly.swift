import Foundation
import MSALCache
import MSALCacheSQLite
import MSALCore

/// `cache-only [DATABASE]`: writes an account, an access token and a refresh token to an SQLite
/// token cache through ``TokenCache``, reads them back through a second store on the same file (as
/// another process would), and checks that every lookup returns what was written.
///
/// Exit status: 0 when every check passed, 1 when something read back differs from what was written,
/// 2 for a usage error, 3 when the cache could not be opened, read or written. Prints no secret.
@main
enum CacheOnly {
    static let usage = """
        usage: cache-only [DATABASE]
          Writes an example account, access token and refresh token to the SQLite token cache at
          DATABASE (created if missing; default: a new temporary file, removed afterwards), in the
          access group \(SampleEntries.accessGroup) so the entries of other apps are never touched,
          then reads them back and checks them.
        """

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let status: Int32
        if arguments == ["-h"] || arguments == ["--help"] {
            print(usage)
            status = 0
        } else if arguments.count > 1 || arguments.first?.hasPrefix("-") == true || arguments.first == "" {
            printError("cache-only: expected at most one argument, the database path.\n\(usage)")
            status = 2
        } else if let path = arguments.first {
            status = run(databasePath: path)
        } else {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cache-only-\(UUID().uuidString)")
            status = run(databasePath: directory.appendingPathComponent("cache.sqlite").path)
            try? FileManager.default.removeItem(at: directory)
            print("cache-only: removed the temporary database.")
        }
        exit(status)
    }

    /// Writes the sample entries to the database at `path`, reads them back and prints what it found.
    /// - Returns: the exit status (0, 1 or 3; see the type's documentation).
    static func run(databasePath path: String) -> Int32 {
        let sample = SampleEntries(now: Date())
        print("cache-only: SQLite token cache at \(path), access group \(SampleEntries.accessGroup)")
        do throws(MSALError) {
            // Write: one store, one TokenCache, one atomic change with all three entries.
            let writer = TokenCache(store: try SQLiteTokenCacheStore(path: path, accessGroup: SampleEntries.accessGroup))
            try writer.save(
                accessToken: sample.accessToken, refreshToken: sample.refreshToken,
                idToken: nil, account: sample.account, appMetadata: nil)
            print("wrote an account, an access token (\(sample.accessToken.scopes.count) scopes) and a refresh token")

            // Read: a second connection to the same file, and a TokenCache that has seen nothing yet.
            let readerStore = try SQLiteTokenCacheStore(path: path, accessGroup: SampleEntries.accessGroup)
            let reader = TokenCache(store: readerStore)
            var checks = Checks()
            let account = sample.account, written = sample.accessToken

            checks.expect(
                try reader.accounts().contains(account),
                "account \(account.username ?? "?") read back (tenant \(account.realm))")

            for requested in [["mail.read"], ["USER.READ", "Calendars.Read"]] {
                let found = try reader.accessToken(
                    homeAccountID: account.homeAccountID, environment: account.environment, realm: account.realm,
                    clientID: SampleEntries.clientID, scopes: ScopeSet(requested))
                checks.expect(
                    found == written,
                    "access token for [\(requested.joined(separator: " "))] found: cached scopes \(written.scopes),"
                        + " expires \(written.expiresOn.formatted(.iso8601)), secret matches (not shown)",
                    otherwise: found == nil ? "none found" : "the entry read back differs from the one written")
            }

            let notSubset = ["Mail.Read", "Files.Read"]
            let unexpected = try reader.accessToken(
                homeAccountID: account.homeAccountID, environment: account.environment, realm: account.realm,
                clientID: SampleEntries.clientID, scopes: ScopeSet(notSubset))
            checks.expect(
                unexpected == nil,
                "no access token for [\(notSubset.joined(separator: " "))]: not a subset of the cached scopes",
                otherwise: "an access token was returned")

            let refreshToken = try reader.refreshToken(
                homeAccountID: account.homeAccountID, environment: account.environment, clientID: SampleEntries.clientID)
            checks.expect(
                refreshToken == sample.refreshToken,
                "refresh token for the client found, secret matches (not shown)",
                otherwise: refreshToken == nil ? "none found" : "the entry read back differs from the one written")

            let contents = try readerStore.readAll()
            checks.expect(
                contents.accounts[account.key] == account && contents.accessTokens[written.key] == written
                    && contents.refreshTokens[sample.refreshToken.key] == sample.refreshToken && contents.count == 3,
                "the access group holds exactly these 3 entries under their MSAL keys",
                otherwise: "it holds \(contents.count) entries, or not these")

            guard checks.failed == 0 else {
                printError("cache-only: \(checks.failed) of \(checks.count) checks failed")
                return 1
            }
            print("cache-only: all \(checks.count) checks passed")
            return 0
        } catch {
            // MSALError's description says what happened and what to do; it never holds a token.
            printError("cache-only: \(error)")
            return 3
        }
    }
}

/// Counts checks and prints one line for each: `ok   <what>` on standard output, or
/// `FAIL <what>: <why>` on standard error.
struct Checks {
    private(set) var count = 0
    private(set) var failed = 0

    mutating func expect(_ condition: Bool, _ what: String, otherwise why: String = "") {
        count += 1
        if condition {
            print("ok   \(what)")
        } else {
            failed += 1
            printError("FAIL \(what): \(why.isEmpty ? "not so" : why)")
        }
    }
}

/// Writes `message` and a newline to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
