import Foundation

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
