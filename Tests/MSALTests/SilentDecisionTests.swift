import Foundation
@testable import MSAL
import MSALCache
import MSALCore
import Testing

/// A clock whose cheap reading lags its exact one, as the system's coarse clock does.
final class LaggingClock: WallClock {
    let exact: Date
    let lag: TimeInterval

    init(_ exact: Date, lag: TimeInterval) {
        self.exact = exact
        self.lag = lag
    }

    func now() -> Date { exact }
    func approximateNow() -> Date { exact.addingTimeInterval(-lag) }
}

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

    @Test("A hit's decision with a clock whose cheap reading lags (by 4 ms, 0.5 s, 0.99 s) is the exact clock's, at every instant around the expiry less the buffer and the refresh instant", arguments: [0.004, 0.5, 0.99])
    func approximateClockAtTheBoundaries(lag: TimeInterval) throws {
        let offsets: [TimeInterval] = [-2, -1, -0.99, -0.5, -0.004, -0.001, 0, 0.001, 0.004, 0.5, 0.99, 1, 1.001, 2]
        var decided = 0
        for buffer: TimeInterval in [300, 0] {
            var configuration = PublicClientApplicationConfiguration(
                clientID: "client", authority: try Authority("https://login.microsoftonline.com/common"), cacheStore: InMemoryTokenCacheStore())
            configuration.clock = LaggingClock(now, lag: lag)
            configuration.tokenExpirationBuffer = buffer
            let application = try PublicClientApplication(configuration: configuration)
            for offset in offsets {
                for (expiresOn, refreshOn) in [(now + buffer + offset, nil), (now + 3600, now + offset)] as [(Date, Date?)] {
                    let exact = SilentDecision.decide(expiresOn: expiresOn, refreshOn: refreshOn, now: now, expirationBuffer: buffer, forceRefresh: false)
                    #expect(application.hitDecision(expiresOn: expiresOn, refreshOn: refreshOn, forceRefresh: false) == exact, "buffer \(buffer), offset \(offset)")
                    #expect(application.hitDecision(expiresOn: expiresOn, refreshOn: refreshOn, forceRefresh: true) == .refresh)
                    decided += 1
                }
            }
        }
        #expect(decided == 2 * 14 * 2)
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
