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
}

/// The system's wall clock.
public struct SystemWallClock: WallClock {
    /// Creates the system clock.
    public init() {}
    /// Returns `Date()`.
    public func now() -> Date { Date() }
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
