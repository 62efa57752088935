import Foundation
import MSAL
import MSALCache
import MSALCore

/// `msal migrate-adal --from PATH | --adal-keyed`: moves the users of an ADAL for Python cache (the
/// Azure CLI's `accessTokens.json`), or of ADAL's keyed items in the cache store, to the MSAL cache,
/// entry by entry, and reports each entry (entry numbers are positions in the file, or in the keyed
/// items sorted by service then account).
///
/// Each user entry of this client is redeemed at the v2.0 endpoint of its own `_authority` for
/// `<resource>/.default` (``PublicClientApplication/upgrade(legacyEntry:scopes:correlationID:)``);
/// the file is only read. Output, one line per entry in the file's order:
/// - text: `entry N: migrated <user> (resource R, authority A): account <identifier>`,
///   `entry N: skipped[ <user> (…)]: <reason>` or `entry N: failed <user> (…): <error>`, then a
///   count line;
/// - `--output json`: one JSON object per entry with `entry`, `user_id`, `authority`, `resource`,
///   `status` (`migrated`, `skipped`, `failed`), `reason` (`null` when migrated) and `account` (the
///   new account identifier, `null` unless migrated).
///
/// Never prints a token: reasons are the library's error messages, which hold none.
/// Exit code: 0 when no entry failed; 3 when every failure is a rejected refresh token (those users
/// sign in again); 1 when another failure happened (the provider was down, ...). A file that cannot
/// be read at all is an error (exit 1) before any entry.
enum MigrateADAL {
    /// One entry's outcome.
    struct Row {
        var position: Int
        var userID: String?
        var authority: String?
        var resource: String?
        var status: String
        var reason: String?
        var account: String?
        var error: MSALError?
    }

    /// Thrown after the report when some entry failed, to set the exit code.
    struct Failures: Error {
        var exitCode: Int32
    }

    static func run(_ application: PublicClientApplication, from cache: any LegacyTokenCache, output: OutputFormat) async throws {
        // A cache store that cannot be used (not MSAL JSON, wrong key) is reported before any refresh
        // token is redeemed: tokens that could not be stored would be lost.
        _ = try application.allAccounts()
        let contents = try cache.read()
        var rows: [Row] = contents.skipped.map {
            Row(position: $0.position, userID: $0.userID, authority: $0.authority, resource: $0.resource, status: "skipped", reason: $0.message)
        }
        let clientID = application.configuration.clientID
        for entry in contents.entries {
            var row = Row(position: entry.position, userID: entry.userID, authority: entry.authority, resource: entry.resource, status: "skipped")
            if entry.clientID.lowercased() != clientID.lowercased() {
                row.reason = "issued to client \(entry.clientID), not \(clientID): run migrate-adal with --client-id \(entry.clientID) to migrate it"
            } else {
                do {
                    let result = try await application.upgrade(legacyEntry: entry)
                    row.status = "migrated"
                    row.account = result.account.identifier
                } catch {
                    if entry.entraAuthority == nil || error.internalCode == .invalidScope {
                        // Not an Entra ID entry (AD FS), or a resource that is no valid scope: this
                        // entry cannot be migrated, nothing failed.
                        row.reason = error.internalCode == .invalidScope ? "malformed: the resource is not a valid scope (\(error.message))" : error.message
                    } else {
                        row.status = "failed"
                        row.reason = "\(error.codeString): \(error.message)"
                        row.error = error
                    }
                }
            }
            rows.append(row)
        }
        rows.sort { $0.position < $1.position }
        for row in rows { Console.out(line(row, output)) }
        let failures = rows.compactMap(\.error)
        if output == .text {
            let count = { (status: String) in rows.filter { $0.status == status }.count }
            Console.out("\(count("migrated")) migrated, \(count("skipped")) skipped, \(count("failed")) failed.")
        }
        if !failures.isEmpty {
            throw Failures(exitCode: failures.allSatisfy { $0.code == .interactionRequired } ? 3 : 1)
        }
    }

    static func line(_ row: Row, _ output: OutputFormat) -> String {
        switch output {
        case .json:
            return Console.jsonLine([
                "entry": row.position,
                "user_id": row.userID ?? NSNull(),
                "authority": row.authority ?? NSNull(),
                "resource": row.resource ?? NSNull(),
                "status": row.status,
                "reason": row.reason ?? NSNull(),
                "account": row.account ?? NSNull(),
            ] as [String: Any])
        case .text:
            var subject = ""
            if let user = row.userID {
                subject = " \(user) (resource \(row.resource ?? "-"), authority \(row.authority ?? "-"))"
            }
            let text = switch row.status {
            case "migrated": "entry \(row.position): migrated\(subject): account \(row.account ?? "-")"
            default: "entry \(row.position): \(row.status)\(subject): \(row.reason ?? "-")"
            }
            return oneLine(text)
        }
    }

    /// `text` with control characters (line breaks from a server's error description, or planted in
    /// the file's fields) and bidirectional formatting characters (U+200E, U+200F, U+202A to U+202E,
    /// U+2066 to U+2069, which could make a line read differently than it is) as spaces, so each
    /// entry stays one honest line.
    static func oneLine(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            let value = scalar.value
            let hidden = value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x200E || value == 0x200F
                || (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value)
            return hidden ? " " : scalar
        }))
    }
}
