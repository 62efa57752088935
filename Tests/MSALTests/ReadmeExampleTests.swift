import Foundation
import MSAL
import MSALCacheSQLite
import MSALTestSupport
import Testing

// The function below is README.md's Swift example, verbatim; `readmeMatches` keeps them equal.

/// Silent first; sign in with a device code only when the user must interact.
func accessToken(_ application: PublicClientApplication, scopes: [String]) async throws -> AuthenticationResult {
    if let account = try application.allAccounts().first {
        do {
            return try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: account))
        } catch let error where error.code == .interactionRequired {
            // The refresh token is gone or was rejected: sign in again below.
        }
    }
    return try await application.acquireToken(with: DeviceCodeParameters(scopes: scopes)) { info in
        FileHandle.standardError.write(Data((info.message + "\n").utf8))
    }
}

// README.md's interactive sign-in function, verbatim between the markers; compiled here, not run
// (it would open the system browser).
// README-BEGIN
/// Sign in in the system browser; the same `application` as above.
func signInInteractively(_ application: PublicClientApplication) async throws -> AuthenticationResult {
    try await application.acquireToken(with: InteractiveTokenParameters(
        scopes: ["https://graph.microsoft.com/User.Read"],
        promptType: .selectAccount,
        authorizationURLHandler: { url, browserOpened in
            if !browserOpened { print("Open \(url) to sign in") }
        }))
}
// README-END

/// README.md's configuration, verbatim between the markers; compiled here, not run (it would open
/// the user's real cache).
func readmeConfigurationSnippet() throws -> PublicClientApplication {
    // README-CONFIG-BEGIN
let application = try PublicClientApplication(configuration: PublicClientApplicationConfiguration(
    clientID: "your-client-id",
    authority: try Authority("https://login.microsoftonline.com/organizations"),
    cacheBackend: .sqlite(path: nil)))  // nil: $XDG_DATA_HOME/msal/msal_cache.sqlite
    // README-CONFIG-END
    return application
}

@Suite("README's Swift example")
struct ReadmeExampleTests {
    @Test("The README shows exactly the function this file compiles")
    func readmeMatches() throws {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let start = try #require(source.range(of: "/// Silent first;"))
        let end = try #require(source.range(of: "\n}\n", range: start.upperBound..<source.endIndex))
        let function = String(source[start.lowerBound..<end.upperBound])
        #expect(readme.contains(function))
        let snippetStart = try #require(source.range(of: "\n// README-BEGIN\n"))
        let snippetEnd = try #require(source.range(of: "\n// README-END", range: snippetStart.upperBound..<source.endIndex))
        #expect(readme.contains(String(source[snippetStart.upperBound..<snippetEnd.lowerBound])))
        let configStart = try #require(source.range(of: "    // README-CONFIG-BEGIN\n"))
        let configEnd = try #require(source.range(of: "    // README-CONFIG-END", range: configStart.upperBound..<source.endIndex))
        #expect(readme.contains(String(source[configStart.upperBound..<configEnd.lowerBound])))
    }

    @Test("It signs in once, then serves the token silently")
    func example() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let provider = fixture.provider
        // Play the user: approve the code as soon as the provider has issued it.
        let approver = Task {
            for _ in 0..<500 {
                if let code = provider.pendingUserCodes.first {
                    try provider.approveDeviceCode(userCode: code, as: LocalIdentityProvider.demoUser.username)
                    return true
                }
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            return false
        }
        let first = try await accessToken(application, scopes: ["api://demo/Files.Read"])
        #expect(try await approver.value)
        #expect(first.tokenSource == .identityProvider)
        let second = try await accessToken(application, scopes: ["api://demo/Files.Read"])
        #expect(second.tokenSource == .cache)
        #expect(second.accessToken == first.accessToken)
    }
}
