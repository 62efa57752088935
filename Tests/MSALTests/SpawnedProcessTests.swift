import Foundation
import MSALTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// MSALTestSupport's `SpawnedProcess`, the posix_spawn child process the suites use instead of
/// Foundation's `Process`.
@Suite("SpawnedProcess: a child process started with posix_spawn")
struct SpawnedProcessTests {
    @Test("The exit code is reported, as Process.terminationStatus and as a shell's $?")
    func exitCode() async throws {
        let child = try SpawnedProcess("/bin/sh", ["-c", "exit 7"])
        let termination = await child.waitForExit()
        #expect(termination == .exited(7))
        #expect(termination.status == 7 && termination.shellStatus == 7)
        #expect(child.termination == .exited(7) && !child.isRunning)
        #expect(try SpawnedProcess("/bin/true").waitUntilExit() == .exited(0))
    }

    @Test("A signal's death is reported as the signal, and no signal is sent after the child ended")
    func signalDeath() async throws {
        let sleeper = try SpawnedProcess("/bin/sleep", ["60"])
        #expect(sleeper.isRunning && sleeper.termination == nil)
        #expect(sleeper.waitUntilExit(timeout: 0.2) == nil)
        #expect(sleeper.terminate())
        let termination = await sleeper.waitForExit()
        #expect(termination == .signaled(SIGTERM))
        #expect(termination.status == SIGTERM && termination.shellStatus == 128 + SIGTERM)
        #expect(!sleeper.kill())

        // The child starts with every signal at its default disposition, unblocked.
        let selfKilled = try SpawnedProcess("/bin/sh", ["-c", "kill -INT $$; sleep 5"])
        #expect(selfKilled.waitUntilExit() == .signaled(SIGINT))
    }

    @Test("killsGroupOnExit: what the child left running in its process group is killed when it ends")
    func groupKilledOnExit() async throws {
        // A background job of the shell (in its process group) that prints after the shell exited.
        let script = "(sleep 0.5; echo late) & echo early"
        let left = try await SpawnedProcess("/bin/sh", ["-c", script], standardOutput: .pipe).readOutputAndWait()
        #expect(left.standardOutputText == "early\nlate\n")

        let killed = try await SpawnedProcess("/bin/sh", ["-c", script], standardOutput: .pipe, killsGroupOnExit: true)
            .readOutputAndWait()
        #expect(killed.termination == .exited(0))
        #expect(killed.standardOutputText == "early\n")
    }

    @Test("Standard output and standard error are captured separately, each well past a pipe's 64 KiB")
    func largeSeparateOutput() async throws {
        // Standard error is written first: reading standard output to its end before standard
        // error would deadlock.
        let script = "head -c 200000 /dev/zero | tr '\\0' e >&2; head -c 300000 /dev/zero | tr '\\0' o; exit 3"
        let child = try SpawnedProcess("/bin/sh", ["-c", script], standardOutput: .pipe, standardError: .pipe)
        let output = try await child.readOutputAndWait()
        #expect(output.termination == .exited(3))
        #expect(output.standardOutput == Data(repeating: UInt8(ascii: "o"), count: 300_000))
        #expect(output.standardError == Data(repeating: UInt8(ascii: "e"), count: 200_000))

        let blocking = try SpawnedProcess("/bin/sh", ["-c", script], standardOutput: .pipe, standardError: .pipe)
            .readOutputAndWaitUntilExit()
        #expect(blocking.standardOutput.count == 300_000 && blocking.standardError.count == 200_000)
    }

    @Test("Standard error can follow standard output (2>&1), into a pipe or a file")
    func mergedAndFileOutput() async throws {
        let merged = try await SpawnedProcess(
            "/bin/sh", ["-c", "echo out; echo err >&2; echo out2"], standardOutput: .pipe, standardError: .standardOutput
        ).readOutputAndWait()
        #expect(merged.standardOutputText == "out\nerr\nout2\n")
        #expect(merged.standardError.isEmpty)

        let directory = try ScratchDirectory()
        let path = directory.file("out.txt")
        let child = try SpawnedProcess(
            "/bin/sh", ["-c", "echo to-file; echo to-null >&2"], standardOutput: .file(path), standardError: .null)
        #expect(await child.waitForExit() == .exited(0))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "to-file\n")
    }

    @Test("The environment is passed whole, or this process's own with additions")
    func environment() async throws {
        let whole = try await SpawnedProcess(
            "/usr/bin/env", environment: ["MSAL_SPAWN_TEST": "one two", "OTHER": "a=b"], standardOutput: .pipe
        ).readOutputAndWait()
        #expect(whole.standardOutputText.split(separator: "\n").sorted() == ["MSAL_SPAWN_TEST=one two", "OTHER=a=b"])

        let inherited = try await SpawnedProcess(
            "/usr/bin/env", environment: SpawnedProcess.inheritedEnvironment(adding: ["MSAL_SPAWN_TEST": "added"]), standardOutput: .pipe
        ).readOutputAndWait()
        let lines = inherited.standardOutputText.split(separator: "\n").map(String.init)
        #expect(lines.contains("MSAL_SPAWN_TEST=added"))
        if let path = ProcessInfo.processInfo.environment["PATH"] { #expect(lines.contains("PATH=\(path)")) }
    }

    @Test("Standard input is a pipe the test writes; a write after the child ended fails with EPIPE, not SIGPIPE")
    func standardInput() async throws {
        let cat = try SpawnedProcess("/bin/cat", standardInput: .pipe, standardOutput: .pipe)
        let input = try #require(cat.standardInput)
        try input.write("line one\n")
        try input.write(Data("line two\n".utf8))
        input.close()
        let output = try await cat.readOutputAndWait()
        #expect(output.termination == .exited(0))
        #expect(output.standardOutputText == "line one\nline two\n")

        let gone = try SpawnedProcess("/bin/true", standardInput: .pipe)
        #expect(await gone.waitForExit() == .exited(0))
        #expect(throws: SpawnedProcess.SystemError(operation: "write", executable: "/bin/true", code: EPIPE)) {
            try gone.standardInput?.write(Data(count: 1 << 20))
        }
    }

    @Test("The child inherits no descriptor beyond 0, 1 and 2")
    func noStrayDescriptors() async throws {
        // A descriptor without close-on-exec, as a library might leave one.
        let stray = open("/dev/null", O_RDONLY)
        try #require(stray >= 0)
        defer { close(stray) }
        // The glob lists the directory through a descriptor of its own, closed by the time `-e` runs.
        let output = try await SpawnedProcess(
            "/bin/sh", ["-c", "for f in /proc/$$/fd/*; do [ -e \"$f\" ] && echo ${f##*/}; done; true"],
            standardInput: .null, standardOutput: .pipe
        ).readOutputAndWait()
        #expect(output.standardOutputText.split(separator: "\n").sorted() == ["0", "1", "2"])
    }

    @Test("A missing executable is reported as an error (ENOENT); so is a stream not valid for its descriptor")
    func missingExecutable() throws {
        let missing = "/nonexistent/msal-no-such-program"
        #expect(throws: SpawnedProcess.SystemError(operation: "posix_spawn", executable: missing, code: ENOENT)) {
            _ = try SpawnedProcess(missing, ["x"], standardInput: .pipe, standardOutput: .pipe, standardError: .pipe)
        }
        #expect(throws: SpawnedProcess.SystemError.self) {
            _ = try SpawnedProcess("/bin/true", standardInput: .standardOutput)
        }
    }
}
