import Foundation
@testable import MSAL
import MSALCore
import Testing

@Suite("Silent flow decision (pure)")
struct SilentDecisionTests {
    let now = Date(timeIntervalSince1970: 1_000_000)

    @Test("No cached token, or a forced refresh, refreshes")
    func refresh() {
        #expect(SilentDecision.decide(expiresOn: nil, refreshOn: nil, now: now, expirationBuffer: 300, forceRefresh: false) == .refresh)
        #expect(SilentDecision.decide(expiresOn: now + 3600, refreshOn: nil, now: now, expirationBuffer: 300, forceRefresh: true) == .refresh)
    }

    @Test("The buffer is exclusive: exactly 300 s left refreshes, 301 s is served")
    func buffer() {
        #expect(SilentDecision.decide(expiresOn: now + 300, refreshOn: nil, now: now, expirationBuffer: 300, forceRefresh: false) == .refresh)
        #expect(SilentDecision.decide(expiresOn: now + 301, refreshOn: nil, now: now, expirationBuffer: 300, forceRefresh: false) == .useCached)
        #expect(SilentDecision.decide(expiresOn: now + 10, refreshOn: nil, now: now, expirationBuffer: 0, forceRefresh: false) == .useCached)
        #expect(SilentDecision.decide(expiresOn: now - 1, refreshOn: nil, now: now, expirationBuffer: 0, forceRefresh: false) == .refresh)
    }

    @Test("Past refresh_in, a valid token is refreshed proactively with the cached one as fallback")
    func proactive() {
        #expect(SilentDecision.decide(expiresOn: now + 3600, refreshOn: now, now: now, expirationBuffer: 300, forceRefresh: false) == .refreshOrUseCached)
        #expect(SilentDecision.decide(expiresOn: now + 3600, refreshOn: now + 1, now: now, expirationBuffer: 300, forceRefresh: false) == .useCached)
    }

    @Test("A rejected refresh with an empty or non-JSON 400/401 body becomes interactionRequired; 5xx stays")
    func refreshFailureMapping() {
        let empty = MSALError(.serverError, internalCode: .invalidResponse, message: "The token endpoint answered HTTP 400 with an empty body", httpStatusCode: 400)
        let mapped = PublicClientApplication.refreshFailure(empty, correlationID: "c-1")
        #expect(mapped.code == .interactionRequired)
        #expect(mapped.httpStatusCode == 400)
        #expect(mapped.correlationID == "c-1")
        let outage = MSALError(.serverError, internalCode: .invalidResponse, message: "HTML", httpStatusCode: 503)
        #expect(PublicClientApplication.refreshFailure(outage, correlationID: "c-1").code == .serverError)
    }
}
