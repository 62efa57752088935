import Foundation
import MSAL
import MSALCacheSQLite
import MSALTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

@Suite("Account rules: one interactive session, the named user, unambiguous usernames, registration errors")
struct AccountRulesTests {
    static let scopes = ["api://demo/Files.Read"]
    static let bob = LocalIdentityProvider.User(
        username: "bob@contoso.example", objectID: "b0b0b0b0-0000-4000-8000-0000000000b0",
        tenantID: LocalIdentityProvider.demoTenantID, name: "Bob Example")

    @Test("A second interactive sign-in while one runs is interactiveSessionAlreadyRunning")
    func oneInteractiveSession() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let first = Task {
            try await application.acquireToken(with: InteractiveTokenParameters(
                scopes: Self.scopes, browser: ClosureBrowserLauncher { _ in true }, timeout: 30))
        }
        // Wait until the first one has reached the provider's authorize page... or at least started.
        for _ in 0..<200 where fixture.provider.authorizeRequests.isEmpty {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        await #expect(throws: MSALError.internal(.interactiveSessionAlreadyRunning, "")) {
            try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, browser: followingBrowser()))
        }
        first.cancel()
        await #expect(throws: MSALError(.userCanceled, message: "")) { try await first.value }
        // Once it ended, another may start.
        #expect(try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, browser: followingBrowser())).tokenSource == .identityProvider)
    }

    @Test("Signing in again as a named account while another user signs in is mismatchedUser; nothing is cached")
    func mismatchedUser() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        fixture.provider.addUser(Self.bob)
        let application = try fixture.application()
        let alice = try await fixture.signIn(application)
        fixture.provider.setNextUserAction(.signIn(username: Self.bob.username))
        await #expect(throws: MSALError.internal(.mismatchedUser, "")) {
            try await application.acquireToken(with: InteractiveTokenParameters(scopes: Self.scopes, account: alice.account, browser: followingBrowser()))
        }
        #expect(try application.allAccounts().map(\.username) == [LocalIdentityProvider.demoUser.username])
    }

    @Test("A username that matches accounts of two clouds is ambiguousAccount")
    func ambiguousUsername() async throws {
        let first = try LocalFixture()
        defer { first.stop() }
        let second = try LocalFixture()
        defer { second.stop() }
        // Both providers' accounts go to one cache file.
        var configuration = PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID, authority: second.authority,
            cacheStore: try SQLiteTokenCacheStore(path: first.cachePath))
        configuration.clock = second.clock
        let other = try PublicClientApplication(configuration: configuration)
        let application = try first.application()
        _ = try await first.signIn(application)
        _ = try await second.signIn(other)
        #expect(try application.allAccounts().count == 2)
        #expect(throws: MSALError.internal(.ambiguousAccount, "")) {
            try application.account(forUsername: LocalIdentityProvider.demoUser.username)
        }
        #expect(try application.account(forUsername: "nobody@contoso.example") == nil)
    }

    @Test("Registration errors on refresh keep serverError with a precise internal code", arguments: [
        ("invalid_client", MSALError.InternalCode.invalidClient), ("unauthorized_client", .unauthorizedClient), ("invalid_scope", .invalidScope),
    ])
    func registrationErrors(error oauthError: String, internalCode: MSALError.InternalCode) async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        fixture.provider.failNextTokenRequests(with: .oauthError(error: oauthError))
        do {
            _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, forceRefresh: true))
            Issue.record("expected serverError")
        } catch {
            #expect(error.code == .serverError)
            #expect(error.internalCode == internalCode)
            #expect(error.oauthError == oauthError)
        }
    }
}
