import Foundation
import MSAL
import MSALCacheSQLite
import MSALCore
import MSALTestSupport

/// `msal demo`: the whole first slice on the embedded local Entra-compatible provider, on loopback
/// only: device-code sign-in (playing the user), a silent token from the cache, a forced refresh,
/// and the account list. Tokens are never printed, only their length.
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

        step("5. Accounts in the cache")
        for account in try application.allAccounts() {
            step("   \(account.username ?? "-")  id \(account.identifier)  environment \(account.environment)  tenants \(account.tenantProfiles.map(\.tenantID).joined(separator: ","))")
        }
        guard signIn.tokenSource == .identityProvider, silent.tokenSource == .cache, refreshed.tokenSource == .identityProvider,
              refreshed.accessToken != silent.accessToken else {
            throw MSALError.internal(.unexpected, "The demo's token sources were not identity_provider, cache, identity_provider.")
        }
        step("Demo finished: signed in, served from the cache, refreshed. (Tokens are not printed.)")
    }

    private static func show(_ result: AuthenticationResult, _ step: (String) -> Void) {
        step("   token source \(result.tokenSource.rawValue), expires \(result.expiresOn.iso8601UTC), scopes \(result.scopes.joined(separator: " "))")
        step("   account \(result.account.username ?? "-") (\(result.account.identifier)), access token \(result.accessToken.count) characters (not shown)")
    }
}
