import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MSAL
import MSALCacheSQLite
import MSALTestSupport
import Testing

@Suite("Interactive sign-in against the local provider")
struct InteractiveSignInTests {
    static let scopes = ["api://demo/Files.Read"]

    @Test("Authorization code + PKCE through the loopback listener, then silent from the cache")
    func success() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let opened = URLBox()
        let result = try await application.acquireToken(with: InteractiveTokenParameters(
            scopes: Self.scopes, extraScopesToConsent: ["api://demo/Files.Write"], promptType: .selectAccount,
            loginHint: LocalIdentityProvider.demoUser.username, browser: followingBrowser(),
            authorizationURLHandler: { url, browserOpened in opened.set(url, browserOpened) }))
        #expect(result.tokenSource == .identityProvider)
        #expect(result.account.username == LocalIdentityProvider.demoUser.username)
        #expect(result.idTokenClaims?.nonce != nil)

        let authorize = try #require(fixture.provider.authorizeRequests.last)
        #expect(authorize.formParameters["code_challenge_method"] == "S256")
        #expect((authorize.formParameters["code_challenge"] ?? "").count == 43)
        #expect((authorize.formParameters["state"] ?? "").count >= 22)
        #expect((authorize.formParameters["nonce"] ?? "").count >= 22)
        #expect(authorize.formParameters["client_info"] == "1")
        #expect(authorize.formParameters["prompt"] == "select_account")
        #expect(authorize.formParameters["login_hint"] == LocalIdentityProvider.demoUser.username)
        let scope = ScopeSet(spaceDelimited: authorize.formParameters["scope"] ?? "")
        #expect(scope.isSuperset(of: ["api://demo/Files.Read", "api://demo/Files.Write", "openid", "profile", "offline_access"]))
        let redirect = try #require(URL(string: authorize.formParameters["redirect_uri"] ?? ""))
        #expect(redirect.host == "localhost" || redirect.host == "127.0.0.1")
        #expect((redirect.port ?? 0) > 0)
        #expect(opened.value?.browserOpened == true)

        let silent = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: result.account))
        #expect(silent.tokenSource == .cache)
        #expect(silent.accessToken == result.accessToken)
    }

    @Test("The account's username becomes the login hint")
    func accountLoginHint() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let first = try await fixture.signIn(application)
        _ = try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, account: first.account, browser: followingBrowser()))
        #expect(fixture.provider.authorizeRequests.last?.formParameters["login_hint"] == first.account.username)
    }

    @Test("The user declining consent (access_denied) is userCanceled")
    func denied() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        fixture.provider.setNextUserAction(.denyConsent)
        let application = try fixture.application()
        await #expect(throws: MSALError(.userCanceled, message: "")) {
            try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, browser: followingBrowser()))
        }
        #expect(try application.allAccounts().isEmpty)
    }

    @Test("prompt=none without a session at the provider is interactionRequired")
    func promptNone() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        do {
            _ = try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, promptType: .never, browser: followingBrowser()))
            Issue.record("expected interactionRequired")
        } catch {
            #expect(error.code == .interactionRequired)
            #expect(error.oauthError == "login_required")
            #expect(error.correlationID != nil)
        }
    }

    @Test("No redirect within the timeout is a timeout error; no browser means the URL is handed over")
    func timeout() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let opened = URLBox()
        await #expect(throws: MSALError.internal(.timeout, "")) {
            try await application.acquireToken(with: InteractiveTokenParameters(
                scopes: Self.scopes, browser: ClosureBrowserLauncher { _ in false },
                authorizationURLHandler: { url, browserOpened in opened.set(url, browserOpened) }, timeout: 0.5))
        }
        #expect(opened.value?.browserOpened == false)
        #expect(opened.value?.url.path.hasSuffix("/oauth2/v2.0/authorize") == true)
    }

    @Test("Canceling the task ends the sign-in with userCanceled")
    func cancellation() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let task = Task {
            try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, browser: ClosureBrowserLauncher { _ in true }))
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        task.cancel()
        await #expect(throws: MSALError(.userCanceled, message: "")) { try await task.value }
    }

    /// An application whose redirect URI is `msauth.com.contoso.App://auth`, registered at the provider.
    private func customSchemeApplication(_ fixture: LocalFixture, cacheName: String) throws -> (PublicClientApplication, String) {
        let redirect = RedirectURI.msauth(applicationID: "com.contoso.App")
        fixture.provider.registerRedirectURI(redirect)
        var configuration = PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID, authority: fixture.authority,
            cacheStore: try SQLiteTokenCacheStore(path: fixture.directory.path("\(cacheName).sqlite")))
        configuration.redirectURI = redirect
        configuration.applicationID = "com.contoso.App"
        return (try PublicClientApplication(configuration: configuration), redirect)
    }

    @Test("A custom-scheme redirect is completed by handleResponse(url:)")
    func customScheme() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let (application, redirect) = try customSchemeApplication(fixture, cacheName: "custom")
        #expect(application.handleResponse(url: URL(string: "\(redirect)?code=x&state=nobody")!) == false)

        // The "system" hands the app the custom-scheme URL the provider redirected to.
        let browser = ClosureBrowserLauncher { url in
            Task {
                guard let delivered = try? await location(of: url) else { return }
                _ = application.handleResponse(url: delivered)
            }
            return true
        }
        let result = try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, browser: browser, timeout: 10))
        #expect(result.tokenSource == .identityProvider)
        #expect(result.account.username == LocalIdentityProvider.demoUser.username)
    }

    @Test("A redirect handed over before the flow waits is kept; a URL that is not the redirect URI is refused")
    func customSchemeEarlyDelivery() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let (application, _) = try customSchemeApplication(fixture, cacheName: "early")
        let refusedForeign = URLBox()
        // The "browser" delivers the redirect before it returns, i.e. before the flow waits.
        let browser = ClosureBrowserLauncher { url in
            guard let delivered = try? await location(of: url),
                  var foreign = URLComponents(url: delivered, resolvingAgainstBaseURL: false)
            else { return false }
            foreign.scheme = "https"
            foreign.host = "evil.example"
            if let foreignURL = foreign.url, !application.handleResponse(url: foreignURL) {
                refusedForeign.set(foreignURL, false)
            }
            return application.handleResponse(url: delivered)
        }
        let result = try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, browser: browser, timeout: 10))
        #expect(result.tokenSource == .identityProvider)
        #expect(refusedForeign.value != nil)
    }

    @Test("A private-use-scheme redirect with a foreign state ends the sign-in with invalidState")
    func invalidState() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let (application, _) = try customSchemeApplication(fixture, cacheName: "state")
        let browser = ClosureBrowserLauncher { url in
            Task {
                guard let delivered = try? await location(of: url),
                      var forged = URLComponents(url: delivered, resolvingAgainstBaseURL: false) else { return }
                forged.queryItems = (forged.queryItems ?? []).map { $0.name == "state" ? URLQueryItem(name: "state", value: "forged") : $0 }
                if let forgedURL = forged.url { _ = application.handleResponse(url: forgedURL) }
            }
            return true
        }
        await #expect(throws: MSALError.internal(.invalidState, "")) {
            try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, browser: browser, timeout: 10))
        }
        #expect(try application.allAccounts().isEmpty)
    }

    @Test("cancelCurrentInteractiveSession ends a running sign-in with sessionCanceled and closes its listener")
    func sessionCanceled() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        #expect(application.cancelCurrentInteractiveSession() == false)
        let opened = URLBox()
        let task = Task {
            try await application.acquireToken(with: InteractiveTokenParameters(
                scopes: Self.scopes, browser: ClosureBrowserLauncher { _ in true },
                authorizationURLHandler: { url, browserOpened in opened.set(url, browserOpened) }, timeout: 30))
        }
        for _ in 0..<300 where opened.value == nil { try await Task.sleep(nanoseconds: 10_000_000) }
        let authorize = try #require(opened.value?.url)
        let redirect = try #require(URLComponents(url: authorize, resolvingAgainstBaseURL: false)?
            .queryItems?.first { $0.name == "redirect_uri" }?.value.flatMap(URL.init(string:)))
        #expect(application.cancelCurrentInteractiveSession())
        await #expect(throws: MSALError.internal(.sessionCanceled, "")) { try await task.value }
        #expect(!(try await isListening(redirect)))
    }

    @Test("Redirect URIs that break a rule are refused when the application is created", arguments: [
        "urn:ietf:wg:oauth:2.0:oob", "https://app.example.com/callback", "http://localhost/cb#frag", "msauth.com.other.App://auth", "no-scheme",
    ])
    func invalidRedirectURI(uri: String) throws {
        var configuration = PublicClientApplicationConfiguration(
            clientID: "app", authority: try Authority("https://login.microsoftonline.com/common"), cacheBackend: .inMemory)
        configuration.redirectURI = uri
        configuration.applicationID = "com.contoso.App"
        #expect(throws: MSALError.internal(.invalidRedirectURI, "")) { try PublicClientApplication(configuration: configuration) }
    }
}

/// The URL handed to the app and whether a browser opened, set from a `@Sendable` closure.
final class URLBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: (url: URL, browserOpened: Bool)?
    func set(_ url: URL, _ browserOpened: Bool) { lock.lock(); stored = (url, browserOpened); lock.unlock() }
    var value: (url: URL, browserOpened: Bool)? { lock.lock(); defer { lock.unlock() }; return stored }
}

/// Whether something accepts connections at the URL's host and port.
private func isListening(_ url: URL) async throws -> Bool {
    var request = URLRequest(url: url)
    request.timeoutInterval = 2
    do {
        _ = try await URLSession(configuration: .ephemeral).data(for: request)
        return true
    } catch {
        return false
    }
}
