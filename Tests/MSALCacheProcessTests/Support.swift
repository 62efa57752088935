import Foundation
import MSALCache
import MSALTestSupport
import Testing
@testable import msal_cache_worker

/// A fresh directory under the system temp dir, removed when the value goes away.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("msal-process-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// The `msal-cache-worker` binary: beside the test bundle SwiftPM runs (both are products of one
/// build directory), or `MSAL_CACHE_WORKER` when set.
enum WorkerBinary {
    static let path: String = {
        if let path = ProcessInfo.processInfo.environment["MSAL_CACHE_WORKER"] { return path }
        // /proc/self/exe is the .xctest runner (XCTest and Swift Testing alike) in .build/<triple>/<configuration>.
        let runner = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = (runner as NSString).deletingLastPathComponent
        // On Darwin the runner sits inside the bundle (X.xctest/Contents/MacOS); climb out of it.
        while directory.contains(".xctest") { directory = (directory as NSString).deletingLastPathComponent }
        return directory + "/msal-cache-worker"
    }()

    static func require() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: path),
            "msal-cache-worker not found at \(path): build it with `swift build --build-tests` (or set MSAL_CACHE_WORKER)")
    }
}

/// One running worker: stdout and stderr go to files (read at any time, complete after exit),
/// stdin is a pipe for the start line.
final class WorkerProcess: Sendable {
    let arguments: [String]
    private let process: SpawnedProcess
    private let outputPath: String
    private let errorPath: String

    /// Starts `msal-cache-worker <arguments>`; its output files go in `directory`.
    init(_ arguments: [String], directory: String, name: String) throws {
        self.arguments = arguments
        outputPath = directory + "/\(name).out"
        errorPath = directory + "/\(name).err"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        process = try SpawnedProcess(
            WorkerBinary.path, arguments, standardInput: .pipe, standardOutput: .file(outputPath), standardError: .file(errorPath))
    }

    var processIdentifier: Int32 { process.pid }

    /// Its standard output so far, as lines.
    var lines: [String] {
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// Its standard error so far.
    var errorOutput: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// The exit status (128 + signal when killed, as a shell reports it), or `nil` while it runs.
    var exitStatus: Int32? { process.termination?.shellStatus }

    /// Writes one line to its stdin. A worker that has exited reads no more: the write fails (with
    /// EPIPE, never SIGPIPE) and is dropped, and the worker's exit status tells what happened.
    func send(_ line: String) {
        try? process.standardInput?.write(line + "\n")
    }

    /// Sends SIGKILL (nothing once the worker has exited).
    func kill() {
        process.kill()
    }

    /// Waits until a line equal to `line` appears or the worker exits.
    /// - Returns: whether the line appeared.
    func waitForLine(_ line: String, hangGuard: Duration = .seconds(120)) async throws -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + hangGuard
        while clock.now < deadline {
            if lines.contains(line) { return true }
            if exitStatus != nil { return lines.contains(line) }
            try await Task.sleep(for: .milliseconds(2))
        }
        return false
    }

    /// Waits for the worker to exit; kills it when it outlives `hangGuard` (a guard against a hang,
    /// not a speed requirement).
    /// - Returns: the exit status (128 + signal when killed).
    @discardableResult
    func wait(hangGuard: Duration = .seconds(900)) async throws -> Int32 {
        let clock = ContinuousClock()
        let deadline = clock.now + hangGuard
        while true {
            if let status = exitStatus { return status }
            if clock.now >= deadline { kill() }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// One line describing the worker's arguments, status and stderr, for failure messages.
    var summary: String {
        "msal-cache-worker \(arguments.joined(separator: " ")): status \(exitStatus.map(String.init) ?? "running"), stderr: \(errorOutput.trimmingCharacters(in: .whitespacesAndNewlines))"
    }
}

/// An integer from the environment, or `fallback`.
func environmentInteger(_ name: String, default fallback: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap { Int($0) } ?? fallback
}

extension Backend {
    /// Options for a fresh store in `directory` in `count` access groups: where paths keep stores
    /// apart, the default group first and then others; on a shared backend (the keyring), groups
    /// of this run's own, so runs never meet.
    func testOptions(directory: TemporaryDirectory, groups count: Int = 1) -> [StoreOptions] {
        let run = UUID().uuidString.lowercased()
        return (0..<count).map { index in
            let group = isolatesByPath
                ? (index == 0 ? TokenCacheAccessGroup.default : "com.contoso.process-tests-\(index)")
                : "com.contoso.process-tests.\(run).\(index)"
            return options(directory: directory.path, accessGroup: group)
        }
    }

    /// Empties the groups of `options` on a shared backend; nothing to do where the test directory
    /// holds the whole store.
    func cleanUp(_ options: [StoreOptions]) {
        guard !isolatesByPath else { return }
        for options in options { try? removeAllEntries(options) }
    }
}
