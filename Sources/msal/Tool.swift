import Foundation
import MSAL
import MSALCache
import MSALCacheEncryptedFile
import MSALCacheSQLite
import MSALCore
import MSALWebAuth

/// `msal`: sign in, get tokens and manage accounts from the command line; the contract scripts
/// rely on is in `Options.usage` and README.md.
@main
enum Tool {
    static func main() async {
        // A parent may start this process with SIGINT and SIGTERM blocked (Foundation's Process passes
        // its thread's mask on): then Ctrl-C and `kill` would stay pending, and `msal dev-provider`
        // or a waiting `msal login` would never stop. Unblocked first, before other threads exist.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
        let arguments = Array(CommandLine.arguments.dropFirst())
        let environment = ProcessInfo.processInfo.environment
        let options: Options
        do {
            options = try Options.parse(arguments, environment: environment)
        } catch {
            Console.err("msal: usage error: \(error.message) (run 'msal --help' for usage)")
            exit(2)
        }
        do {
            switch options.command {
            case "help":
                Console.out(Options.usage)
            case "demo":
                try await Demo.run()
            case "dev-provider":
                try await DevProvider.run(arguments: options.commandArguments)
            default:
                try await run(options)
            }
            exit(0)
        } catch let failures as MigrateADAL.Failures {
            // The report was printed; the exit code says whether users must sign in again.
            exit(failures.exitCode)
        } catch let error as UsageError {
            Console.err("msal: usage error: \(error.message)")
            exit(2)
        } catch var error as MSALError {
            if error.internalCode == .invalidAuthority, options.authorityType == nil,
               let authority = options.authority, looksLikeEntraTenant(authority) {
                error.message += " If this is an Entra-compatible provider, pass --authority-type aad."
            }
            if error.code == .interactionRequired, options.command == "token" {
                // No account, or a refresh the provider refused (a revoked or forgotten refresh
                // token): the way on, in one place for every cause.
                error.message += " Sign in with 'msal login'."
            }
            Console.err(error.report(format: options.output))
            exit(error.exitCode)
        } catch {
            Console.err("msal: error: \(error)")
            exit(1)
        }
    }

    /// Whether the URL's last path segment is an Entra tenant (`common`, `organizations`,
    /// `consumers` or a GUID), which a host the tool does not know as Entra makes ambiguous.
    static func looksLikeEntraTenant(_ authority: String) -> Bool {
        guard let last = URL(string: authority)?.path.split(separator: "/").last.map(String.init)?.lowercased() else { return false }
        return ["common", "organizations", "consumers"].contains(last) || UUID(uuidString: last) != nil
    }

    /// The application for the options, and the authority it uses.
    static func makeApplication(_ options: Options) throws -> (PublicClientApplication, Authority) {
        guard let clientID = options.clientID, !clientID.isEmpty else {
            throw UsageError(message: "--client-id (or MSAL_CLIENT_ID) is required")
        }
        let authority = try Authority(
            options.authority ?? "https://login.microsoftonline.com/common", type: options.authorityType,
            knownAuthorities: Set(options.knownAuthorities))
        var configuration = PublicClientApplicationConfiguration(
            clientID: clientID, authority: authority, cacheBackend: cacheBackend(options),
            accessGroup: options.accessGroup ?? TokenCacheAccessGroup.default)
        if let redirect = try redirectURI(options) { configuration.redirectURI = redirect }
        if let adalCache = options.adalCache { configuration.legacyCaches = [ADALPythonTokenCache(path: adalCache)] }
        if options.adalKeyed && options.command == "token" { configuration.readsADALKeyedItems = true }
        return (try PublicClientApplication(configuration: configuration), authority)
    }

    /// The cache backend of `--cache-backend`, `--cache`, `--cache-key-file` and `MSAL_CACHE_PASSPHRASE`.
    /// Only a sign-in or a migration (`migrate-adal`, `token --adal-cache`) creates a cache file:
    /// reading commands on a missing file (a mistyped path, or nobody signed in yet) see an empty
    /// cache and create nothing.
    static func cacheBackend(_ options: Options) -> TokenCacheBackend {
        let path: String?
        switch options.cacheBackend {
        case .sqlite: path = options.cache ?? SQLiteTokenCacheStore.defaultPath()
        case .encryptedFile: path = options.cache ?? EncryptedFileTokenCacheStore.defaultPath()
        case .json: path = options.cache
        case .keyring, .auto: path = nil
        }
        if let path, !options.createsCache, !FileManager.default.fileExists(atPath: path) { return .inMemory }
        switch options.cacheBackend {
        case .sqlite: return .sqlite(path: path)
        case .json: return .jsonFile(path: path ?? "")
        case .keyring: return .keyring
        case .auto: return .platformDefault
        case .encryptedFile:
            let key: EncryptedFileKey = options.cachePassphrase.map { .passphrase($0) } ?? .keyFile(path: options.cacheKeyFile)
            return .encryptedFile(path: path, key: key)
        }
    }

    /// `--redirect-uri`, with `--port` replacing its port (or `http://localhost:<port>` alone);
    /// the tool listens itself, so only a loopback redirect URI is accepted.
    static func redirectURI(_ options: Options) throws -> String? {
        var redirect = options.redirectURI
        if let port = options.port {
            guard var components = URLComponents(string: options.redirectURI ?? "http://localhost") else {
                throw UsageError(message: "--redirect-uri is not a URI")
            }
            components.port = Int(port)
            redirect = components.string
        }
        guard let redirect else { return nil }
        // A custom scheme (myapp://, msauth.<application ID>://) cannot reach the tool's listener:
        // refused as not loopback before RedirectURI checks what that scheme would need.
        if let scheme = URLComponents(string: redirect)?.scheme?.lowercased(), scheme != "http", scheme != "https" {
            throw UsageError(message: loopbackRedirectNeeded)
        }
        let parsed: RedirectURI
        do {
            parsed = try RedirectURI(redirect, applicationID: nil)
        } catch {
            throw UsageError(message: "--redirect-uri: \(error.message)")
        }
        guard parsed.isLoopback else { throw UsageError(message: loopbackRedirectNeeded) }
        return redirect
    }

    /// The usage error for a redirect URI the tool cannot listen on.
    static let loopbackRedirectNeeded = "msal login needs a loopback redirect URI (http://127.0.0.1[:port][/path] or http://localhost[:port][/path])"

    static func run(_ options: Options) async throws {
        let (application, authority) = try makeApplication(options)
        if let movedAside = (application.cacheStore as? SQLiteTokenCacheStore)?.movedAsideCorruptFile {
            // Tokens are lost with the damaged file; say so once, where scripts expect diagnostics.
            Console.err("msal: warning: the token cache was damaged; it was moved to \(movedAside) and a new one started (users sign in again)")
        }
        switch options.command {
        case "login" where !options.deviceCode:
            let output = options.output
            let browser: any BrowserLauncher = options.noBrowser ? ClosureBrowserLauncher { _ in false } : SystemBrowserLauncher()
            var parameters = InteractiveTokenParameters(
                scopes: options.scopes, promptType: options.prompt.flatMap(Prompt.init(rawValue:)),
                loginHint: options.loginHint, browser: browser, timeout: options.timeout ?? 300)
            parameters.authorizationURLHandler = { url, opened in
                switch output {
                case .json:
                    Console.err(Console.jsonLine(["authorization_url": url.absoluteString, "browser_opened": opened]))
                case .text:
                    Console.err(opened
                        ? "Opening a browser to sign in; if none shows up, open this URL: \(url.absoluteString)"
                        : "Open this URL in a browser to sign in: \(url.absoluteString)")
                }
            }
            printResult(try await application.acquireToken(with: parameters), output)
        case "login":
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
            _ = try ScopeSet.validatedRequest(options.scopes)  // a bad scope is reported before "no account"
            if let path = options.adalCache {
                // A named ADAL file that cannot be read is an error, not an unknown account; the
                // Azure CLI's file found by default only earns a warning.
                do {
                    _ = try ADALPythonTokenCache(path: path).read()
                } catch {
                    guard options.adalCacheIsDefault else { throw error }
                    Console.err("msal: warning: the Azure CLI's ADAL cache was not read: \(error.message)")
                }
            }
            let account = try resolveAccount(application, options.account, authority: authority)
            let result = try await application.acquireTokenSilent(with: SilentTokenParameters(
                scopes: options.scopes, account: account, forceRefresh: options.forceRefresh))
            printResult(result, options.output)
        case "accounts":
            let accounts = try application.allAccounts().filter { $0.environment.lowercased() == authority.environment }
            switch options.output {
            case .json: Console.out(Console.jsonLine(accounts.map(\.jsonObject)))
            case .text:
                if accounts.isEmpty { Console.out("No accounts.") }
                for account in accounts {
                    Console.out("\(account.identifier)\t\(account.username ?? "-")\t\(account.environment)")
                }
            }
        case "logout":
            // Signing out is idempotent: no matching account means there is nothing to remove.
            let account: Account
            do {
                account = try resolveAccount(application, options.account, authority: authority)
            } catch let error as MSALError where error.code == .interactionRequired {
                switch options.output {
                case .json: Console.out(Console.jsonLine(["removed": NSNull()]))
                case .text: Console.out("No signed-in account matched at \(authority.environment); nothing was removed.")
                }
                return
            }
            try application.remove(account: account)
            switch options.output {
            case .json: Console.out(Console.jsonLine(["removed": account.jsonObject]))
            case .text: Console.out("Removed \(account.username ?? account.identifier) (\(account.environment)) from the cache.")
            }
        case "migrate-adal":
            let source: any LegacyTokenCache
            if let path = options.migrateFrom {
                source = ADALPythonTokenCache(path: path)
            } else {
                guard let store = application.cacheStore as? any ADALKeyedItemStore else {
                    throw UsageError(message: "the cache store keeps no ADAL keyed items")
                }
                source = ADALKeyedTokenCache(store: store)
            }
            try await MigrateADAL.run(application, from: source, output: options.output)
        default:
            throw UsageError(message: "unknown command '\(options.command)'")
        }
    }

    /// The account named by `--account` (identifier first, then username), or the only account,
    /// among the accounts of the authority's environment (one cache may hold several providers').
    static func resolveAccount(_ application: PublicClientApplication, _ name: String?, authority: Authority) throws -> Account {
        let accounts = try application.allAccounts().filter { $0.environment.lowercased() == authority.environment }
        if let name {
            let wanted = name.lowercased()
            if let account = accounts.first(where: { $0.identifier.lowercased() == wanted })
                ?? accounts.first(where: { $0.username?.lowercased() == wanted }) {
                return account
            }
            // With --adal-cache: a user of the ADAL cache who has not been migrated yet (the silent
            // request upgrades it); two accounts with the username are an ambiguousAccount error.
            // (An MSAL account of another provider's environment is not one of this authority's.)
            if !application.configuration.legacyCaches.isEmpty || application.configuration.readsADALKeyedItems, let legacy = try application.account(forUsername: name),
               try !application.allAccounts().contains(where: { $0.identifier.lowercased() == legacy.identifier.lowercased() }) {
                return legacy
            }
            throw MSALError(.interactionRequired, message: "No signed-in account at \(authority.environment) for client ID \(application.configuration.clientID) matches '\(name)'.")
        }
        switch accounts.count {
        case 0: throw MSALError(.interactionRequired, message: "No account is signed in at \(authority.environment) for client ID \(application.configuration.clientID).")
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
