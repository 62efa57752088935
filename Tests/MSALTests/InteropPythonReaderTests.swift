import Foundation
import MSAL
import MSALCache
import MSALCore
import MSALNetwork
import MSALTestSupport
import Testing

// Interoperability with MSAL Python's JSON token cache, write direction: a cache swift-msal wrote
// after a real sign-in against the local provider is read by the real MSAL Python 1.39.0
// (scripts/interop/read_cache.py, in the venv scripts/interop/install.sh makes).

enum InteropPython {
    static let python = repositoryRoot.appendingPathComponent(".build/interop-venv/bin/python").path
    static let reader = repositoryRoot.appendingPathComponent("scripts/interop/read_cache.py").path
    static let checker = repositoryRoot.appendingPathComponent("scripts/interop/check_fixtures.py").path

    static var installed: Bool { FileManager.default.isExecutableFile(atPath: python) }
    /// Set by scripts/test.sh: a missing venv fails the tests instead of disabling them.
    static var required: Bool { ProcessInfo.processInfo.environment["MSAL_INTEROP_REQUIRED"] == "1" }

    /// Runs the venv's Python; output goes to files, so a large output cannot fill a pipe while
    /// nobody reads it. Waits for its exit without blocking a thread.
    static func run(_ arguments: [String], in directory: TemporaryDirectory) async throws -> (status: Int32, stdout: String, stderr: String) {
        let stdoutURL = directory.url.appendingPathComponent("python-\(UUID().uuidString).out")
        let stderrURL = directory.url.appendingPathComponent("python-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        let process = try SpawnedProcess(python, arguments, standardOutput: .file(stdoutURL.path), standardError: .file(stderrURL.path))
        let status = await process.waitForExit().status
        return (status, try String(contentsOf: stdoutURL, encoding: .utf8), try String(contentsOf: stderrURL, encoding: .utf8))
    }

    /// Sends requests for `login.microsoftonline.com` to the local provider instead, so a sign-in
    /// against the local provider writes the cache an Entra sign-in writes (environment
    /// `login.microsoftonline.com`). The provider's discovery document names its own endpoints,
    /// so only discovery goes through the rewrite.
    struct EntraHostToLocalProvider: HTTPTransport {
        let provider: URL
        let inner = URLSessionTransport()

        func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse {
            var request = request
            if request.url.host == "login.microsoftonline.com",
               var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false) {
                components.scheme = provider.scheme
                components.host = provider.host
                components.port = provider.port
                request.url = components.url ?? request.url
            }
            return try await inner.send(request)
        }
    }

    static func object(_ text: String) throws -> [String: JSONValue] {
        try JSONDecoder().decode([String: JSONValue].self, from: Data(text.utf8))
    }
}

@Suite(
    "A cache swift-msal wrote, read by the real MSAL Python",
    .enabled(
        if: InteropPython.installed || InteropPython.required,
        "MSAL Python is not installed (run scripts/interop/install.sh; MSAL_INTEROP_REQUIRED=1 makes this a failure)")
)
struct InteropPythonReaderTests {
    static let scopes = ["api://demo/Files.Read"]

    private func requireVenv() throws {
        try #require(
            InteropPython.installed,
            "MSAL_INTEROP_REQUIRED=1 but \(InteropPython.python) is missing: run scripts/interop/install.sh")
    }

    @Test("The reader answers every MSAL Python fixture row as MSAL Python did (so it reads as MSAL Python does)")
    func readerReproducesFixtures() async throws {
        try requireVenv()
        let directory = TemporaryDirectory()
        let run = try await InteropPython.run([InteropPython.checker, InteropFixtures.directory.path], in: directory)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.components(separatedBy: "\n").filter { $0.hasPrefix("ok ") }.count == 29)  // 26 rows, 3 get_accounts
    }

    @Test("After a device-code sign-in, MSAL Python finds our account and our access and refresh tokens")
    func pythonReadsOurCache() async throws {
        try requireVenv()
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let store = InMemoryTokenCacheStore()
        // MSAL Python keys the cache by host without the port (msal/authority.py canonicalize());
        // we keep `host:port`, as MSAL for iOS/macOS does. Entra hosts have no port, so sign in
        // "at Entra" (the transport sends login.microsoftonline.com to the local provider).
        var configuration = PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID,
            authority: try Authority("https://login.microsoftonline.com/organizations"), cacheStore: store)
        configuration.transport = InteropPython.EntraHostToLocalProvider(provider: fixture.provider.baseURL)
        configuration.clock = fixture.clock
        let clock = fixture.clock
        configuration.sleep = { seconds in clock.advance(by: max(seconds, 1)) }
        let application = try PublicClientApplication(configuration: configuration)
        let signIn = try await fixture.signIn(application, scopes: Self.scopes)

        let contents = try store.readAll()
        let refreshToken = try #require(contents.refreshTokens.values.first)
        #expect(contents.refreshTokens.count == 1)
        let account = signIn.account
        let realm = signIn.tenantID
        let environment = account.environment
        #expect(environment == "login.microsoftonline.com")
        let homeAuthority = "https://login.microsoftonline.com/\(realm)"

        let cacheFile = fixture.directory.path("msal-cache.json")
        try contents.msalJSON().write(to: URL(fileURLWithPath: cacheFile))
        let request: [String: Any] = [
            "now_epoch": fixture.clock.now().timeIntervalSince1970,
            "apps": [["client_id": LocalIdentityProvider.demoClientID, "authority": homeAuthority]],
            "queries": [
                ["name": "signed_in_scopes", "client_id": LocalIdentityProvider.demoClientID, "authority": homeAuthority,
                 "home_account_id": account.identifier, "scopes": Self.scopes],
                ["name": "other_scope", "client_id": LocalIdentityProvider.demoClientID, "authority": homeAuthority,
                 "home_account_id": account.identifier, "scopes": ["api://demo/Files.Write"]],
            ],
        ]
        let requestJSON = String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self)
        let run = try await InteropPython.run([InteropPython.reader, cacheFile, requestJSON], in: fixture.directory)
        try #require(run.status == 0, "read_cache.py failed: \(run.stderr)")
        let output = try InteropPython.object(run.stdout)
        #expect(output["msal_version"]?.stringValue == "1.39.0")

        // The raw entries, as msal.SerializableTokenCache deserialized them.
        let cache = try #require(output["cache"]?.objectValue)
        let accounts = try #require(cache["accounts"]?.arrayValue).compactMap(\.objectValue)
        #expect(accounts.count == 1)
        let entry = try #require(accounts.first)
        #expect(entry["home_account_id"]?.stringValue == account.identifier)
        #expect(entry["username"]?.stringValue == LocalIdentityProvider.demoUser.username)
        #expect(entry["username"]?.stringValue == account.username)
        #expect(entry["environment"]?.stringValue == environment)
        #expect(entry["realm"]?.stringValue == realm)
        #expect(entry["authority_type"]?.stringValue == "MSSTS")
        let accessTokens = try #require(cache["access_tokens"]?.arrayValue).compactMap(\.objectValue)
        #expect(accessTokens.map { $0["secret"]?.stringValue } == [signIn.accessToken])
        #expect(accessTokens.first?["realm"]?.stringValue == realm)
        #expect(accessTokens.first?["client_id"]?.stringValue == LocalIdentityProvider.demoClientID)
        let refreshTokens = try #require(cache["refresh_tokens"]?.arrayValue).compactMap(\.objectValue)
        #expect(refreshTokens.map { $0["secret"]?.stringValue } == [refreshToken.secret])
        #expect(refreshTokens.first?["home_account_id"]?.stringValue == account.identifier)

        // What an MSAL Python app sees: get_accounts() lists our account...
        let apps = try #require(output["apps"]?.arrayValue).compactMap(\.objectValue)
        let listed = try #require(apps.first?["accounts"]?.arrayValue).compactMap(\.objectValue)
        #expect(listed.count == 1)
        #expect(listed.first?["home_account_id"]?.stringValue == account.identifier)
        #expect(listed.first?["username"]?.stringValue == account.username)
        #expect(listed.first?["environment"]?.stringValue == environment)
        #expect(listed.first?["realm"]?.stringValue == realm)

        // ...acquire_token_silent serves our access token from the cache, and for a scope we never
        // got it redeems our refresh token (the stub refuses it; what matters is what was sent).
        let queries = try #require(output["queries"]?.arrayValue).compactMap(\.objectValue)
        try #require(queries.count == 2)
        #expect(queries[0]["source"]?.stringValue == "cache")
        #expect(queries[0]["access_token"]?.stringValue == signIn.accessToken)
        #expect(queries[1]["source"]?.stringValue == "refresh_failed")
        #expect(queries[1]["refresh_tokens_sent"]?.arrayValue?.compactMap(\.stringValue) == [refreshToken.secret])
    }
}
