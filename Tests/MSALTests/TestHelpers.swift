import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MSAL
import MSALCacheSQLite
import MSALCore
import MSALTestSupport
import Testing

/// A temporary directory removed when the value is released.
final class TemporaryDirectory: Sendable {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("msal-tests-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

/// A started local provider, an app on it with a real SQLite cache, and a manual clock both share.
struct LocalFixture {
    let provider: LocalIdentityProvider
    let clock: ManualWallClock
    let directory: TemporaryDirectory
    let cachePath: String
    let authority: Authority

    init(tenant: String = "organizations") throws {
        clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        provider = LocalIdentityProvider(clock: clock)
        provider.deviceCodeInterval = 0
        try provider.start()
        directory = TemporaryDirectory()
        cachePath = directory.path("cache.sqlite")
        authority = try Authority(provider.authority(tenant: tenant), type: .aad)
    }

    /// A new application instance on the fixture's cache file (a new instance is what a second
    /// process would have).
    func application(clientID: String = LocalIdentityProvider.demoClientID) throws -> PublicClientApplication {
        var configuration = PublicClientApplicationConfiguration(
            clientID: clientID, authority: authority, cacheStore: try SQLiteTokenCacheStore(path: cachePath))
        configuration.clock = clock
        let clock = self.clock
        // Waiting between polls moves the shared clock instead of sleeping.
        configuration.sleep = { seconds in clock.advance(by: max(seconds, 1)) }
        return try PublicClientApplication(configuration: configuration)
    }

    /// Signs the demo user in with the device code, approving it as the user when asked.
    func signIn(_ application: PublicClientApplication, scopes: [String] = ["api://demo/Files.Read"]) async throws -> AuthenticationResult {
        let provider = self.provider
        return try await application.acquireToken(with: DeviceCodeParameters(scopes: scopes)) { info in
            try provider.approveDeviceCode(userCode: info.userCode, as: LocalIdentityProvider.demoUser.username)
        }
    }

    func stop() { provider.stop() }
}

/// Runs a program and returns its exit status and standard output, without blocking a thread of
/// the cooperative pool while it runs.
func runProcess(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    let output = try await SpawnedProcess(executable, arguments, standardOutput: .pipe).readOutputAndWait()
    return (output.termination.status, output.standardOutputText)
}

/// The repository's root, found from this file's path.
let repositoryRoot: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Follows no redirect: returns the `Location` of the first response.
final class NoRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

/// What a browser does after the user signed in: GET the authorization URL and follow the
/// provider's redirect to the loopback listener.
func followingBrowser() -> ClosureBrowserLauncher {
    ClosureBrowserLauncher { url in
        Task {
            let session = URLSession(configuration: .ephemeral)
            _ = try? await session.data(from: url)
            session.finishTasksAndInvalidate()
        }
        return true
    }
}

/// The `Location` the provider redirects the authorization URL to.
func location(of url: URL) async throws -> URL {
    let session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)
    defer { session.finishTasksAndInvalidate() }
    let (_, response) = try await session.data(from: url)
    let http = try #require(response as? HTTPURLResponse)
    let value = try #require(http.value(forHTTPHeaderField: "Location"))
    return try #require(URL(string: value))
}
