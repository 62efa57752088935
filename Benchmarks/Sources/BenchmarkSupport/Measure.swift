import Foundation

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`, served by the vDSO: about 20 ns a read).
@inline(__always)
public func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// The process's peak resident set size in bytes: `VmHWM` of `/proc/self/status` (Linux), or 0 when
/// it cannot be read.
public func peakRSSBytes() -> UInt64 { statusBytes("VmHWM:") }

/// The process's current resident set size in bytes: `VmRSS` of `/proc/self/status`.
public func currentRSSBytes() -> UInt64 { statusBytes("VmRSS:") }

/// Gives the memory the harness itself freed back to the system (glibc's `malloc_trim`) and starts
/// the peak over from the current resident set (`5` written to `/proc/self/clear_refs` resets
/// `VmHWM`, Linux 4.0 and later), so that later peaks are what the library holds, not a copy the
/// harness made and dropped before measuring. Does nothing where either is unavailable.
public func resetPeakRSS() {
    _ = glibcMallocTrim(0)
    guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return }
    try? handle.write(contentsOf: Data("5".utf8))
    try? handle.close()
}

/// glibc's `malloc_trim(size_t pad)` (declared in `<malloc.h>`, which Swift's Glibc module does not import).
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32

func statusBytes(_ field: String) -> UInt64 {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix(field) {
        let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { UInt64($0) }
        return (kilobytes ?? 0) * 1024
    }
    return 0
}

/// The latencies of one case, in nanoseconds, one per iteration.
public struct Samples: Sendable {
    public private(set) var values: [UInt64]

    public init(capacity: Int) {
        values = []
        values.reserveCapacity(capacity)
    }

    public mutating func append(_ nanoseconds: UInt64) { values.append(nanoseconds) }

    /// The median (the mean of the two middle values for an even count); 0 when empty.
    public var median: UInt64 {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// The 99th percentile by nearest rank (the largest value when there are fewer than 100).
    public var p99: UInt64 {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((Double(sorted.count) * 0.99).rounded(.up))
        return sorted[max(0, min(sorted.count, rank) - 1)]
    }

    /// The largest value; 0 when empty.
    public var maximum: UInt64 { values.max() ?? 0 }

    /// One caller's operations per second: iterations divided by the time they took together.
    public var opsPerSecond: Double {
        let total = values.reduce(0, +)
        return total == 0 ? 0 : Double(values.count) * 1e9 / Double(total)
    }
}

/// How many iterations a case runs: warm-up (not measured) and measured.
public struct Iterations: Sendable {
    public var warmup: Int
    public var measured: Int

    public init(warmup: Int, measured: Int) {
        self.warmup = warmup
        self.measured = measured
    }

    /// One measured iteration and no warm-up: `--smoke`.
    public static let once = Iterations(warmup: 0, measured: 1)

    /// `self`, or ``once`` in smoke mode.
    public func smoke(_ smoke: Bool) -> Iterations { smoke ? .once : self }
}

/// Runs `body` `iterations.warmup` times, then `iterations.measured` times timing each call alone.
/// `body` gets the iteration number (warm-up iterations count from 0 too, so the same inputs warm
/// the caches the measured ones use).
public func measure(_ iterations: Iterations, _ body: (Int) throws -> Void) rethrows -> Samples {
    for index in 0..<iterations.warmup { try body(index) }
    var samples = Samples(capacity: iterations.measured)
    for index in 0..<iterations.measured {
        let start = monotonicNanoseconds()
        try body(index)
        samples.append(monotonicNanoseconds() - start)
    }
    return samples
}

/// ``measure(_:_:)`` for async bodies (the facade's `acquireTokenSilent`).
public func measureAsync(_ iterations: Iterations, _ body: (Int) async throws -> Void) async rethrows -> Samples {
    for index in 0..<iterations.warmup { try await body(index) }
    var samples = Samples(capacity: iterations.measured)
    for index in 0..<iterations.measured {
        let start = monotonicNanoseconds()
        try await body(index)
        samples.append(monotonicNanoseconds() - start)
    }
    return samples
}

/// A failure of the benchmark itself (a wrong answer, a setup that did not work): the program
/// prints it and exits 1, so a benchmark that measures the wrong thing cannot pass.
public struct BenchmarkFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Throws unless `condition` holds.
public func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) throws {
    if !condition() { throw BenchmarkFailure(message()) }
}

/// ``measure(_:_:)`` with the iteration count chosen from the cost of one call: one warm-up call
/// (plus `warmup - 1` more), then as many measured calls as fit in `budget` nanoseconds, between
/// `minimum` and `maximum` (stopping early past twice the budget). For cases from microseconds to seconds a call (cold starts, refreshes
/// that rewrite a whole file). In smoke mode: one call, no warm-up. Runs on the caller's actor
/// (`isolation`, the caller's by default; none for a nonisolated caller), so calls made from the
/// main actor are timed there, as a main-actor caller waits for them.
public func measureAdaptive(
    isolation: isolated (any Actor)? = #isolation,
    budget: UInt64, minimum: Int, maximum: Int, warmup: Int = 1, smoke: Bool, _ body: (Int) async throws -> Void,
    between: () -> Void = {}
) async throws -> Samples {
    func timed(_ index: Int) async throws -> UInt64 {
        let start = monotonicNanoseconds()
        try await body(index)
        let elapsed = monotonicNanoseconds() - start
        between()
        return elapsed
    }
    if smoke {
        var samples = Samples(capacity: 1)
        samples.append(try await timed(0))
        return samples
    }
    var spent: UInt64 = 0
    for index in 0..<max(1, warmup) { spent += try await timed(index) }
    let perCall = max(1, spent / UInt64(max(1, warmup)))
    let count = min(maximum, max(minimum, Int(budget / perCall)))
    var samples = Samples(capacity: count)
    var measured: UInt64 = 0
    for index in 0..<count {
        let elapsed = try await timed(warmup + index)
        samples.append(elapsed)
        measured += elapsed
        // Calls that turn out slower than the warm-up said (a keyring daemon that slows down as it
        // grows) stop at twice the budget, once the minimum is reached.
        if index + 1 >= minimum && measured > 2 * budget { break }
    }
    return samples
}
