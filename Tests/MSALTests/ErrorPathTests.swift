import Foundation
import MSAL
import MSALCacheSQLite
import MSALCore
import MSALNetwork
import MSALTestSupport
import Testing

@Suite("Errors a caller can act on, against the local provider")
struct ErrorPathTests {
    static let scopes = ["api://demo/Files.Read"]

    private func silent(_ application: PublicClientApplication, _ account: Account, force: Bool = true) async throws(MSALError) -> AuthenticationResult {
        try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account, forceRefresh: force))
    }

    @Test("A revoked refresh token gives interactionRequired with the server's error and codes")
    func revokedRefreshToken() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        fixture.provider.revokeRefreshTokens(username: LocalIdentityProvider.demoUser.username)
        do {
            _ = try await silent(application, signIn.account)
            Issue.record("expected interactionRequired")
        } catch {
            #expect(error.code == .interactionRequired)
            #expect(error.oauthError == "invalid_grant")
            #expect(!error.errorCodes.isEmpty)
            #expect(error.httpStatusCode == 400)
            #expect(error.correlationID != nil)
            #expect(!error.description.contains(signIn.accessToken))
        }
        // The cached access token is still served without a forced refresh.
        #expect(try await silent(application, signIn.account, force: false).tokenSource == .cache)
    }

    @Test("invalid_grant with a suberror is interactionRequired carrying the suberror")
    func subError() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        fixture.provider.failNextTokenRequests(with: .oauthError(error: "invalid_grant", subError: "basic_action", description: "AADSTS50076: MFA required", errorCodes: [50076]))
        do {
            _ = try await silent(application, signIn.account)
            Issue.record("expected interactionRequired")
        } catch {
            #expect(error.code == .interactionRequired)
            #expect(error.subError == "basic_action")
            #expect(error.errorCodes == [50076])
        }
    }

    @Test("A 400 with an empty body on refresh (Glewlwyd's answer) is interactionRequired with the status")
    func emptyBodyRefresh() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        fixture.provider.failNextTokenRequests(with: .emptyBody(status: 400))
        do {
            _ = try await silent(application, signIn.account)
            Issue.record("expected interactionRequired")
        } catch {
            #expect(error.code == .interactionRequired)
            #expect(error.httpStatusCode == 400)
            #expect(error.message.contains("empty"))
        }
    }

    @Test("An HTML error page or a 5xx (after its one retry) is a serverError with the HTTP status, not a crash")
    func htmlAndServerErrors() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let failures: [(LocalIdentityProvider.Failure, Int, Bool)] = [
            (.html(status: 502), 502, true), (.serverError(status: 503), 503, false), (.emptyBody(status: 500), 500, false),
        ]
        for (failure, status, isHTML) in failures {
            // Twice: the request and its one retry.
            fixture.provider.failNextTokenRequests(with: failure, count: 2)
            do {
                _ = try await silent(application, signIn.account)
                Issue.record("expected serverError for HTTP \(status)")
            } catch {
                #expect(error.code == .serverError)
                #expect(error.internalCode == .invalidResponse)
                #expect(error.httpStatusCode == status)
                if isHTML { #expect(error.message.lowercased().contains("html")) }
            }
            // A 5xx throttles the same request for 60 s; let that pass.
            fixture.clock.advance(by: 61)
        }
        // The provider is fine again: the refresh token still works.
        #expect(try await silent(application, signIn.account).tokenSource == .identityProvider)
    }

    @Test("A denied device code is userCanceled")
    func denied() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let provider = fixture.provider
        await #expect(throws: MSALError(.userCanceled, message: "")) {
            try await application.acquireToken(with: DeviceCodeParameters(scopes: Self.scopes)) { info in
                try provider.denyDeviceCode(userCode: info.userCode)
            }
        }
        #expect(try application.allAccounts().isEmpty)
    }

    @Test("A device code nobody approves expires: deviceCodeExpired")
    func expired() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        fixture.provider.deviceCodeLifetime = 30
        let application = try fixture.application()
        await #expect(throws: MSALError.internal(.deviceCodeExpired, "")) {
            try await application.acquireToken(with: DeviceCodeParameters(scopes: Self.scopes)) { _ in }
        }
    }

    @Test("A reserved scope passed by the app is rejected before any request")
    func reservedScope() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let correlationID = UUID()
        do {
            _ = try await application.acquireToken(with: DeviceCodeParameters(scopes: ["openid", "api://demo/Files.Read"], correlationID: correlationID)) { _ in }
            Issue.record("expected invalidScope")
        } catch {
            #expect(error == .internal(.invalidScope, ""))
            #expect(error.correlationID == correlationID.uuidString.lowercased())
        }
        #expect(fixture.provider.tokenRequests.isEmpty)
    }

    @Test("A provider that is down is a networkError, quickly")
    func providerDown() async throws {
        let fixture = try LocalFixture()
        let deadAuthority = fixture.authority
        fixture.stop()
        var configuration = PublicClientApplicationConfiguration(clientID: LocalIdentityProvider.demoClientID, authority: deadAuthority, cacheBackend: .inMemory)
        configuration.transport = URLSessionTransport(timeout: 5)
        let application = try PublicClientApplication(configuration: configuration)
        await #expect(throws: MSALError.internal(.networkError, "")) {
            try await application.acquireToken(with: DeviceCodeParameters(scopes: Self.scopes)) { _ in }
        }
    }

    @Test("Silent with no cached account is interactionRequired")
    func noAccount() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let stranger = Account(identifier: "00000000-0000-0000-0000-000000000001.\(LocalIdentityProvider.demoTenantID)", username: nil, environment: fixture.authority.environment, tenantProfiles: [])
        await #expect(throws: MSALError(.interactionRequired, message: "")) {
            try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: stranger))
        }
    }

    @Test("An empty client id is an invalidParameter error")
    func emptyClientID() throws {
        let authority = try Authority("https://login.microsoftonline.com/common")
        #expect(throws: MSALError.internal(.invalidParameter, "")) {
            try PublicClientApplication(configuration: PublicClientApplicationConfiguration(clientID: " ", authority: authority, cacheBackend: .inMemory))
        }
    }
}
