import Foundation
import MSAL
import MSALTestSupport
import Testing

/// The error table of Docs/ErrorModel.md, row by row, against the local provider: what a silent
/// refresh answered with each OAuth error becomes, plus retry and throttling.
@Suite("Error model, retry and throttling of silent refreshes")
struct ErrorModelTests {
    static let scopes = ["api://demo/Files.Read"]

    private func forcedRefresh(_ application: PublicClientApplication, _ account: Account) async throws(MSALError) -> AuthenticationResult {
        try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: account, forceRefresh: true))
    }

    struct Row: Sendable, CustomStringConvertible {
        let error: String
        let subError: String?
        let expected: MSALError.Code
        var description: String { "\(error)/\(subError ?? "-") -> \(expected)" }
    }

    static let rows: [Row] = [
        Row(error: "invalid_grant", subError: nil, expected: .interactionRequired),
        Row(error: "invalid_grant", subError: "basic_action", expected: .interactionRequired),
        Row(error: "invalid_grant", subError: "additional_action", expected: .interactionRequired),
        Row(error: "invalid_grant", subError: "message_only", expected: .interactionRequired),
        Row(error: "invalid_grant", subError: "consent_required", expected: .interactionRequired),
        Row(error: "invalid_grant", subError: "user_password_expired", expected: .interactionRequired),
        Row(error: "invalid_grant", subError: "token_expired", expected: .interactionRequired),
        Row(error: "invalid_grant", subError: "client_mismatch", expected: .interactionRequired),
        Row(error: "interaction_required", subError: nil, expected: .interactionRequired),
        Row(error: "invalid_request", subError: nil, expected: .interactionRequired),
        Row(error: "unauthorized_client", subError: "protection_policy_required", expected: .serverProtectionPoliciesRequired),
        Row(error: "invalid_scope", subError: nil, expected: .serverError),
        Row(error: "invalid_client", subError: nil, expected: .serverError),
        Row(error: "unauthorized_client", subError: nil, expected: .serverError),
    ]

    @Test("A refresh answered with an OAuth error maps to the code of its row, keeping the server's fields", arguments: rows)
    func row(_ row: Row) async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        fixture.provider.failNextTokenRequests(with: .oauthError(error: row.error, subError: row.subError, description: "AADSTS50000: test", errorCodes: [50000]))
        do {
            _ = try await forcedRefresh(application, signIn.account)
            Issue.record("expected \(row.expected)")
        } catch {
            #expect(error.code == row.expected)
            #expect(error.oauthError == row.error)
            #expect(error.subError == row.subError)
            #expect(error.errorCodes == [50000])
            #expect(error.correlationID != nil)
            #expect(error.httpStatusCode == 400)
        }
    }

    @Test("invalid_grant with bad_token removes the refresh token: the next call needs no request to fail")
    func badTokenRemovesRefreshToken() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        fixture.provider.failNextTokenRequests(with: .oauthError(error: "invalid_grant", subError: "bad_token"))
        await #expect(throws: MSALError(.interactionRequired, message: "")) { try await forcedRefresh(application, signIn.account) }
        let before = fixture.provider.tokenRequests.count
        do {
            _ = try await forcedRefresh(application, signIn.account)
            Issue.record("expected interactionRequired")
        } catch {
            #expect(error.code == .interactionRequired)
            #expect(error.message.contains("No refresh token"))
        }
        #expect(fixture.provider.tokenRequests.count == before)
        // The account stays listed while its other tokens are cached, so it can be removed.
        #expect(try application.allAccounts() == [signIn.account])
        try application.remove(account: signIn.account)
        #expect(try application.allAccounts().isEmpty)
    }

    @Test("A rejected refresh token is remembered: the same call fails fast until the user signs in again")
    func uiRequiredThrottle() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        fixture.provider.failNextTokenRequests(with: .oauthError(error: "invalid_grant", subError: "basic_action"))
        await #expect(throws: MSALError(.interactionRequired, message: "")) { try await forcedRefresh(application, signIn.account) }
        let before = fixture.provider.tokenRequests.count
        await #expect(throws: MSALError(.interactionRequired, message: "")) { try await forcedRefresh(application, signIn.account) }
        #expect(fixture.provider.tokenRequests.count == before)
        // Signing in again lifts it.
        _ = try await fixture.signIn(application)
        #expect(try await forcedRefresh(application, signIn.account).tokenSource == .identityProvider)
    }

    @Test("One 5xx is retried once, transparently")
    func retryOnce() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let before = fixture.provider.tokenRequests.count
        fixture.provider.failNextTokenRequests(with: .serverError(status: 503))
        #expect(try await forcedRefresh(application, signIn.account).tokenSource == .identityProvider)
        #expect(fixture.provider.tokenRequests.count == before + 2)
    }

    @Test("429 with Retry-After: no request with the same key reaches the provider until then")
    func retryAfter() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        fixture.provider.failNextTokenRequests(with: .throttled(status: 429, retryAfter: "30"))
        do {
            _ = try await forcedRefresh(application, signIn.account)
            Issue.record("expected serverError")
        } catch {
            #expect(error.code == .serverError)
            #expect(error.httpStatusCode == 429)
            #expect(error.retryAfter == 30)
        }
        let before = fixture.provider.tokenRequests.count
        fixture.clock.advance(by: 10)
        do {
            _ = try await forcedRefresh(application, signIn.account)
            Issue.record("expected the throttled error")
        } catch {
            #expect(error.httpStatusCode == 429)
            #expect((error.retryAfter ?? 0) <= 20)
        }
        #expect(fixture.provider.tokenRequests.count == before)
        // Another key (other scopes) is not held back.
        let other = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://other/Read"], account: signIn.account))
        #expect(other.tokenSource == .identityProvider)
        fixture.clock.advance(by: 21)
        #expect(try await forcedRefresh(application, signIn.account).tokenSource == .identityProvider)
    }
}
