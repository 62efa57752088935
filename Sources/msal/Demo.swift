import Dispatch
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
    /// Runs the demo, printing text. Its token cache (which holds the local provider's refresh
    /// tokens) is in a new folder `msal-demo-<UUID>`, mode 0700, in the temporary directory
    /// (`$TMPDIR`, default `/tmp`); the folder is removed when the demo ends or fails, and when
    /// SIGINT or SIGTERM stops it: its folder is removed, then the signal ends the process (a
    /// shell shows 130 or 143).
    static func run() async throws {
        @Sendable func step(_ text: String) { Console.out(text) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msal-demo-\(UUID().uuidString)")
        // Armed before the folder exists: `defer` does not run when a signal ends the process.
        let cleanup = SignalCleanup(removing: directory)
        defer { cleanup.disarm() }  // after the removal below (defers run last first)
        defer { SignalCleanup.remove(directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let provider = LocalIdentityProvider()
        provider.deviceCodeInterval = 1
        try provider.start()
        defer { provider.stop() }
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

/// Removes a folder when SIGINT or SIGTERM arrives, then lets the signal end the process (a shell
/// shows 130 or 143, and knows the child was interrupted). The signals are ignored while it is
/// armed and handled by Dispatch signal sources on a queue of their own, so the removal is
/// ordinary code, not code in a C signal handler.
final class SignalCleanup: @unchecked Sendable {
    // @unchecked: `sources` is set in init and only read by `disarm`, on the caller's thread.
    private let sources: [any DispatchSourceSignal]
    private static let signals = [SIGINT, SIGTERM]

    /// Arms the handling: from now on SIGINT or SIGTERM removes `directory` and exits.
    init(removing directory: URL) {
        let queue = DispatchQueue(label: "msal.demo.signals")
        sources = Self.signals.map { number in
            // Ignored first, so the default action (termination) does not win over the source.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                let name = number == SIGINT ? "SIGINT" : "SIGTERM"
                if SignalCleanup.remove(directory) {
                    Console.err("msal demo: stopped by \(name); removed its temporary cache folder \(directory.path)")
                } else {
                    Console.err("msal demo: stopped by \(name); could not remove its temporary cache folder \(directory.path): delete it (it holds the local provider's refresh tokens)")
                }
                // Die by the signal itself (not exit(128 + n)), so a calling shell sees an
                // interrupted child and stops its loop or script, as with any program on Ctrl-C.
                // Dispatch blocks the signal to receive it; unblock it on this thread first.
                signal(number, SIG_DFL)
                var only = sigset_t()
                sigemptyset(&only)
                sigaddset(&only, number)
                pthread_sigmask(SIG_UNBLOCK, &only, nil)
                raise(number)
                exit(128 + number)  // not reached: the default action ends the process
            }
            source.resume()
            return source
        }
    }

    /// Stops the handling and gives the signals their default action back.
    func disarm() {
        for source in sources { source.cancel() }
        for number in Self.signals { signal(number, SIG_DFL) }
    }

    /// Removes `directory` and what is in it; tries again briefly when the demo, still running on
    /// another thread, adds a file (an SQLite journal) while it is being removed. Returns whether
    /// it is gone.
    @discardableResult
    static func remove(_ directory: URL) -> Bool {
        for _ in 0..<20 {
            try? FileManager.default.removeItem(at: directory)
            if !FileManager.default.fileExists(atPath: directory.path) { return true }
            usleep(10_000)
        }
        return false
    }
}
