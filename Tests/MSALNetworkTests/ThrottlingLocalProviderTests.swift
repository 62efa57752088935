import Foundation
import MSALCore
import MSALNetwork
import MSALTestSupport
import Testing

/// Throttling over real HTTP: OAuth2Client → URLSessionTransport → LocalIdentityProvider.
@Suite("Throttling against the local identity provider")
struct ThrottlingLocalProviderTests {
    struct Setup {
        let clock = ManualWallClock()
        let provider: LocalIdentityProvider
        let client: OAuth2Client
        let throttler: Throttler
        let tokenEndpoint: URL
        let key: ThrottleKey

        init() throws {
            provider = LocalIdentityProvider(clock: clock)
            try provider.start()
            client = OAuth2Client(transport: URLSessionTransport(timeout: 10), clock: clock)
            throttler = Throttler(clock: clock)
            tokenEndpoint = URL(string: provider.authority() + "/oauth2/v2.0/token")!
            key = ThrottleKey(
                clientID: LocalIdentityProvider.demoClientID,
                authority: try Authority(provider.authority(), type: .aad),
                scopes: ["User.Read"],
                homeAccountId: "uid.utid")
        }

        /// One refresh through the throttler, with a refresh token the provider does not know.
        func refresh(_ key: ThrottleKey) async -> MSALError? {
            await capture {
                try await throttler.perform(key, grantType: "refresh_token") { () throws(MSALError) in
                    try await client.redeemRefreshToken(
                        tokenEndpoint: tokenEndpoint, clientID: key.clientID, refreshToken: "not-a-refresh-token",
                        scopes: key.scopes, correlationID: UUID().uuidString)
                }
            }
        }
    }

    @Test("after a 429 with Retry-After, the same request never reaches the provider until the time is up")
    func retryAfter() async throws {
        let setup = try Setup()
        defer { setup.provider.stop() }
        setup.provider.failNextTokenRequests(with: .throttled(status: 429, retryAfter: "30"))

        let first = try #require(await setup.refresh(setup.key))
        #expect(first.httpStatusCode == 429)
        #expect(first.retryAfter == 30)
        #expect(setup.provider.tokenRequests.count == 1)

        setup.clock.advance(by: 20)
        let second = try #require(await setup.refresh(setup.key))
        #expect(second.code == .serverError)
        #expect(second.httpStatusCode == 429)
        #expect(second.retryAfter == 10)
        #expect(setup.provider.tokenRequests.count == 1, "the throttled request was not sent")

        var otherScopes = setup.key
        otherScopes.scopes = ["Mail.Read"]
        #expect(await setup.refresh(otherScopes)?.oauthError == "invalid_grant", "another key goes out")
        #expect(setup.provider.tokenRequests.count == 2)

        setup.clock.advance(by: 10)
        #expect(await setup.refresh(setup.key)?.oauthError == "invalid_grant", "the wait is over")
        #expect(setup.provider.tokenRequests.count == 3)
    }

    @Test("an HTTP-date Retry-After and a missing one on 503 are honoured")
    func dateAndDefault() async throws {
        let setup = try Setup()
        defer { setup.provider.stop() }
        let inTwoMinutes = Date(timeIntervalSince1970: 1_700_000_120)  // the ManualWallClock starts at 1_700_000_000
        setup.provider.failNextTokenRequests(with: .throttled(status: 503, retryAfter: "Tue, 14 Nov 2023 22:15:20 GMT"))
        #expect(RetryAfter.httpDate("Tue, 14 Nov 2023 22:15:20 GMT", now: inTwoMinutes) == inTwoMinutes)
        #expect(await setup.refresh(setup.key)?.retryAfter == 120)
        setup.clock.advance(by: 119)
        #expect(await setup.refresh(setup.key)?.retryAfter == 1)
        #expect(setup.provider.tokenRequests.count == 1)

        setup.clock.advance(by: 1)
        setup.provider.failNextTokenRequests(with: .serverError(status: 503))
        #expect(await setup.refresh(setup.key)?.retryAfter == nil)
        #expect(await setup.refresh(setup.key)?.retryAfter == ThrottlingState.defaultThrottleDuration)
        #expect(setup.provider.tokenRequests.count == 2)
    }

    @Test("invalid_grant on a refresh: the next silent refresh is not sent until clear(homeAccountId:)")
    func uiRequired() async throws {
        let setup = try Setup()
        defer { setup.provider.stop() }
        #expect(await setup.refresh(setup.key) == MSALError(.interactionRequired, message: ""))
        #expect(await setup.refresh(setup.key) == MSALError(.interactionRequired, message: ""))
        #expect(setup.provider.tokenRequests.count == 1)
        await setup.throttler.clear(homeAccountId: "uid.utid")
        #expect(await setup.refresh(setup.key) == MSALError(.interactionRequired, message: ""))
        #expect(setup.provider.tokenRequests.count == 2)
    }
}
