import Foundation
import MSALCore
import MSALTestSupport
import Synchronization
import Testing

/// Access groups across processes: two apps (different client IDs, each a separate `msal` process)
/// on one cache store share accounts and family refresh tokens when they name the same access group,
/// and see nothing of each other when they name different groups; on every persistent backend.
@Suite("Access groups across processes, through the msal tool")
struct AccessGroupToolTests {
    static let appA = "a0a0a0a0-0000-4000-8000-00000000000a"
    static let appB = "b0b0b0b0-0000-4000-8000-00000000000b"
    /// A persistent backend and the `msal` flags and environment that select it.
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, json, encryptedKeyFile, encryptedPassphrase, keyring

        var testDescription: String { rawValue }

        /// Every backend; the keyring only in a throwaway keyring session (scripts/test.sh), never
        /// in a developer's own keyring, and always when MSAL_KEYRING_REQUIRED=1 (then it fails
        /// without one).
        static var tested: [Backend] {
            allCases.filter { $0 != .keyring || ThrowawayKeyring.inUse }
        }

        func flags(_ directory: TemporaryDirectory) -> [String] {
            switch self {
            case .keyring: ["--cache-backend", "keyring"]
            case .sqlite: ["--cache-backend", "sqlite", "--cache", directory.path("cache.sqlite")]
            case .json: ["--cache-backend", "json", "--cache", directory.path("msal_token_cache.json")]
            case .encryptedKeyFile:
                ["--cache-backend", "encrypted-file", "--cache", directory.path("cache.bin"), "--cache-key-file", directory.path("cache.key")]
            case .encryptedPassphrase: ["--cache-backend", "encrypted-file", "--cache", directory.path("cache.bin")]
            }
        }

        var environment: [String: String] {
            self == .encryptedPassphrase ? ["MSAL_CACHE_PASSPHRASE": "correct horse battery staple"] : [:]
        }
    }

    @Test("Same group: the second app sees the account and redeems the family refresh token; another group sees nothing",
          arguments: Backend.tested)
    func sharedAndIsolated(backend: Backend) async throws {
        // Groups of this run only: the keyring outlives a test.
        let run = UUID().uuidString.prefix(8).lowercased()
        let shared = "com.contoso.shared.\(run)", other = "com.fabrikam.private.\(run)"
        let provider = LocalIdentityProvider()
        provider.deviceCodeInterval = 0
        provider.addFamilyClient(Self.appA)
        provider.addFamilyClient(Self.appB)
        try provider.start()
        defer { provider.stop() }
        let directory = TemporaryDirectory()
        let authority = provider.authority(tenant: "organizations")
        func msal(_ command: String, client: String, group: String, _ extra: [String] = []) async throws -> ToolRun {
            try await ToolRun.run(
                [command, "--client-id", client, "--authority", authority, "--authority-type", "aad", "--access-group", group, "--output", "json"]
                    + backend.flags(directory) + extra,
                environment: backend.environment,
                onStderrLine: { line in
                    // App A's device-code prompt: approve it as the user would in the browser.
                    guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                          let userCode = object["user_code"] as? String else { return }
                    try? provider.approveDeviceCode(userCode: userCode, as: LocalIdentityProvider.demoUser.username)
                })
        }
        let username = LocalIdentityProvider.demoUser.username

        // App A signs in, in its own process, in the shared group.
        let login = try await msal("login", client: Self.appA, group: shared, ["--device-code", "--scope", "api://demo/Files.Read"])
        try #require(login.status == 0, "login failed: \(login.stderr)")

        // App B, another process, same group: the account is there...
        let listed = try await msal("accounts", client: Self.appB, group: shared)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(try listed.usernames() == [username])
        // ...and B gets a token silently with A's family refresh token (B never signed in).
        let before = provider.requests.count
        let token = try await msal("token", client: Self.appB, group: shared, ["--account", username, "--scope", "api://demo/Files.Write"])
        #expect(token.status == 0, "\(token.stderr)")
        let redemptions = provider.requests.dropFirst(before).filter { $0.grantType == "refresh_token" }
        #expect(redemptions.count == 1)
        #expect(redemptions.first?.formParameters["client_id"] == Self.appB)

        // Another group, on the same store: nothing of either app.
        for client in [Self.appA, Self.appB] {
            let isolated = try await msal("accounts", client: client, group: other)
            #expect(isolated.status == 0, "\(isolated.stderr)")
            #expect(try isolated.usernames() == [])
            let denied = try await msal("token", client: client, group: other, ["--account", username, "--scope", "api://demo/Files.Read"])
            #expect(denied.status == 3, "\(denied.stderr)")
        }
        // A sign-out in the other group does not touch the shared one.
        let logout = try await msal("logout", client: Self.appB, group: other, ["--account", username])
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(try await msal("accounts", client: Self.appA, group: shared).usernames() == [username])
    }
}

/// `--cache-backend` and its companions as a user types them.
@Suite("Choosing the cache backend in the msal tool")
struct CacheBackendChoiceToolTests {
    @Test("Contradictory or unknown cache options are usage errors (exit 2, one line)", arguments: [
        ["accounts", "--client-id", "a", "--cache-backend", "keyring", "--cache", "/tmp/x.sqlite"],
        ["accounts", "--client-id", "a", "--cache-backend", "auto", "--cache", "/tmp/x.sqlite"],
        ["accounts", "--client-id", "a", "--cache-backend", "json"],
        ["accounts", "--client-id", "a", "--cache-backend", "sqlite", "--cache-key-file", "/tmp/k"],
        ["accounts", "--client-id", "a", "--cache-backend", "bogus"],
        ["accounts", "--client-id", "a", "--cache-backend"],
    ])
    func usageErrors(arguments: [String]) async throws {
        let run = try await ToolRun.run(arguments)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    @Test("A passphrase and a key file together, or an unknown MSAL_CACHE_BACKEND, are usage errors")
    func environmentUsageErrors() async throws {
        let both = try await ToolRun.run(
            ["accounts", "--client-id", "a", "--cache-backend", "encrypted-file", "--cache-key-file", "/tmp/k"],
            environment: ["MSAL_CACHE_PASSPHRASE": "p"])
        #expect(both.status == 2)
        #expect(both.stderr.contains("MSAL_CACHE_PASSPHRASE"))
        let unknown = try await ToolRun.run(["accounts", "--client-id", "a"], environment: ["MSAL_CACHE_BACKEND": "floppy"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("MSAL_CACHE_BACKEND"))
        #expect(!both.stderr.contains("p\"") && !both.stderr.contains(": p "))  // the passphrase is never echoed
    }

    @Test("An invalid access group is an invalidParameter error (exit 1)")
    func invalidAccessGroup() async throws {
        let run = try await ToolRun.run(["accounts", "--client-id", "a", "--access-group", "a/b", "--cache-backend", "sqlite", "--cache", "/tmp/none.sqlite"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("internal.invalidParameter"))
    }

    @Test("auto without a reachable keyring falls back to the encrypted file with a 0600 key file under XDG_DATA_HOME")
    func defaultChainFallsBackToTheEncryptedFile() async throws {
        let provider = LocalIdentityProvider()
        provider.deviceCodeInterval = 0
        try provider.start()
        defer { provider.stop() }
        let directory = TemporaryDirectory()
        // No D-Bus session: the keyring cannot be used.
        let environment = ["XDG_DATA_HOME": directory.path("data"), "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(directory.path("no-bus"))"]
        let common = ["--client-id", LocalIdentityProvider.demoClientID, "--authority", provider.authority(tenant: "organizations"),
                      "--authority-type", "aad", "--cache-backend", "auto", "--output", "json"]
        let login = try await ToolRun.run(["login", "--device-code", "--scope", "api://demo/Files.Read"] + common, environment: environment) { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let userCode = object["user_code"] as? String else { return }
            try? provider.approveDeviceCode(userCode: userCode, as: LocalIdentityProvider.demoUser.username)
        }
        try #require(login.status == 0, "\(login.stderr)")
        let cache = directory.path("data/msal/msal_cache.bin")
        let key = cache + ".key"
        for file in [cache, key] {
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file)")
        }
        let sealed = try Data(contentsOf: URL(fileURLWithPath: cache))
        #expect(!String(decoding: sealed, as: UTF8.self).contains("AccessToken"))  // encrypted, not MSAL JSON
        let accounts = try await ToolRun.run(["accounts"] + common, environment: environment)
        #expect(try accounts.usernames() == [LocalIdentityProvider.demoUser.username])
    }

    @Test("auto without a keyring: reading accounts of a cache that does not exist yet creates no cache and no key file")
    func defaultChainReadCreatesNothing() async throws {
        let directory = TemporaryDirectory()
        let data = directory.path("data")
        let environment = ["XDG_DATA_HOME": data, "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(directory.path("no-bus"))"]
        let run = try await ToolRun.run(
            ["accounts", "--client-id", "a", "--authority", "http://127.0.0.1:9/organizations", "--authority-type", "aad",
             "--cache-backend", "auto", "--output", "json"], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try run.usernames() == [])
        let made = (FileManager.default.enumerator(atPath: data)?.allObjects as? [String] ?? []).filter { $0.hasPrefix("msal/msal_cache") }
        #expect(made == [], "\(made)")
    }

    @Test("auto with neither a keyring nor a writable data directory: exit 1, cacheUnavailable telling the app to choose")
    func defaultChainExhausted() async throws {
        let directory = TemporaryDirectory()
        _ = FileManager.default.createFile(atPath: directory.path("file"), contents: Data())
        // XDG_DATA_HOME below a regular file: no directory can be created there.
        let environment = ["XDG_DATA_HOME": directory.path("file/data"), "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(directory.path("no-bus"))"]
        let run = try await ToolRun.run(
            ["login", "--device-code", "--client-id", "a", "--authority", "http://127.0.0.1:9/organizations", "--authority-type", "aad",
             "--scope", "s", "--cache-backend", "auto"], environment: environment)
        #expect(run.status == 1)
        #expect(run.stderr.contains("internal.cacheUnavailable"), "\(run.stderr)")
        #expect(run.stderr.contains("Choose one"))
    }
}

/// One `msal` process: exit status and output, with each stderr line handed to a closure while it runs.
struct ToolRun {
    let status: Int32
    let stdout: String
    let stderr: String

    /// The usernames of `msal accounts --output json`.
    func usernames() throws -> [String] {
        let array = try #require(try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [[String: Any]], "stdout: \(stdout)")
        return array.compactMap { $0["username"] as? String }
    }

    /// Runs the tool with no MSAL_* variables from the outer environment, plus `environment`.
    static func run(
        _ arguments: [String], environment extra: [String: String] = [:], onStderrLine: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> ToolRun {
        try #require(FileManager.default.isExecutableFile(atPath: ToolTests.binary), "build the tool first: swift build --product msal")
        let process = try SpawnedProcess(
            ToolTests.binary, arguments,
            environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("MSAL_") }.merging(extra) { $1 },
            standardOutput: .pipe, standardError: .pipe)
        let out = try #require(process.standardOutput)
        let err = try #require(process.standardError)
        let stderrText = Mutex("")
        // Read stderr line by line on a thread of its own: the device-code prompt must be answered
        // while the process waits for it.
        let reader = Thread {
            var pending = Data()
            while true {
                let chunk = (try? err.read()) ?? Data()
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    stderrText.withLock { $0 += line + "\n" }
                    onStderrLine(line)
                }
            }
            stderrText.withLock { $0 += String(decoding: pending, as: UTF8.self) }
        }
        reader.start()
        // Standard output is read while the process runs, so it never fills its pipe.
        async let stdoutData = out.readToEndInBackground()
        let status = await process.waitForExit().status
        let stdout = String(decoding: try await stdoutData, as: UTF8.self)
        // The reader ends at end of file on stderr, which follows the process's exit.
        while !reader.isFinished { try await Task.sleep(nanoseconds: 1_000_000) }
        return ToolRun(status: status, stdout: stdout, stderr: stderrText.withLock { $0 })
    }
}
