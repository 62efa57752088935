import Foundation
import MSAL
import MSALCacheSQLite
import MSALCore

/// `msal`: sign in, get tokens and manage accounts from the command line; the contract scripts
/// rely on is in `Options.usage` and README.md.
@main
enum Tool {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let environment = ProcessInfo.processInfo.environment
        let options: Options
        do {
            options = try Options.parse(arguments, environment: environment)
        } catch {
            Console.err("msal: usage error: \(error.message)")
            Console.err("run 'msal --help' for usage")
            exit(2)
        }
        do {
            switch options.command {
            case "help":
                Console.out(Options.usage)
            case "demo":
                try await Demo.run(output: options.output)
            default:
                try await run(options)
            }
            exit(0)
        } catch let error as UsageError {
            Console.err("msal: usage error: \(error.message)")
            exit(2)
        } catch let error as MSALError {
            Console.err(error.report(format: options.output))
            exit(error.exitCode)
        } catch {
            Console.err("msal: error: \(error)")
            exit(1)
        }
    }

    static func makeApplication(_ options: Options) throws -> PublicClientApplication {
        guard let clientID = options.clientID, !clientID.isEmpty else {
            throw UsageError(message: "--client-id (or MSAL_CLIENT_ID) is required")
        }
        let authority = try Authority(options.authority ?? "https://login.microsoftonline.com/common", type: options.authorityType)
        let store = try SQLiteTokenCacheStore(path: options.cache ?? SQLiteTokenCacheStore.defaultPath())
        return try PublicClientApplication(configuration: PublicClientApplicationConfiguration(
            clientID: clientID, authority: authority, cacheStore: store))
    }

    static func run(_ options: Options) async throws {
        let application = try makeApplication(options)
        switch options.command {
        case "login":
            guard options.deviceCode else {
                throw UsageError(message: "interactive sign-in is not available yet; use 'msal login --device-code'")
            }
            let output = options.output
            let result = try await application.acquireToken(with: DeviceCodeParameters(scopes: options.scopes)) { info in
                switch output {
                case .json:
                    Console.err(Console.jsonLine([
                        "user_code": info.userCode,
                        "verification_uri": info.verificationURI.absoluteString,
                        "expires_in": Int(info.expiresIn),
                        "message": info.message,
                    ]))
                case .text:
                    Console.err(info.message)
                }
            }
            printResult(result, output)
        case "token":
            let account = try resolveAccount(application, options.account)
            let result = try await application.acquireTokenSilent(with: SilentTokenParameters(
                scopes: options.scopes, account: account, forceRefresh: options.forceRefresh))
            printResult(result, options.output)
        case "accounts":
            let accounts = try application.allAccounts()
            switch options.output {
            case .json: Console.out(Console.jsonLine(accounts.map(\.jsonObject)))
            case .text:
                if accounts.isEmpty { Console.out("No accounts.") }
                for account in accounts {
                    Console.out("\(account.identifier)\t\(account.username ?? "-")\t\(account.environment)")
                }
            }
        case "logout":
            let account = try resolveAccount(application, options.account)
            try application.remove(account: account)
            switch options.output {
            case .json: Console.out(Console.jsonLine(["removed": account.jsonObject]))
            case .text: Console.out("Removed \(account.username ?? account.identifier) from the cache.")
            }
        default:
            throw UsageError(message: "unknown command '\(options.command)'")
        }
    }

    /// The account named by `--account` (identifier first, then username), or the only account.
    static func resolveAccount(_ application: PublicClientApplication, _ name: String?) throws -> Account {
        if let name {
            if let account = try application.account(forIdentifier: name) ?? application.account(forUsername: name) {
                return account
            }
            throw MSALError(.interactionRequired, message: "No signed-in account matches '\(name)'; run 'msal login'.")
        }
        let accounts = try application.allAccounts()
        switch accounts.count {
        case 0: throw MSALError(.interactionRequired, message: "No account is signed in; run 'msal login'.")
        case 1: return accounts[0]
        default: throw UsageError(message: "\(accounts.count) accounts are signed in; choose one with --account")
        }
    }

    static func printResult(_ result: AuthenticationResult, _ output: OutputFormat) {
        switch output {
        case .json:
            Console.out(Console.jsonLine(result.jsonObject))
        case .text:
            Console.out("""
            account:        \(result.account.username ?? "-") (\(result.account.identifier))
            token source:   \(result.tokenSource.rawValue)
            expires on:     \(result.expiresOn.iso8601UTC)
            scopes:         \(result.scopes.joined(separator: " "))
            correlation id: \(result.correlationID)
            access token:   \(result.accessToken)
            """)
        }
    }
}
