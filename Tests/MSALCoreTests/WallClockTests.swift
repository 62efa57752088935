import Foundation
import MSALCore
import Testing

@Suite("Wall clocks: the system clock's approximate reading, and the default")
struct WallClockTests {
    @Test("SystemWallClock.approximateNow() is never after Date() and at most a few timer ticks before it")
    func approximateIsCloseBehind() {
        let clock = SystemWallClock()
        for _ in 0..<1_000 {
            let before = Date()
            let approximate = clock.approximateNow()
            let after = Date()
            // The coarse clock is the time of the last tick: not later than now, and (10 ms ticks
            // at most, plus scheduling) well within 0.1 s before the call.
            #expect(approximate <= after)
            #expect(approximate > before.addingTimeInterval(-0.1))
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
