import Foundation
import MSALCore
import Testing

@Suite("Wall clocks: the system clock's approximate reading, and the default")
struct WallClockTests {
    @Test("SystemWallClock.approximateNow() reads the coarse clock: between two coarse readings around it, behind Date() by a few milliseconds at most")
    func approximateIsTheCoarseClock() {
        func coarse() -> Date {
            var time = timespec()
            clock_gettime(CLOCK_REALTIME_COARSE, &time)
            return Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9)
        }
        let clock = SystemWallClock()
        for _ in 0..<1_000 {
            let before = coarse()
            let approximate = clock.approximateNow()
            let after = coarse()
            let exact = Date()
            // Date() (the exact clock) is nearly always past the last tick: it would fail the second check.
            #expect(before <= approximate && approximate <= after)
            #expect(approximate <= exact && approximate > exact.addingTimeInterval(-0.1))
        }
    }

    @Test("A clock that does not provide approximateNow() answers it with now(): a manual clock moves both")
    func defaultIsNow() {
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_000))
        #expect(clock.approximateNow() == Date(timeIntervalSince1970: 1_000))
        clock.advance(by: 301)
        #expect(clock.approximateNow() == clock.now())
        #expect(clock.approximateNow() == Date(timeIntervalSince1970: 1_301))
    }
}

@Suite("Durations in messages")
struct SecondsPhraseTests {
    @Test("One second is singular; other whole numbers have no decimal point; fractions keep theirs", arguments: [
        (1.0, "1 second"), (2.0, "2 seconds"), (300.0, "300 seconds"), (0.5, "0.5 seconds"), (0.0, "0 seconds"), (1.5, "1.5 seconds"),
    ])
    func phrase(seconds: Double, expected: String) {
        #expect(secondsPhrase(seconds) == expected)
    }
}
