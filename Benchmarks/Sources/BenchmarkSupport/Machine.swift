import Foundation
internal import MSALTestSupport

/// The build configuration of this program: `release`, or `debug` for an unoptimized build.
public var buildConfiguration: String {
    #if DEBUG
    return "debug"
    #else
    // Indexed rather than branched: an optimized build folds the check to a constant, and a branch
    // it can never take would be reported as code that will never be executed.
    return ["release", "debug"][_isDebugAssertConfiguration() ? 1 : 0]
    #endif
}

/// Exits with status 2 and a clear message when this is not an optimized build: numbers from a
/// debug build say nothing about swift-msal.
public func refuseDebugBuild() {
    guard buildConfiguration != "release" else { return }
    FileHandle.standardError.write(Data("""
        msal-bench: this is a debug build; benchmarks run only in release mode (optimized).
        Build and run them with Benchmarks/run, or: swift build -c release --package-path Benchmarks

        """.utf8))
    exit(2)
}

/// The header line: what machine and build the numbers come from.
public enum MachineDescription {
    /// Prints `{"type":"header", ...}` with the CPU model, cores, memory, kernel, Swift version,
    /// build configuration, git commit and the date in UTC. The Swift version and the commit come
    /// from `MSAL_BENCH_SWIFT_VERSION` and `MSAL_BENCH_GIT_COMMIT` (set by Benchmarks/run), else
    /// "unknown".
    public static func printHeader(mode: String) {
        let environment = ProcessInfo.processInfo.environment
        var uts = utsname()
        uname(&uts)
        func field<T>(_ value: T) -> String {
            withUnsafeBytes(of: value) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
        }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        Report.line([
            ("type", "header"),
            ("cpu_model", .string(cpuModel())),
            ("cores", .integer(Int64(ProcessInfo.processInfo.activeProcessorCount))),
            ("memory_bytes", .unsigned(ProcessInfo.processInfo.physicalMemory)),
            ("kernel", .string("\(field(uts.sysname)) \(field(uts.release)) \(field(uts.machine))")),
            ("swift_version", .string(environment["MSAL_BENCH_SWIFT_VERSION"] ?? "unknown")),
            ("build_configuration", .string(buildConfiguration)),
            ("git_commit", .string(environment["MSAL_BENCH_GIT_COMMIT"] ?? "unknown")),
            ("date_utc", .string(formatter.string(from: Date()))),
            ("mode", .string(mode)),
        ])
    }

    /// `model name` of /proc/cpuinfo, or "unknown".
    static func cpuModel() -> String {
        guard let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown" }
        for line in info.split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return "unknown"
    }
}

/// How fast the machine is right now, measured the same way in every run, so runs taken in a
/// machine's slow and fast phases can be told apart (a shared host's speed moves by a third and
/// more from one minute to the next; see Docs/Performance.md).
public enum MachineProbe {
    /// Prints `{"type":"probe","at":…,"memory_latency_ns":…,"hash_ns":…,"chase_2mib_ns":…,"chase_4mib_ns":…,"chase_8mib_ns":…,"date_utc":…}`:
    /// - `memory_latency_ns`: nanoseconds per load along a random cycle through 128 MiB (each load
    ///   needs the one before it, so this is the latency of a read from memory, TLB misses
    ///   included): what a cache hit at 100k tokens waits for on every object it touches first.
    /// - `hash_ns`: nanoseconds to hash a 48-byte string and a counter with the standard library's `Hasher`
    ///   (SipHash-1-3), all in the CPU caches: the speed of the core itself.
    /// - `chase_2mib_ns`, `chase_4mib_ns`, `chase_8mib_ns`: nanoseconds per load along a random
    ///   cycle through every 64-byte line of 2, 4 and 8 MiB, one load per line (``chaseLatency(mebibytes:)``):
    ///   how much of the CPU's last-level cache this process gets right now. A shared host's
    ///   neighbours use the same cache, so a hit at 10k tokens (whose objects take a few MiB) waits
    ///   for the cache at some times and for memory at others.
    /// All are medians of 5 rounds. `at` is the caller's label (`start`, `end`).
    public static func printProbe(at label: String) {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        let chases: [(key: String, value: ReportValue)] = [2, 4, 8].map {
            (key: "chase_\($0)mib_ns", value: .double((chaseLatency(mebibytes: $0) * 10).rounded() / 10))
        }
        let fields: [(key: String, value: ReportValue)] = [
            (key: "type", value: "probe"),
            (key: "at", value: .string(label)),
            (key: "memory_latency_ns", value: .double((memoryLatency() * 10).rounded() / 10)),
            (key: "hash_ns", value: .double((hashTime() * 10).rounded() / 10)),
        ]
        Report.line(fields + chases + [(key: "date_utc", value: .string(formatter.string(from: Date())))])
    }

    /// Median nanoseconds per dependent load along a random cycle (``randomCycle(_:seed:)``)
    /// through the 64-byte lines of `mebibytes` MiB, one load per line, after one pass around the
    /// cycle to bring the lines in.
    static func chaseLatency(mebibytes: Int) -> Double {
        let lineInts = 64 / MemoryLayout<Int>.stride
        let lines = (mebibytes << 20) / 64
        var raw: UnsafeMutableRawPointer?
        guard posix_memalign(&raw, 64, lines * 64) == 0, let raw else {
            FileHandle.standardError.write(Data("msal-bench probe: could not allocate \(mebibytes) MiB for the cache probe\n".utf8))
            exit(1)
        }
        defer { free(raw) }
        let memory = UnsafeMutableBufferPointer(start: raw.bindMemory(to: Int.self, capacity: lines * lineInts), count: lines * lineInts)
        var next = [Int](repeating: 0, count: lines)
        next.withUnsafeMutableBufferPointer { randomCycle($0, seed: 0x6361_6368) }
        // Each line holds, in its first word, the offset of the line after it in the cycle.
        for line in 0..<lines { memory[line * lineInts] = next[line] * lineInts }
        var position = 0
        for _ in 0..<lines { position = memory[position] }
        let loads = 400_000
        let median = medianOfFiveRounds(operations: loads) {
            for _ in 0..<loads { position = memory[position] }
        }
        // Keeps the chase from being optimized away.
        if position == -1 { print("") }
        return median
    }

    /// Median nanoseconds per dependent load along a random cycle (``randomCycle(_:seed:)``)
    /// through 32M 32-bit indices.
    static func memoryLatency() -> Double {
        let count = 32 << 20
        guard let memory = malloc(count * MemoryLayout<UInt32>.stride) else {
            FileHandle.standardError.write(Data("msal-bench probe: could not allocate 128 MiB for the memory latency probe\n".utf8))
            exit(1)
        }
        defer { free(memory) }
        let next = UnsafeMutableBufferPointer(start: memory.bindMemory(to: UInt32.self, capacity: count), count: count)
        randomCycle(next, seed: 0x6D73_616C)
        var position: UInt32 = 0
        let loads = 2_000_000
        let median = medianOfFiveRounds(operations: loads) {
            for _ in 0..<loads { position = next[Int(position)] }
        }
        // Keeps the chase from being optimized away.
        if position == UInt32.max { print("") }
        return median
    }

    /// Fills `next` so that following `next[i]` from any index visits every index once before it
    /// returns: a random cyclic permutation (Sattolo's algorithm, SplitMix64 with `seed`).
    static func randomCycle<Index: FixedWidthInteger>(_ next: UnsafeMutableBufferPointer<Index>, seed: UInt64) {
        for index in next.indices { next[index] = Index(index) }
        var random = SplitMix64(seed: seed)
        for index in stride(from: next.count - 1, to: 0, by: -1) {
            next.swapAt(index, Int(random.next() % UInt64(index)))
        }
    }

    /// The median over 5 runs of `round` of the nanoseconds per operation, `round` doing `operations` of them.
    static func medianOfFiveRounds(operations: Int, _ round: () -> Void) -> Double {
        var rounds: [Double] = []
        for _ in 0..<5 {
            let start = monotonicNanoseconds()
            round()
            rounds.append(Double(monotonicNanoseconds() - start) / Double(operations))
        }
        return rounds.sorted()[rounds.count / 2]
    }

    /// Median nanoseconds per `Hasher` hash of a 48-byte string and the loop's counter.
    static func hashTime() -> Double {
        let text = String(repeating: "login.microsoftonline.com-", count: 2).prefix(48)
        let key = String(text)
        var sink = 0
        let hashes = 200_000
        let median = medianOfFiveRounds(operations: hashes) {
            for round in 0..<hashes {
                var hasher = Hasher()
                hasher.combine(key)
                hasher.combine(round)
                sink &+= hasher.finalize()
            }
        }
        if sink == 42 { print("") }
        return median
    }
}
