public import Foundation
internal import Synchronization

/// The source of "now" for everything that compares a time: token expiry, ID token `exp`,
/// device-code expiry. Tests inject a ``ManualWallClock`` and move time instead of sleeping.
///
/// Named `WallClock` to stay clear of the standard library's `Clock` (which measures durations,
/// not calendar time).
public protocol WallClock: Sendable {
    /// The current instant. `Date` is an absolute instant; it has no time zone.
    func now() -> Date

    /// The current instant, or one up to a few milliseconds before it (never after it), where that
    /// is cheaper to read: for decisions with seconds to spare, such as whether a cached access
    /// token expires within the 5-minute buffer, taken on every cache hit; a decision near its
    /// boundary must read ``now()`` again. The default is ``now()``.
    func approximateNow() -> Date
}

extension WallClock {
    /// ``now()``.
    public func approximateNow() -> Date { now() }
}

/// The system's wall clock.
public struct SystemWallClock: WallClock {
    /// Creates the system clock.
    public init() {}
    /// Returns `Date()`.
    public func now() -> Date { Date() }

    /// The system's coarse wall clock (`CLOCK_REALTIME_COARSE`, Linux): the time of the last timer
    /// tick (ticks of 1–10 ms, 4 ms on Debian's kernels), a few milliseconds behind `Date()` (up to
    /// 4.8 ms measured on a 2-core VM), read in about 5 ns instead of 28. `Date()` where the coarse
    /// clock cannot be read.
    public func approximateNow() -> Date {
        var time = timespec()
        guard clock_gettime(CLOCK_REALTIME_COARSE, &time) == 0 else { return Date() }
        return Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9)
    }
}

/// A clock that only moves when told to; for tests, demos and benchmarks.
public final class ManualWallClock: WallClock {
    private let current: Mutex<Date>

    /// Creates a clock that reads `start` until moved.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        current = Mutex(start)
    }

    /// Returns the clock's current instant.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward (or backward, with a negative value) by `seconds`.
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// Sets the clock to `date`.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}

/// A number of seconds for a message: `"300"`, `"0.5"` (whole numbers without a decimal point;
/// values too large for `Int` as `Double` prints them).
/// - Returns: the number, without a unit.
package func secondsNumber(_ seconds: Double) -> String {
    seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int(seconds)) : String(seconds)
}

/// A duration for a message: `"1 second"`, `"300 seconds"`, `"0.5 seconds"` (``secondsNumber(_:)``
/// and the unit).
/// - Returns: the number and the unit, singular for exactly 1.
package func secondsPhrase(_ seconds: Double) -> String {
    secondsNumber(seconds) + (seconds == 1 ? " second" : " seconds")
}
