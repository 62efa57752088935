import Foundation
import MSALCore
import MSALWebAuth
import Testing

@Suite("DeviceCodePolling state machine (RFC 8628 §3.5), no I/O")
struct DeviceCodePollingTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    @Test("start: the first poll waits one interval")
    func start() {
        var machine = DeviceCodePolling(interval: 5, expiresAt: t0.addingTimeInterval(900))
        #expect(machine.start(now: t0) == .poll(after: 5))
        #expect(machine.failure == nil)
    }

    @Test("authorization_pending polls again after the same interval")
    func pending() {
        var machine = DeviceCodePolling(interval: 3, expiresAt: t0.addingTimeInterval(900))
        _ = machine.start(now: t0)
        for step in 1...10 {
            guard case .poll(let after) = machine.received(oauthError: "authorization_pending", now: t0.addingTimeInterval(Double(step) * 3)) else {
                Issue.record("expected a poll at step \(step)")
                return
            }
            #expect(after == 3)
        }
        #expect(machine.interval == 3)
    }

    @Test("slow_down adds 5 s, cumulatively, and the increase sticks for pending")
    func slowDown() {
        var machine = DeviceCodePolling(interval: 5, expiresAt: t0.addingTimeInterval(900))
        #expect(machine.start(now: t0) == .poll(after: 5))
        #expect(machine.received(oauthError: "slow_down", now: t0.addingTimeInterval(5)) == .poll(after: 10))
        #expect(machine.received(oauthError: "slow_down", now: t0.addingTimeInterval(15)) == .poll(after: 15))
        #expect(machine.received(oauthError: "authorization_pending", now: t0.addingTimeInterval(30)) == .poll(after: 15))
        #expect(machine.received(oauthError: "slow_down", now: t0.addingTimeInterval(45)) == .poll(after: 20))
        #expect(machine.interval == 20)
        if case .poll(let after) = machine.received(oauthError: "authorization_pending", now: t0.addingTimeInterval(65)) {
            #expect(after == 20)
        } else {
            Issue.record("expected a poll")
        }
    }

    @Test("expired_token fails with deviceCodeExpired carrying the OAuth error")
    func expired() throws {
        var machine = DeviceCodePolling(interval: 5, expiresAt: t0.addingTimeInterval(900))
        _ = machine.start(now: t0)
        let action = machine.received(oauthError: "expired_token", now: t0.addingTimeInterval(5))
        guard case .fail(let error) = action else { Issue.record("expected a failure"); return }
        #expect(error == .internal(.deviceCodeExpired, ""))
        #expect(error.oauthError == "expired_token")
        #expect(machine.failure == error)
    }

    @Test("access_denied and authorization_declined fail with userCanceled", arguments: ["access_denied", "authorization_declined"])
    func denied(oauthError: String) {
        var machine = DeviceCodePolling(interval: 5, expiresAt: t0.addingTimeInterval(900))
        _ = machine.start(now: t0)
        guard case .fail(let error) = machine.received(oauthError: oauthError, now: t0.addingTimeInterval(5)) else {
            Issue.record("expected a failure"); return
        }
        #expect(error.code == .userCanceled)
        #expect(error.oauthError == oauthError)
    }

    @Test("any other error fails with serverError", arguments: ["bad_verification_code", "invalid_grant", "invalid_client", ""])
    func otherErrors(oauthError: String) {
        var machine = DeviceCodePolling(interval: 5, expiresAt: t0.addingTimeInterval(900))
        _ = machine.start(now: t0)
        guard case .fail(let error) = machine.received(oauthError: oauthError, now: t0.addingTimeInterval(5)) else {
            Issue.record("expected a failure"); return
        }
        #expect(error.code == .serverError)
        #expect(error.internalCode == nil)
        #expect(error.oauthError == oauthError)
    }

    @Test("a poll that would come after expiresAt fails without polling")
    func expiryBeforeNextPoll() {
        var machine = DeviceCodePolling(interval: 5, expiresAt: t0.addingTimeInterval(12))
        #expect(machine.start(now: t0) == .poll(after: 5))
        #expect(machine.received(oauthError: "authorization_pending", now: t0.addingTimeInterval(5)) == .poll(after: 5))
        // Next poll would be at t0+15 > t0+12.
        guard case .fail(let error) = machine.received(oauthError: "authorization_pending", now: t0.addingTimeInterval(10)) else {
            Issue.record("expected a failure"); return
        }
        #expect(error == .internal(.deviceCodeExpired, ""))
        #expect(error.oauthError == nil)
    }

    @Test("a poll exactly at expiresAt still happens; a slow_down can push past it")
    func expiryBoundary() {
        var exact = DeviceCodePolling(interval: 5, expiresAt: t0.addingTimeInterval(5))
        #expect(exact.start(now: t0) == .poll(after: 5))

        var slowed = DeviceCodePolling(interval: 5, expiresAt: t0.addingTimeInterval(14))
        #expect(slowed.start(now: t0) == .poll(after: 5))
        // slow_down at t0+5 makes the next poll t0+15 > t0+14.
        #expect(slowed.received(oauthError: "slow_down", now: t0.addingTimeInterval(5)) == .fail(.internal(.deviceCodeExpired, "")))
    }

    @Test("start after expiry fails at once")
    func alreadyExpired() {
        var machine = DeviceCodePolling(interval: 5, expiresAt: t0)
        #expect(machine.start(now: t0.addingTimeInterval(1)) == .fail(.internal(.deviceCodeExpired, "")))
    }

    @Test("interval 0 polls immediately until expiry; slow_down from 0 gives 5")
    func zeroInterval() {
        var machine = DeviceCodePolling(interval: 0, expiresAt: t0.addingTimeInterval(7))
        #expect(machine.start(now: t0) == .poll(after: 0))
        #expect(machine.received(oauthError: "authorization_pending", now: t0.addingTimeInterval(1)) == .poll(after: 0))
        #expect(machine.received(oauthError: "slow_down", now: t0.addingTimeInterval(1)) == .poll(after: 5))
        #expect(machine.received(oauthError: "authorization_pending", now: t0.addingTimeInterval(6)) == .fail(.internal(.deviceCodeExpired, "")))
    }

    @Test("negative and non-finite intervals count as 0")
    func badIntervals() {
        for interval in [-3, .nan, .infinity] as [TimeInterval] {
            var machine = DeviceCodePolling(interval: interval, expiresAt: t0.addingTimeInterval(60))
            #expect(machine.interval == 0)
            #expect(machine.start(now: t0) == .poll(after: 0))
        }
    }

    @Test("after a failure every transition repeats it")
    func terminal() {
        var machine = DeviceCodePolling(interval: 5, expiresAt: t0.addingTimeInterval(900))
        _ = machine.start(now: t0)
        #expect(machine.received(oauthError: "access_denied", now: t0) == .fail(MSALError(.userCanceled, message: "")))
        #expect(machine.received(oauthError: "authorization_pending", now: t0) == .fail(MSALError(.userCanceled, message: "")))
        #expect(machine.start(now: t0) == .fail(MSALError(.userCanceled, message: "")))
        #expect(machine.received(oauthError: "authorization_pending", now: t0)
            != .poll(after: 5))
    }

    @Test("Action equality distinguishes polls by delay and failures by code")
    func actionEquality() {
        #expect(DeviceCodePolling.Action.poll(after: 5) != .poll(after: 10))
        #expect(DeviceCodePolling.Action.fail(MSALError(.userCanceled, message: "a")) != .fail(.internal(.deviceCodeExpired, "a")))
    }
}
