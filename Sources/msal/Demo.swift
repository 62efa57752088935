import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MSAL
import MSALCacheSQLite
import MSALCore
import MSALTestSupport

/// `msal demo`: the whole first slice on the embedded local Entra-compatible provider, on loopback
/// only: device-code sign-in (playing the user), a silent token from the cache, a forced refresh,
/// an interactive sign-in (playing the browser), and the account list. Tokens are never printed, only their length.
enum Demo {
    static func run(output: OutputFormat) async throws {
        @Sendable func step(_ text: String) { Console.out(text) }
        let provider = LocalIdentityProvider()
        provider.deviceCodeInterval = 1
        try provider.start()
        defer { provider.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msal-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cachePath = directory.appendingPathComponent("msal_cache.sqlite").path

        let authority = try Authority(provider.authority(tenant: "organizations"), type: .aad)
        let user = LocalIdentityProvider.demoUser
        step("1. Started the local Entra-compatible provider at \(provider.baseURL.absoluteString)")
        step("   authority \(authority), client id \(LocalIdentityProvider.demoClientID)")
        step("   token cache (SQLite) \(cachePath)")

        let application = try PublicClientApplication(configuration: PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID, authority: authority,
            cacheStore: try SQLiteTokenCacheStore(path: cachePath)))
        let scopes = ["api://swift-msal-demo/Files.Read"]

        step("2. Signing in with the device code (RFC 8628)")
        let signIn = try await application.acquireToken(with: DeviceCodeParameters(scopes: scopes)) { info in
            step("   prompt: \(info.message)")
            step("   (demo) approving user code \(info.userCode) as \(user.username)")
            try provider.approveDeviceCode(userCode: info.userCode, as: user.username)
        }
        show(signIn, step)

        step("3. Getting a token silently")
        let silent = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: signIn.account))
        show(silent, step)

        step("4. Forcing a refresh with the refresh token")
        let refreshed = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: signIn.account, forceRefresh: true))
        show(refreshed, step)
        step("   a new access token: \(refreshed.accessToken != silent.accessToken ? "yes" : "no")")

        step("5. Signing in interactively (authorization code + PKCE, loopback redirect, RFC 8252)")
        // The demo's "browser" follows the provider's redirect to the SDK's loopback listener, as a
        // real browser would after the user signed in.
        let browser = ClosureBrowserLauncher { url in
            Task {
                let session = URLSession(configuration: .ephemeral)
                _ = try? await session.data(from: url)
                session.finishTasksAndInvalidate()
            }
            return true
        }
        let interactive = try await application.acquireToken(with: InteractiveTokenParameters(
            scopes: scopes, promptType: .selectAccount, loginHint: user.username, browser: browser,
            authorizationURLHandler: { url, _ in
                step("   browser opened at \(url.scheme ?? "")://\(url.host ?? ""):\(url.port ?? 0)\(url.path)")
            }))
        show(interactive, step)

        step("6. Accounts in the cache")
        for account in try application.allAccounts() {
            step("   \(account.username ?? "-")  id \(account.identifier)  environment \(account.environment)  tenants \(account.tenantProfiles.map(\.tenantID).joined(separator: ","))")
        }
        guard signIn.tokenSource == .identityProvider, silent.tokenSource == .cache, refreshed.tokenSource == .identityProvider,
              refreshed.accessToken != silent.accessToken, interactive.tokenSource == .identityProvider,
              interactive.account == signIn.account else {
            throw MSALError.internal(.unexpected, "The demo's results were not as expected (identity_provider, cache, identity_provider with a new token, the same account interactively).")
        }
        step("Demo finished: device code, served from the cache, refreshed, interactive sign-in. (Tokens are not printed.)")
    }

    private static func show(_ result: AuthenticationResult, _ step: (String) -> Void) {
        step("   token source \(result.tokenSource.rawValue), expires \(result.expiresOn.iso8601UTC), scopes \(result.scopes.joined(separator: " "))")
        step("   account \(result.account.username ?? "-") (\(result.account.identifier)), access token \(result.accessToken.count) characters (not shown)")
    }
}
