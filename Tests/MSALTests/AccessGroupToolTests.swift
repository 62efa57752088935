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
    static let shared = "com.contoso.shared"
    static let other = "com.fabrikam.private"

    /// A persistent backend and the `msal` flags and environment that select it.
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, json, encryptedKeyFile, encryptedPassphrase

        var testDescription: String { rawValue }

        func flags(_ directory: TemporaryDirectory) -> [String] {
            switch self {
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
          arguments: Backend.allCases)
    func sharedAndIsolated(backend: Backend) async throws {
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
        let login = try await msal("login", client: Self.appA, group: Self.shared, ["--device-code", "--scope", "api://demo/Files.Read"])
        try #require(login.status == 0, "login failed: \(login.stderr)")

        // App B, another process, same group: the account is there...
        let listed = try await msal("accounts", client: Self.appB, group: Self.shared)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(try listed.usernames() == [username])
        // ...and B gets a token silently with A's family refresh token (B never signed in).
        let before = provider.requests.count
        let token = try await msal("token", client: Self.appB, group: Self.shared, ["--account", username, "--scope", "api://demo/Files.Write"])
        #expect(token.status == 0, "\(token.stderr)")
        let redemptions = provider.requests.dropFirst(before).filter { $0.grantType == "refresh_token" }
        #expect(redemptions.count == 1)
        #expect(redemptions.first?.formParameters["client_id"] == Self.appB)

        // Another group, on the same store: nothing of either app.
        for client in [Self.appA, Self.appB] {
            let isolated = try await msal("accounts", client: client, group: Self.other)
            #expect(isolated.status == 0, "\(isolated.stderr)")
            #expect(try isolated.usernames() == [])
            let denied = try await msal("token", client: client, group: Self.other, ["--account", username, "--scope", "api://demo/Files.Read"])
            #expect(denied.status == 3, "\(denied.stderr)")
        }
        // A sign-out in the other group does not touch the shared one.
        let logout = try await msal("logout", client: Self.appB, group: Self.other, ["--account", username])
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(try await msal("accounts", client: Self.appA, group: Self.shared).usernames() == [username])
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ToolTests.binary)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("MSAL_") }.merging(extra) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stderrText = Mutex("")
        // Read stderr line by line on a thread of its own: the device-code prompt must be answered
        // while the process waits for it.
        let reader = Thread {
            let handle = err.fileHandleForReading
            var pending = Data()
            while true {
                let chunk = handle.availableData
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
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
                reader.start()
            } catch {
                continuation.resume(throwing: error)
            }
        }
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // The reader ends at end of file on stderr, which follows the process's exit.
        while !reader.isFinished { try await Task.sleep(nanoseconds: 1_000_000) }
        return ToolRun(status: status, stdout: stdout, stderr: stderrText.withLock { $0 })
    }
}
