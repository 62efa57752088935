import Foundation
import MSAL
import MSALCacheSQLite
import MSALCore
import Testing

/// The Glewlwyd provider started by `scripts/test.sh` (see `scripts/glewlwyd.sh`), read from the
/// environment it exports. When `MSAL_GLEWLWYD_REQUIRED` is set (as the test script and CI set
/// it), a missing provider fails these tests instead of skipping them.
struct GlewlwydEnvironment {
    let issuer: String
    let clientID: String
    let username: String

    static let current: GlewlwydEnvironment? = {
        let environment = ProcessInfo.processInfo.environment
        guard let issuer = environment["GLEWLWYD_ISSUER"], let clientID = environment["GLEWLWYD_CLIENT_ID"] else { return nil }
        return GlewlwydEnvironment(issuer: issuer, clientID: clientID, username: environment["GLEWLWYD_USERNAME"] ?? "alice")
    }()

    static var shouldRun: Bool {
        current != nil || ProcessInfo.processInfo.environment["MSAL_GLEWLWYD_REQUIRED"] != nil
    }

    static func script(_ arguments: String...) async throws -> (status: Int32, output: String) {
        try await runProcess("/bin/bash", [repositoryRoot.appendingPathComponent("scripts/glewlwyd.sh").path] + arguments)
    }
}

@Suite("End to end against Glewlwyd, a real OpenID provider", .serialized, .enabled(if: GlewlwydEnvironment.shouldRun, "run by scripts/test.sh, which starts Glewlwyd"))
struct GlewlwydTests {
    let scopes = ["email"]

    func application(_ glewlwyd: GlewlwydEnvironment, cache: String) throws -> PublicClientApplication {
        try PublicClientApplication(configuration: PublicClientApplicationConfiguration(
            clientID: glewlwyd.clientID, authority: try Authority(glewlwyd.issuer, type: .oidc),
            cacheStore: try SQLiteTokenCacheStore(path: cache)))
    }

    func signIn(_ application: PublicClientApplication) async throws -> AuthenticationResult {
        try await application.acquireToken(with: DeviceCodeParameters(scopes: scopes)) { info in
            let approval = try await GlewlwydEnvironment.script("approve", info.userCode)
            guard approval.status == 0 else { throw MSALError.internal(.unexpected, "approving the user code failed: \(approval.output)") }
        }
    }

    @Test("Device code sign-in, silent from cache, forced refresh keeping the refresh token, rejected refresh token")
    func endToEnd() async throws {
        let glewlwyd = try #require(GlewlwydEnvironment.current, "GLEWLWYD_ISSUER and GLEWLWYD_CLIENT_ID must be set (scripts/test.sh sets them)")
        let directory = TemporaryDirectory()
        let cache = directory.path("glewlwyd.sqlite")
        let application = try application(glewlwyd, cache: cache)

        let signIn = try await signIn(application)
        #expect(signIn.tokenSource == .identityProvider)
        #expect(signIn.idTokenClaims?.subject == signIn.account.identifier)
        #expect(signIn.idTokenClaims?.issuer == glewlwyd.issuer)
        #expect(signIn.expiresOn > Date())

        // A second application instance on the same file stands for a second process.
        let second = try self.application(glewlwyd, cache: cache)
        let account = try #require(try second.allAccounts().first)
        #expect(account.identifier == signIn.account.identifier)
        let cached = try await second.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: account))
        #expect(cached.tokenSource == .cache)
        #expect(cached.accessToken == signIn.accessToken)

        // Glewlwyd's refresh answer has no new refresh token (no rotation) and no ID token: the
        // cached ones must be kept, so a second forced refresh works too.
        let refreshed = try await second.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: account, forceRefresh: true))
        #expect(refreshed.tokenSource == .identityProvider)
        #expect(refreshed.accessToken != signIn.accessToken)
        #expect(refreshed.idTokenClaims?.subject == account.identifier)
        let again = try await second.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: account, forceRefresh: true))
        #expect(again.tokenSource == .identityProvider)

        // Revoked refresh tokens: Glewlwyd answers 400 with an empty body.
        let revoke = try await GlewlwydEnvironment.script("revoke-refresh-tokens", glewlwyd.username)
        #expect(revoke.status == 0)
        do {
            _ = try await second.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: account, forceRefresh: true))
            Issue.record("expected interactionRequired after revocation")
        } catch {
            #expect(error.code == .interactionRequired)
            #expect(error.httpStatusCode == 400)
        }
    }

    @Test("Interactive sign-in in a real browser: the SDK's launcher opens headless Chromium on Glewlwyd's login page, the redirect reaches the loopback listener; then silent from the cache")
    func realBrowser() async throws {
        let glewlwyd = try #require(GlewlwydEnvironment.current, "GLEWLWYD_ISSUER and GLEWLWYD_CLIENT_ID must be set (scripts/test.sh sets them)")
        let directory = TemporaryDirectory()
        // Glewlwyd matches redirect URIs exactly, port included (Docs/Glewlwyd.md): use the
        // registered one rather than a port the system chooses.
        var configuration = PublicClientApplicationConfiguration(
            clientID: glewlwyd.clientID, authority: try Authority(glewlwyd.issuer, type: .oidc),
            cacheStore: try SQLiteTokenCacheStore(path: directory.path("browser.sqlite")))
        configuration.redirectURI = "http://127.0.0.1:4594/callback"
        let application = try PublicClientApplication(configuration: configuration)

        var environment = ProcessInfo.processInfo.environment
        environment["BROWSER"] = repositoryRoot.appendingPathComponent("scripts/browser/browser.sh").path
        environment["MSAL_TEST_BROWSER_LOG"] = directory.path("browser.log")
        environment["MSAL_TEST_BROWSER_SCREENSHOT_DIR"] = directory.path("screenshots")
        let result: AuthenticationResult
        do {
            result = try await application.acquireToken(with: InteractiveTokenParameters(
                scopes: scopes, browser: SystemBrowserLauncher(environment: environment), timeout: 90))
        } catch {
            let log = (try? String(contentsOfFile: directory.path("browser.log"), encoding: .utf8)) ?? "(no browser log)"
            Issue.record("interactive sign-in failed: \(error)\nbrowser log:\n\(log)")
            return
        }
        #expect(result.tokenSource == .identityProvider)
        #expect(result.idTokenClaims?.issuer == glewlwyd.issuer)
        #expect(result.idTokenClaims?.nonce != nil)

        let silent = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: result.account))
        #expect(silent.tokenSource == .cache)
        #expect(silent.accessToken == result.accessToken)
    }
}
