import Foundation
import MSALCache
import MSALCore

/// A command line the tool could not accept; exit code 2.
struct UsageError: Error {
    let message: String
}

/// The output format chosen with `--output`.
enum OutputFormat: String {
    case text, json
}

/// The token cache backends `--cache-backend` names.
enum CacheBackendName: String, CaseIterable {
    case sqlite, keyring, json
    case encryptedFile = "encrypted-file"
    /// The library's default chain (keyring, else encrypted file with a key file).
    case auto
}

/// The parsed command line of `msal`.
struct Options {
    var command: String
    var deviceCode = false
    var authority: String?
    var authorityType: AuthorityType?
    var clientID: String?
    var scopes: [String] = []
    var account: String?
    var cache: String?
    var cacheBackend: CacheBackendName = .sqlite
    var cacheKeyFile: String?
    /// From `MSAL_CACHE_PASSPHRASE` only (a flag would show it in `ps`).
    var cachePassphrase: String?
    var accessGroup: String?
    var forceRefresh = false
    var output: OutputFormat = .text
    var redirectURI: String?
    var port: UInt16?
    var prompt: String?
    var loginHint: String?
    var noBrowser = false
    var timeout: TimeInterval?
    var knownAuthorities: [String] = []
    /// `migrate-adal --from`: the ADAL for Python cache to migrate.
    var migrateFrom: String?
    /// `token --adal-cache` (env `MSAL_ADAL_CACHE`): an ADAL for Python cache searched for `--account`.
    var adalCache: String?
    /// `--adal-keyed` (env `MSAL_ADAL_KEYED=1`): `migrate-adal` migrates, and `token` also searches,
    /// the ADAL keyed items in the cache store itself.
    var adalKeyed = false
    /// Whether ``adalCache`` is the Azure CLI's file found by default (not named by the user): then a
    /// file that cannot be read is a warning, not an error.
    var adalCacheIsDefault = false
    /// The arguments after a command that parses its own (`dev-provider`).
    var commandArguments: [String] = []

    static let commands = ["login", "token", "accounts", "logout", "migrate-adal", "demo", "dev-provider", "help"]

    /// Whether the command may create the cache file: a sign-in, a migration, and a silent request
    /// that may upgrade a legacy account (its tokens must outlive the process).
    var createsCache: Bool {
        command == "login" || command == "migrate-adal" || (command == "token" && (adalCache != nil || adalKeyed))
    }

    /// Parses the arguments after the program name; environment fallbacks come from `environment`.
    static func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> Options {
        guard let command = arguments.first else { throw UsageError(message: "missing command") }
        // `msal help [anything]`, `msal --help`: the usage text (it covers every command).
        if command == "--help" || command == "-h" || command == "help" { return Options(command: "help") }
        guard commands.contains(command) else { throw UsageError(message: "unknown command '\(command)'") }
        if command == "dev-provider" { return Options(command: command, commandArguments: Array(arguments.dropFirst())) }
        var options = Options(command: command)
        var index = 1
        func value(for flag: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                throw UsageError(message: "\(flag) needs a value")
            }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            // An option the command does not use is refused before its value is read (so
            // `token --timeout -1` is told where --timeout applies, not what it accepts).
            if let problem = notApplicable(argument, to: command) { throw UsageError(message: problem) }
            switch argument {
            case "--device-code": options.deviceCode = true
            case "--authority": options.authority = try value(for: argument)
            case "--authority-type":
                let raw = try value(for: argument)
                guard let type = AuthorityType(rawValue: raw) else {
                    throw UsageError(message: "--authority-type must be one of \(AuthorityType.allCases.map(\.rawValue).joined(separator: ", ")), not '\(raw)'")
                }
                options.authorityType = type
            case "--client-id": options.clientID = try value(for: argument)
            case "--known-authority": options.knownAuthorities.append(try value(for: argument))
            case "--from": options.migrateFrom = try value(for: argument)
            case "--adal-cache": options.adalCache = try value(for: argument)
            case "--adal-keyed": options.adalKeyed = true
            case "--scope": options.scopes.append(try value(for: argument))
            case "--account": options.account = try value(for: argument)
            case "--cache": options.cache = try value(for: argument)
            case "--cache-backend": options.cacheBackend = try cacheBackend(try value(for: argument), from: argument)
            case "--cache-key-file": options.cacheKeyFile = try value(for: argument)
            case "--access-group": options.accessGroup = try value(for: argument)
            case "--force-refresh": options.forceRefresh = true
            case "--output":
                let raw = try value(for: argument)
                guard let format = OutputFormat(rawValue: raw) else {
                    throw UsageError(message: "--output must be json or text, not '\(raw)'")
                }
                options.output = format
            case "--redirect-uri": options.redirectURI = try value(for: argument)
            case "--port":
                let raw = try value(for: argument)
                guard let port = UInt16(raw), port > 0 else {
                    throw UsageError(message: "--port must be a port number from 1 to 65535, not '\(raw)'")
                }
                options.port = port
            case "--prompt":
                let raw = try value(for: argument)
                guard ["select_account", "login", "consent", "create", "none"].contains(raw) else {
                    throw UsageError(message: "--prompt must be select_account, login, consent, create or none, not '\(raw)'")
                }
                options.prompt = raw
            case "--login-hint": options.loginHint = try value(for: argument)
            case "--no-browser": options.noBrowser = true
            case "--timeout":
                let raw = try value(for: argument)
                guard let seconds = TimeInterval(raw), seconds > 0, seconds.isFinite else {
                    throw UsageError(message: "--timeout must be a positive number of seconds, not '\(raw)'")
                }
                options.timeout = seconds
            case "--help", "-h": options.command = "help"
            default: throw UsageError(message: "unknown option '\(argument)'")
            }
            index += 1
        }
        // The demo brings its own provider, client, scopes and temporary cache: no option and no
        // MSAL_* variable applies to it.
        if options.command == "demo" { return options }
        // An empty variable counts as unset.
        func fallback(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if options.command == "migrate-adal" {
            guard (options.migrateFrom != nil) != options.adalKeyed else {
                throw UsageError(message: options.adalKeyed
                    ? "'migrate-adal' migrates one source: --from PATH or --adal-keyed, not both"
                    : "'migrate-adal' needs --from PATH (the Azure CLI's ADAL cache is ~/.azure/accessTokens.json) or --adal-keyed (ADAL's keyed items in the cache store)")
            }
        }
        if options.command == "token", options.adalCache != nil || options.adalKeyed, options.account == nil {
            throw UsageError(message: "\(options.adalKeyed ? "--adal-keyed" : "--adal-cache") needs --account <UPN>: the ADAL user to find and upgrade")
        }
        if options.command == "token", options.account != nil, options.adalCache == nil { options.adalCache = fallback("MSAL_ADAL_CACHE") }
        // Else the Azure CLI's ADAL file when it exists, as MSAL for iOS/macOS reads ADAL's cache
        // without being asked: `token --account <UPN>` finds a user who is only there.
        if options.command == "token", options.account != nil, options.adalCache == nil {
            let azureCLI = ADALPythonTokenCache.defaultPath(environment: environment)
            if FileManager.default.fileExists(atPath: azureCLI) {
                options.adalCache = azureCLI
                options.adalCacheIsDefault = true
            }
        }
        if options.command == "token", options.account != nil, fallback("MSAL_ADAL_KEYED") == "1" { options.adalKeyed = true }
        if options.authority == nil, options.command != "migrate-adal" { options.authority = fallback("MSAL_AUTHORITY") }
        if options.clientID == nil { options.clientID = fallback("MSAL_CLIENT_ID") }
        if !arguments.contains("--cache-backend"), let raw = fallback("MSAL_CACHE_BACKEND") {
            options.cacheBackend = try cacheBackend(raw, from: "MSAL_CACHE_BACKEND")
        }
        // MSAL_CACHE names a file, which only the file backends have; --cache with keyring is a mistake.
        if options.cache == nil, ![.keyring, .auto].contains(options.cacheBackend) { options.cache = fallback("MSAL_CACHE") }
        if options.accessGroup == nil { options.accessGroup = fallback("MSAL_ACCESS_GROUP") }
        options.cachePassphrase = fallback("MSAL_CACHE_PASSPHRASE")
        if [.keyring, .auto].contains(options.cacheBackend) && options.cache != nil {
            throw UsageError(message: "--cache names a file; --cache-backend \(options.cacheBackend.rawValue) chooses its own place (leave --cache out)")
        }
        if options.cacheBackend == .json && options.cache == nil {
            throw UsageError(message: "--cache-backend json needs --cache PATH (for example ~/.azure/msal_token_cache.json)")
        }
        if options.cacheKeyFile != nil && options.cacheBackend != .encryptedFile {
            throw UsageError(message: "--cache-key-file applies to --cache-backend encrypted-file only")
        }
        if options.cacheKeyFile != nil && options.cachePassphrase != nil {
            throw UsageError(message: "give either --cache-key-file or MSAL_CACHE_PASSPHRASE, not both")
        }
        if options.authorityType == nil, options.command != "migrate-adal", let raw = fallback("MSAL_AUTHORITY_TYPE") {
            guard let type = AuthorityType(rawValue: raw) else {
                throw UsageError(message: "MSAL_AUTHORITY_TYPE must be one of \(AuthorityType.allCases.map(\.rawValue).joined(separator: ", ")), not '\(raw)'")
            }
            options.authorityType = type
        }
        // (Which command each option applies to was checked while parsing: optionCommands.)
        let interactiveOnly = options.redirectURI != nil || options.port != nil || options.prompt != nil
            || options.loginHint != nil || options.noBrowser || options.timeout != nil
        if interactiveOnly && options.deviceCode {
            throw UsageError(message: "--redirect-uri, --port, --prompt, --login-hint, --no-browser and --timeout apply to interactive 'login' only, not with --device-code")
        }
        if (options.command == "login" || options.command == "token") && options.scopes.isEmpty {
            throw UsageError(message: "'\(options.command)' needs at least one --scope")
        }
        return options
    }

    /// The commands that use each option (`--help` applies everywhere; `demo` uses none). Another
    /// command is refused the option with a usage error saying where it applies.
    static let optionCommands: [String: [String]] = {
        let signedIn = ["login", "token", "accounts", "logout"]
        let cached = signedIn + ["migrate-adal"]
        return [
            "--device-code": ["login"],
            "--authority": signedIn,
            "--authority-type": signedIn,
            "--client-id": cached,
            "--known-authority": cached,
            "--from": ["migrate-adal"],
            "--adal-cache": ["token"],
            "--adal-keyed": ["token", "migrate-adal"],
            "--scope": ["login", "token"],
            "--account": ["token", "logout"],
            "--cache": cached,
            "--cache-backend": cached,
            "--cache-key-file": cached,
            "--access-group": cached,
            "--force-refresh": ["token"],
            "--output": cached,
            "--redirect-uri": ["login"],
            "--port": ["login"],
            "--prompt": ["login"],
            "--login-hint": ["login"],
            "--no-browser": ["login"],
            "--timeout": ["login"],
        ]
    }()

    /// The usage error for `option` given to `command`, or `nil` when the command uses it (or
    /// the option is unknown: that is reported as such).
    static func notApplicable(_ option: String, to command: String) -> String? {
        guard let commands = optionCommands[option], !commands.contains(command) else { return nil }
        if command == "demo" {
            return "\(option) does not apply to 'demo': it takes no options (it runs on its own local provider, client, scope and temporary cache, and prints text)"
        }
        switch (option, command) {
        case ("--authority", "migrate-adal"), ("--authority-type", "migrate-adal"):
            return "--authority and --authority-type do not apply to 'migrate-adal': each entry is redeemed at its own _authority"
        case ("--scope", "migrate-adal"):
            return "--scope does not apply to 'migrate-adal': each entry asks for <resource>/.default"
        case ("--from", _):
            return "--from applies to 'migrate-adal' only (for 'token', name an ADAL cache with --adal-cache)"
        case ("--adal-cache", _):
            return "--adal-cache applies to 'token' only (to migrate a whole ADAL cache, run 'msal migrate-adal --from PATH')"
        case ("--redirect-uri", _), ("--port", _), ("--prompt", _), ("--login-hint", _), ("--no-browser", _), ("--timeout", _):
            return "\(option) applies to 'login' only (an interactive sign-in, not --device-code)"
        default:
            let names = commands.map { "'\($0)'" }
            let list = names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " and " + names[names.count - 1]
            return "\(option) applies to \(list) only"
        }
    }

    private static func cacheBackend(_ raw: String, from source: String) throws(UsageError) -> CacheBackendName {
        guard let backend = CacheBackendName(rawValue: raw) else {
            throw UsageError(message: "\(source) must be one of \(CacheBackendName.allCases.map(\.rawValue).joined(separator: ", ")), not '\(raw)'")
        }
        return backend
    }

    static let usage = """
    usage: msal <command> [options]

    commands:
      login                 sign in in the browser (authorization code + PKCE, loopback redirect)
      login --device-code   sign in with the device authorization grant (RFC 8628)
      token                 get an access token silently (cache, else refresh token)
      accounts              list the signed-in accounts
      logout                remove an account and its tokens from the cache
      migrate-adal          move the users of an ADAL cache (the Azure CLI's accessTokens.json, or ADAL's
                            keyed items in the cache store) to the MSAL cache, entry by entry, without
                            signing in again
      demo                  run the whole flow against a local Entra-compatible provider (takes no
                            options; its token cache is a temporary folder under $TMPDIR, default /tmp,
                            removed when it ends, also on Ctrl-C or SIGTERM)
      dev-provider          serve the local Entra-compatible provider until stopped ('msal dev-provider --help')

    options (each applies only to the commands that use it; another command refuses it, exit 2):
      --authority URL             authority (env MSAL_AUTHORITY; default https://login.microsoftonline.com/common)
      --authority-type TYPE       aad, oidc, b2c or adfs; inferred from the URL when absent (env MSAL_AUTHORITY_TYPE)
      --client-id ID              application (client) ID (env MSAL_CLIENT_ID)
      --known-authority HOST      a trusted B2C host (repeatable); B2C authorities need it
      --scope S                   a scope to request; repeat for several
      --account ID_OR_USERNAME    the account (identifier or username) for token/logout
      --adal-cache PATH           token: also look --account up in this ADAL for Python cache and
                                  upgrade it silently (env MSAL_ADAL_CACHE; default the Azure CLI's
                                  ~/.azure/accessTokens.json when it exists); the file is never changed
      --from PATH                 migrate-adal: the ADAL for Python cache to migrate (read-only)
      --adal-keyed                migrate-adal: migrate ADAL's keyed items (MSOpenTech.ADAL.1|...) kept in
                                  the cache store's access group; token: also look --account up there
                                  (env MSAL_ADAL_KEYED=1); the items are never changed
      --cache-backend B           sqlite (default), keyring, encrypted-file, json, or auto (keyring, else
                                  encrypted file) (env MSAL_CACHE_BACKEND)
      --cache PATH                the cache file (env MSAL_CACHE; default $XDG_DATA_HOME/msal/msal_cache.sqlite,
                                  or msal_cache.bin for encrypted-file; json needs one)
      --cache-key-file PATH       encrypted-file: the 32-byte key file (default <cache>.key, created 0600);
                                  or set MSAL_CACHE_PASSPHRASE to use a passphrase instead
      --access-group G            the cache partition shared by apps of one publisher
                                  (env MSAL_ACCESS_GROUP; default com.microsoft.adalcache)
      --force-refresh             token: skip the cached access token and redeem the refresh token
      --redirect-uri URI          login: loopback redirect URI (default http://localhost, any port)
      --port N                    login: the listener's port (replaces the redirect URI's port)
      --prompt P                  login: select_account, login, consent, create or none
      --login-hint NAME           login: pre-fill the username
      --no-browser                login: print the URL instead of opening a browser; still listen
      --timeout SECONDS           login: how long to wait for the redirect (default 300)
      --output json|text          output format (default text); not for demo

    exit codes: 0 success, 1 error, 2 usage error, 3 interaction required
    """
}
