import Foundation
import MSALTestSupport
import Testing

/// The `msal` tool as a script sees it: exit codes and one-line errors for bad input.
/// (`scripts/e2e-glewlwyd-cli.sh` drives the same binary through a whole sign-in against Glewlwyd.)
@Suite("The msal tool's contract for bad input, and the demo")
struct ToolTests {
    static let binary = repositoryRoot.appendingPathComponent(".build/debug/msal").path

    struct Run {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs the tool with a fresh cache file and no MSAL_* variables from the outer environment.
    func msal(_ arguments: String...) async throws -> Run { try await msal(arguments) }

    /// Runs the tool with a fresh cache file, no MSAL_* variables from the outer environment, and
    /// `environment` added.
    func msal(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> Run {
        try #require(FileManager.default.isExecutableFile(atPath: Self.binary), "build the tool first: swift build --product msal")
        let directory = TemporaryDirectory()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("MSAL_") }
        environment["MSAL_CACHE"] = directory.path("cache.sqlite")
        environment.merge(extra) { _, added in added }
        let output = try await SpawnedProcess(
            Self.binary, arguments, environment: environment, standardOutput: .pipe, standardError: .pipe
        ).readOutputAndWait()
        return Run(status: output.termination.status, stdout: output.standardOutputText, stderr: output.standardErrorText)
    }

    @Test("An authority that is not a URL: exit 1, one line naming invalidAuthority")
    func notAURL() async throws {
        let run = try await msal("token", "--client-id", "app", "--authority", "not a url", "--scope", "s")
        #expect(run.status == 1)
        #expect(run.stderr.contains("internal.invalidAuthority"))
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    @Test("http on a non-loopback host: exit 1, the error says https")
    func httpNonLoopback() async throws {
        let run = try await msal("login", "--device-code", "--client-id", "app", "--authority", "http://idp.example.com/x", "--scope", "s", "--output", "json")
        #expect(run.status == 1)
        let object = try JSONSerialization.jsonObject(with: Data(run.stderr.utf8)) as? [String: Any]
        #expect(object?["error"] as? String == "internal.invalidAuthority")
        #expect((object?["message"] as? String)?.contains("https") == true)
    }

    @Test("A provider that is down: exit 1, networkError")
    func providerDown() async throws {
        let run = try await msal("login", "--device-code", "--client-id", "app", "--authority", "http://127.0.0.1:9/common", "--authority-type", "aad", "--scope", "s")
        #expect(run.status == 1)
        #expect(run.stderr.contains("internal.networkError"))
    }

    @Test("A reserved scope passed by the app: exit 1, invalidScope")
    func reservedScope() async throws {
        let run = try await msal("login", "--device-code", "--client-id", "app", "--authority", "http://127.0.0.1:9/common", "--authority-type", "aad", "--scope", "offline_access")
        #expect(run.status == 1)
        #expect(run.stderr.contains("internal.invalidScope"))
    }

    @Test("Usage errors exit 2", arguments: [["frobnicate"], ["token", "--scope"], ["token", "--scope", "s"], ["token", "--client-id", "a", "--output", "xml"], ["accounts", "--authority-type", "saml", "--client-id", "a"],
        ["token", "--client-id", "a"], ["accounts", "--client-id", "a", "--force-refresh"], ["token", "--client-id", "a", "--scope", "s", "--device-code"],
        ["login", "--client-id", "a", "--scope", "s", "--prompt", "bogus"], ["token", "--client-id", "a", "--scope", "s", "--no-browser"],
        ["login", "--device-code", "--client-id", "a", "--scope", "s", "--port", "8400"], ["login", "--client-id", "a", "--scope", "s", "--port", "0"],
        ["login", "--client-id", "a", "--scope", "s", "--redirect-uri", "myapp://auth"],
        ["login", "--client-id", "a", "--scope", "s", "--redirect-uri", "msauth.com.contoso.App://auth"],
        ["login", "--client-id", "a", "--scope", "s", "--timeout", "-1"], ["token", "--client-id", "a", "--scope", "s", "--timeout", "5"]])
    func usage(arguments: [String]) async throws {
        let run = try await msal(arguments)
        #expect(run.status == 2)
        #expect(run.stderr.contains("usage error"))
    }

    @Test("An option the command does not use is a usage error saying where it applies, before its value is checked",
          arguments: [
            (["demo", "--output", "json"], "--output does not apply to 'demo'"),
            (["demo", "--output", "text"], "--output does not apply to 'demo'"),
            (["demo", "--scope", "x"], "--scope does not apply to 'demo'"),
            (["demo", "--cache", "/tmp/x.sqlite"], "--cache does not apply to 'demo'"),
            (["demo", "--client-id", "a"], "--client-id does not apply to 'demo'"),
            (["demo", "--force-refresh"], "--force-refresh does not apply to 'demo'"),
            (["accounts", "--client-id", "a", "--scope", "x"], "--scope applies to 'login' and 'token' only"),
            (["accounts", "--client-id", "a", "--account", "bob"], "--account applies to 'token' and 'logout' only"),
            (["token", "--client-id", "a", "--scope", "s", "--timeout", "-1"], "--timeout applies to 'login' only"),
            (["accounts", "--client-id", "a", "--timeout", "5"], "--timeout applies to 'login' only"),
            (["login", "--client-id", "a", "--scope", "s", "--timeout", "-1"], "--timeout must be a positive number of seconds"),
            (["accounts", "--client-id", "a", "--force-refresh"], "--force-refresh applies to 'token' only"),
          ])
    func optionNotUsed(arguments: [String], message: String) async throws {
        let run = try await msal(arguments)
        #expect(run.status == 2)
        #expect(run.stderr.contains("msal: usage error: \(message)"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(run.stdout.isEmpty)
    }

    @Test("A redirect URI with a custom scheme, msauth included, is refused as not loopback",
          arguments: ["myapp://auth", "msauth.com.x.y://auth", "msauth.com.contoso.App://auth"])
    func customSchemeRedirect(uri: String) async throws {
        let run = try await msal("login", "--no-browser", "--client-id", "a", "--scope", "s", "--redirect-uri", uri)
        #expect(run.status == 2)
        #expect(run.stderr.contains("msal login needs a loopback redirect URI"), "\(run.stderr)")
        #expect(!run.stderr.contains("application ID"))
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    @Test("A --state file that is not a saved provider state: exit 1, one line naming the file and what is wrong; the file is left untouched",
          arguments: [
            ("garbage\n", "not JSON"),
            ("{}", "missing field 'version'"),
            (#"{"version":1,"users":[],"tenants":[],"domains":{},"guests":{},"refresh_tokens":[{"refresh_token":"RT-SECRET-1","username":"a"}]}"#,
             "missing field 'refresh_tokens[0].scopes'"),
          ])
    func corruptStateFile(contents: String, problem: String) async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("st.json")
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        let run = try await msal("dev-provider", "--state", path)
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty, "it must not start: \(run.stdout)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(run.stderr)")
        #expect(run.stderr.contains("--state '\(path)' is not a saved provider state (\(problem))"), "\(run.stderr)")
        #expect(run.stderr.contains("left untouched"))
        #expect(run.stderr.contains("another --state path") && run.stderr.contains("delete the file"))
        for leak in ["DecodingError", "CodingKeys", "Debug description", "internal.invalidParameter", "RT-SECRET-1"] {
            #expect(!run.stderr.contains(leak), "\(run.stderr)")
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == contents)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["st.json"])
    }

    @Test("A bad scope is reported as such even when no account is signed in", arguments: ["a b", "e\u{01}"])
    func badScopeBeforeAccount(scope: String) async throws {
        let run = try await msal("token", "--client-id", "app", "--scope", scope)
        #expect(run.status == 1)
        #expect(run.stderr.contains("internal.invalidScope"))
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    @Test("An Entra-shaped authority read as OpenID Connect gets a hint to pass --authority-type aad")
    func authorityTypeHint() async throws {
        let provider = LocalIdentityProvider()
        try provider.start()
        defer { provider.stop() }
        let run = try await msal("login", "--device-code", "--client-id", LocalIdentityProvider.demoClientID,
                                 "--authority", provider.authority(tenant: "organizations"), "--scope", "s")
        #expect(run.status == 1)
        #expect(run.stderr.contains("internal.invalidAuthority"))
        #expect(run.stderr.contains("--authority-type aad"))
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    @Test("A damaged SQLite cache is moved aside, and the tool says where")
    func damagedCacheMovedAside() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("cache.sqlite")
        // An SQLite header followed by garbage: a database file, damaged.
        var bytes = Data("SQLite format 3\u{0}".utf8)
        bytes.append(Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }))
        try bytes.write(to: URL(fileURLWithPath: path))
        let run = try await msal("accounts", "--client-id", "app", "--cache", path, "--output", "json")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        let moved = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.hasPrefix("cache.sqlite.corrupt-") && !$0.contains("-wal") && !$0.contains("-shm") }
        #expect(moved.count == 1)
        #expect(run.stderr.contains("moved to") && run.stderr.contains(moved.first ?? "?"), "\(run.stderr)")
        #expect(try Data(contentsOf: directory.url.appendingPathComponent(moved.first ?? "?")) == bytes)
    }

    @Test("Reading commands on a missing cache file create nothing")
    func readingCreatesNothing() async throws {
        let directory = TemporaryDirectory()
        let missing = directory.url.appendingPathComponent("no/such/dir/cache.sqlite").path
        let accounts = try await msal("accounts", "--client-id", "app", "--cache", missing, "--output", "json")
        #expect(accounts.status == 0)
        #expect(accounts.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        let token = try await msal("token", "--client-id", "app", "--scope", "s", "--cache", missing)
        #expect(token.status == 3)
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("no").path))
    }

    @Test("No account in the cache: token exits 3")
    func noAccount() async throws {
        let run = try await msal("token", "--client-id", "app", "--scope", "s")
        #expect(run.status == 3)
        #expect(run.stderr.contains("interactionRequired"))
        // The accounts listed are those of this client ID: the message names it.
        #expect(run.stderr.contains("for client ID app"))
        #expect(run.stderr.contains("Sign in with 'msal login'."))
    }

    @Test("Usage errors are one line on stderr")
    func usageOneLine() async throws {
        let run = try await msal("token", "--bogus")
        #expect(run.status == 2)
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    @Test("logout with no matching account is idempotent: exit 0, nothing removed")
    func logoutNothing() async throws {
        let run = try await msal("logout", "--client-id", "app", "--account", "bob@example.test", "--output", "json")
        #expect(run.status == 0)
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"removed":null}"#)
    }

    @Test("msal demo runs the whole flow on the local provider and exits 0")
    func demo() async throws {
        let run = try await msal("demo")
        #expect(run.status == 0)
        #expect(run.stdout.contains("token source identity_provider"))
        #expect(run.stdout.contains("token source cache"))
        #expect(run.stdout.contains("a new access token: yes"))
        #expect(run.stdout.contains("Signing in interactively"))
        #expect(run.stdout.contains("Demo finished"))
    }
}
