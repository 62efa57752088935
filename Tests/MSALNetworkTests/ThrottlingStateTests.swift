import Foundation
import MSALCore
import MSALNetwork
import Testing

/// The throttling state machine, with no I/O: every transition gets "now".
@Suite("ThrottlingState")
struct ThrottlingStateTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    let key = ThrottleKey(
        clientID: "client-1",
        authority: try! Authority("https://login.microsoftonline.com/contoso.com"),
        scopes: ["User.Read", "Mail.Read"],
        homeAccountId: "uid-1.utid-1"
    )

    func tooMany(_ retryAfter: TimeInterval?, status: Int = 429) -> MSALError {
        MSALError(
            .serverError, message: "Too many.", oauthError: "temporarily_unavailable", subError: "throttled",
            errorCodes: [50196], correlationID: "corr-1", httpStatusCode: status, retryAfter: retryAfter)
    }

    let invalidGrant = MSALError(
        .interactionRequired, message: "Bad token.", oauthError: "invalid_grant", subError: "bad_token",
        errorCodes: [70000], correlationID: "corr-2", httpStatusCode: 400)

    @Test("429 with Retry-After throttles for that long; the error keeps the server's fields and says how long is left")
    func retryAfterSeconds() throws {
        var state = ThrottlingState()
        #expect(state.check(key, grantType: "refresh_token", now: t0) == nil)
        state.record(tooMany(30), grantType: "refresh_token", for: key, now: t0)
        let error = try #require(state.check(key, grantType: "refresh_token", now: t0.addingTimeInterval(10)))
        #expect(error == MSALError(.serverError, message: ""))
        #expect(error.httpStatusCode == 429)
        #expect(error.oauthError == "temporarily_unavailable")
        #expect(error.subError == "throttled")
        #expect(error.errorCodes == [50196])
        #expect(error.correlationID == "corr-1")
        #expect(error.retryAfter == 20)
        #expect(error.message.contains("20 more seconds"))
        // Every grant with the key is blocked: the server asked this client to wait.
        #expect(state.check(key, grantType: "authorization_code", now: t0.addingTimeInterval(10)) != nil)
        #expect(state.check(key, grantType: "refresh_token", now: t0.addingTimeInterval(30)) == nil, "expired at exactly 30 s")
    }

    @Test("an HTTP-date Retry-After recorded by OAuth2Client as seconds is honoured the same way")
    func retryAfterFromDate() throws {
        var state = ThrottlingState()
        let seconds = try #require(RetryAfter.seconds("Tue, 14 Nov 2023 22:15:20 GMT", now: t0))
        state.record(tooMany(seconds, status: 503), grantType: "refresh_token", for: key, now: t0)
        #expect(state.check(key, grantType: "refresh_token", now: t0.addingTimeInterval(119))?.retryAfter == 1)
        #expect(state.check(key, grantType: "refresh_token", now: t0.addingTimeInterval(120)) == nil)
    }

    @Test("Retry-After is capped at 3600 s")
    func cap() {
        var state = ThrottlingState()
        state.record(tooMany(86_400), grantType: "refresh_token", for: key, now: t0)
        #expect(state.check(key, grantType: "refresh_token", now: t0)?.retryAfter == ThrottlingState.maxRetryAfter)
        #expect(state.check(key, grantType: "refresh_token", now: t0.addingTimeInterval(3599)) != nil)
        #expect(state.check(key, grantType: "refresh_token", now: t0.addingTimeInterval(3600)) == nil)
    }

    @Test("429 and 5xx without (valid) Retry-After throttle for the default 60 s", arguments: [429, 500, 501, 502, 503, 504, 599])
    func defaultDuration(status: Int) {
        var state = ThrottlingState()
        state.record(tooMany(nil, status: status), grantType: "refresh_token", for: key, now: t0)
        #expect(state.check(key, grantType: "refresh_token", now: t0)?.retryAfter == ThrottlingState.defaultThrottleDuration)
        #expect(state.check(key, grantType: "refresh_token", now: t0.addingTimeInterval(59)) != nil)
        #expect(state.check(key, grantType: "refresh_token", now: t0.addingTimeInterval(60)) == nil)
    }

    @Test("Retry-After: 0 means now; other 4xx, 2xx and transport errors throttle nothing")
    func nothingRecorded() {
        var state = ThrottlingState()
        state.record(tooMany(0), grantType: "refresh_token", for: key, now: t0)
        state.record(tooMany(nil, status: 404), grantType: "refresh_token", for: key, now: t0)
        state.record(tooMany(nil, status: 200), grantType: "refresh_token", for: key, now: t0)
        state.record(.internal(.networkError, "Refused."), grantType: "refresh_token", for: key, now: t0)
        state.record(.internal(.timeout, "Slow."), grantType: "refresh_token", for: key, now: t0)
        #expect(state.count == 0)
        #expect(state.check(key, grantType: "refresh_token", now: t0) == nil)
    }

    @Test("keys differing in client, authority, scopes or account are independent; scope case and order are not")
    func keys() throws {
        var state = ThrottlingState()
        state.record(tooMany(30), grantType: "refresh_token", for: key, now: t0)
        var other = [key, key, key, key, key]
        other[0].clientID = "client-2"
        other[1].authority = try Authority("https://login.microsoftonline.com/common")
        other[2].scopes = ["User.Read"]
        other[3].homeAccountId = "uid-2.utid-1"
        other[4].homeAccountId = nil
        for key in other { #expect(state.check(key, grantType: "refresh_token", now: t0) == nil) }
        var same = key
        same.scopes = ["mail.read", "user.read"]
        same.authority = try Authority("https://LOGIN.microsoftonline.com/contoso.com/v2.0")
        #expect(state.check(same, grantType: "refresh_token", now: t0) != nil)
    }

    @Test("400 invalid_grant to a refresh-token request: silent refreshes fail fast with interactionRequired for 120 s")
    func uiRequired() throws {
        var state = ThrottlingState()
        state.record(invalidGrant, grantType: "refresh_token", for: key, now: t0)
        let error = try #require(state.check(key, grantType: "refresh_token", now: t0.addingTimeInterval(119)))
        #expect(error == MSALError(.interactionRequired, message: ""))
        #expect(error.oauthError == "invalid_grant")
        #expect(error.subError == "bad_token")
        #expect(error.httpStatusCode == 400)
        #expect(error.retryAfter == nil, "waiting does not help; signing in does")
        #expect(error.message.hasPrefix("Request not sent"))
        // An interactive sign-in (authorization code) or a device code grant is never blocked by it.
        #expect(state.check(key, grantType: "authorization_code", now: t0) == nil)
        #expect(state.check(key, grantType: OAuth2Client.deviceCodeGrantType, now: t0) == nil)
        #expect(state.check(key, grantType: "refresh_token", now: t0.addingTimeInterval(120)) == nil)
    }

    @Test("UI required is recorded only for 400 answers to refresh-token requests")
    func uiRequiredOnlyForRefresh() {
        var state = ThrottlingState()
        state.record(invalidGrant, grantType: "authorization_code", for: key, now: t0)
        var notFound = invalidGrant
        notFound.httpStatusCode = 401
        state.record(notFound, grantType: "refresh_token", for: key, now: t0)
        state.record(MSALError(.serverError, message: "x", oauthError: "invalid_request", httpStatusCode: 400),
                     grantType: "refresh_token", for: key, now: t0)
        #expect(state.check(key, grantType: "refresh_token", now: t0) == nil)
        #expect(state.count == 0)
    }

    @Test("clear(homeAccountId:) lifts UI required for that account only, and leaves Retry-After in force")
    func clear() {
        var state = ThrottlingState()
        var otherAccount = key
        otherAccount.homeAccountId = "uid-2.utid-1"
        var otherScopes = key
        otherScopes.scopes = ["Files.Read"]
        state.record(invalidGrant, grantType: "refresh_token", for: key, now: t0)
        state.record(invalidGrant, grantType: "refresh_token", for: otherAccount, now: t0)
        state.record(tooMany(300), grantType: "refresh_token", for: otherScopes, now: t0)
        state.clear(homeAccountId: "uid-1.utid-1")
        #expect(state.check(key, grantType: "refresh_token", now: t0) == nil)
        #expect(state.check(otherAccount, grantType: "refresh_token", now: t0) == MSALError(.interactionRequired, message: ""))
        #expect(state.check(otherScopes, grantType: "refresh_token", now: t0) == MSALError(.serverError, message: ""))
    }

    @Test("a newer record for the key replaces the older one")
    func replace() {
        var state = ThrottlingState()
        state.record(tooMany(600), grantType: "refresh_token", for: key, now: t0)
        state.record(tooMany(10), grantType: "refresh_token", for: key, now: t0.addingTimeInterval(5))
        #expect(state.count == 1)
        #expect(state.check(key, grantType: "refresh_token", now: t0.addingTimeInterval(15)) == nil)
    }

    @Test("expired entries are dropped on record")
    func expiry() {
        var state = ThrottlingState()
        state.record(tooMany(30), grantType: "refresh_token", for: key, now: t0)
        state.record(invalidGrant, grantType: "refresh_token", for: key, now: t0)
        #expect(state.count == 2)
        var other = key
        other.clientID = "client-2"
        state.record(tooMany(30), grantType: "refresh_token", for: other, now: t0.addingTimeInterval(200))
        #expect(state.count == 1)
        state.removeExpired(now: t0.addingTimeInterval(230))
        #expect(state.count == 0)
    }

    @Test("the state is bounded: beyond capacity the oldest entry is evicted")
    func eviction() {
        var state = ThrottlingState()
        #expect(state.capacity == 1000)
        func key(_ i: Int) -> ThrottleKey {
            var key = self.key
            key.homeAccountId = "uid-\(i).utid"
            return key
        }
        for i in 0..<1005 {
            state.record(tooMany(3600), grantType: "refresh_token", for: key(i), now: t0.addingTimeInterval(Double(i) * 0.001))
        }
        #expect(state.count == 1000)
        let now = t0.addingTimeInterval(2)
        for i in 0..<5 { #expect(state.check(key(i), grantType: "refresh_token", now: now) == nil, "entry \(i) evicted") }
        for i in 5..<1005 { #expect(state.check(key(i), grantType: "refresh_token", now: now) != nil) }

        var small = ThrottlingState(capacity: 2)
        small.record(tooMany(60), grantType: "refresh_token", for: key(1), now: t0)
        small.record(tooMany(60), grantType: "refresh_token", for: key(2), now: t0)
        small.record(tooMany(60), grantType: "refresh_token", for: key(1), now: t0)  // refreshes key 1
        small.record(tooMany(60), grantType: "refresh_token", for: key(3), now: t0)
        #expect(small.check(key(2), grantType: "refresh_token", now: t0) == nil)
        #expect(small.check(key(1), grantType: "refresh_token", now: t0) != nil)
        #expect(small.check(key(3), grantType: "refresh_token", now: t0) != nil)
    }

    @Test("Throttler reads its clock; perform() does not run a throttled operation")
    func throttler() async throws {
        let clock = ManualWallClock(t0)
        let throttler = Throttler(clock: clock)
        let first = await capture {
            try await throttler.perform(key, grantType: "refresh_token") { () throws(MSALError) -> Int in throw tooMany(30) }
        }
        #expect(first?.retryAfter == 30)
        clock.advance(by: 29)
        let second = await capture {
            try await throttler.perform(key, grantType: "refresh_token") { () throws(MSALError) -> Int in
                Issue.record("a throttled operation ran")
                return 1
            }
        }
        #expect(second?.retryAfter == 1)
        clock.advance(by: 1)
        #expect(await throttler.check(key, grantType: "refresh_token") == nil)
        #expect(try await throttler.perform(key, grantType: "refresh_token") { () throws(MSALError) -> Int in 7 } == 7)

        await throttler.record(invalidGrant, grantType: "refresh_token", for: key)
        #expect(await throttler.check(key, grantType: "refresh_token") == MSALError(.interactionRequired, message: ""))
        await throttler.clear(homeAccountId: "uid-1.utid-1")
        #expect(await throttler.check(key, grantType: "refresh_token") == nil)
    }
}
