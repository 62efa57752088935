import Foundation
import MSALTestSupport
import Testing

/// `msal login --device-code` against the local provider's B2C dialect, playing the user from the
/// test while the tool polls.
@Suite("The msal tool with a B2C authority")
struct ToolB2CTests {
    @Test("A B2C authority needs --known-authority; with it, device-code sign-in works")
    func b2cLogin() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: ToolTests.binary), "build the tool first: swift build --product msal")
        let provider = LocalIdentityProvider()
        provider.deviceCodeInterval = 0
        provider.addB2CPolicy("B2C_1_signin")
        try provider.start()
        defer { provider.stop() }
        let directory = TemporaryDirectory()
        let authority = provider.b2cAuthority(policy: "B2C_1_signin")
        let host = "127.0.0.1:\(provider.baseURL.port ?? 0)"
        let common = ["--client-id", LocalIdentityProvider.demoClientID, "--authority", authority,
                      "--scope", "api://demo/Files.Read", "--cache", directory.path("b2c.sqlite"), "--output", "json"]

        let refused = try await ToolTests().msal(["login", "--device-code"] + common)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("internal.invalidAuthority"))
        #expect(refused.stderr.contains("knownAuthorities"))

        // With the host trusted: run the tool, read its prompt line, approve as the user.
        let process = try SpawnedProcess(
            ToolTests.binary, ["login", "--device-code", "--known-authority", host] + common,
            environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("MSAL_") },
            standardOutput: .pipe, standardError: .pipe)
        let exited = Task { try await process.readOutputAndWait() }
        var approved = false
        for _ in 0..<500 where !approved {
            if let code = provider.pendingUserCodes.first {
                try provider.approveDeviceCode(userCode: code, as: LocalIdentityProvider.demoUser.username)
                approved = true
            } else {
                try await Task.sleep(nanoseconds: 20_000_000)
            }
        }
        #expect(approved)
        let output = try await exited.value
        let status = output.termination.status
        let stdout = output.standardOutputText
        #expect(status == 0)
        let result = try #require(try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any])
        #expect(result["token_source"] as? String == "identity_provider")
        let identifier = (result["account"] as? [String: Any])?["identifier"] as? String
        #expect(identifier?.contains("-b2c_1_signin.") == true)
    }
}
