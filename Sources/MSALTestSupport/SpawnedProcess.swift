public import Foundation
internal import Dispatch
internal import Synchronization
#if canImport(Glibc)
internal import Glibc
#endif

/// A child process started with `posix_spawn`, for tests that run programs (the `msal` tool,
/// `sqlite3`, Python, the cache workers).
///
/// It does not use Foundation's `Process`: on Linux, swift-corelibs-foundation's `Process.run()`
/// scans `/proc/self/fd` by copying the whole 256-byte `d_name` of each directory entry, which can
/// read past the end of glibc's directory buffer and crash the test process
/// (swiftlang/swift-corelibs-foundation#5472; fixed upstream, in no release of our toolchain).
///
/// What the child gets, as Foundation's `Process` gives it unless noted:
/// - `executable` is run by path (no `PATH` search), with `argv[0]` set to that path.
/// - The environment is the given one, or this process's own when `nil`.
/// - Standard input, output and error are inherited unless redirected (see ``Redirection``).
/// - No other descriptor of this process: pipes are made close-on-exec, and the child closes every
///   descriptor from 3 up before it runs the program.
/// - Its own process group (its ID is ``pid``), as `Process` does.
/// - Unlike `Process`: an empty signal mask and every signal at its default disposition. (`Process`
///   passes on the spawning thread's mask, in which Dispatch threads block signals such as SIGTERM.)
///
/// A background thread waits for the child from the start and keeps its ``Termination``, so
/// ``termination`` can be read at any time, ``waitForExit()`` suspends without blocking a thread of
/// the cooperative pool, and a signal is never sent to a process ID after the child was reaped.
/// There is no working directory option (no caller needs one; glibc's
/// `posix_spawn_file_actions_addchdir_np` is not exported by Swift's Glibc module).
public final class SpawnedProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Redirection: Sendable, Equatable {
        /// This process's own descriptor (0, 1 or 2), as `Process` does by default.
        case inherit
        /// `/dev/null`.
        case null
        /// A new pipe: its other end is ``SpawnedProcess/standardInput``,
        /// ``SpawnedProcess/standardOutput`` or ``SpawnedProcess/standardError``.
        case pipe
        /// A file, opened by the child: for reading as standard input; for writing as standard
        /// output or error, created (mode 0644) when missing and truncated.
        case file(String)
        /// Standard error only: wherever standard output goes (`2>&1`).
        case standardOutput
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        /// It exited with this code (0–255).
        case exited(Int32)
        /// A signal ended it (the signal's number).
        case signaled(Int32)

        /// Decodes a `waitpid` status.
        init(waitStatus status: Int32) {
            if status & 0x7f == 0 {
                self = .exited((status >> 8) & 0xff)
            } else {
                self = .signaled(status & 0x7f)
            }
        }

        /// The exit code, or the signal's number: what Foundation's `Process.terminationStatus` reports.
        public var status: Int32 {
            switch self {
            case .exited(let code): code
            case .signaled(let signal): signal
            }
        }

        /// The exit code, or 128 + the signal's number: what a shell reports in `$?`.
        public var shellStatus: Int32 {
            switch self {
            case .exited(let code): code
            case .signaled(let signal): 128 + signal
            }
        }

        /// `exit 3`, or `signal 15` for a signal.
        public var description: String {
            switch self {
            case .exited(let code): "exit \(code)"
            case .signaled(let signal): "signal \(signal)"
            }
        }
    }

    /// A system call that failed while starting the child or using its pipes.
    public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The call or step, e.g. `posix_spawn`, `pipe`, `read`, `write`.
        public let operation: String
        /// The executable the child was to run.
        public let executable: String
        /// The `errno` value (`ENOENT` for a missing executable, `EACCES` for one that may not be run).
        public let code: Int32

        /// Describes the failure.
        public init(operation: String, executable: String, code: Int32) {
            self.operation = operation
            self.executable = executable
            self.code = code
        }

        /// `posix_spawn /path/to/program: No such file or directory (errno 2)`.
        public var description: String {
            "\(operation) \(executable): \(String(cString: strerror(code))) (errno \(code))"
        }
    }

    /// What a child printed and how it ended (see ``readOutputAndWait()``).
    public struct Output: Sendable {
        /// How it ended.
        public var termination: Termination
        /// Its standard output (empty unless it was a pipe).
        public var standardOutput: Data
        /// Its standard error (empty unless it was a separate pipe).
        public var standardError: Data

        /// ``standardOutput`` decoded as UTF-8 (invalid bytes replaced).
        public var standardOutputText: String { String(decoding: standardOutput, as: UTF8.self) }
        /// ``standardError`` decoded as UTF-8 (invalid bytes replaced).
        public var standardErrorText: String { String(decoding: standardError, as: UTF8.self) }
    }

    /// The child's process ID (a `pid_t`), also the ID of its process group.
    public let pid: Int32
    /// The executable's path.
    public let executable: String
    /// The arguments after `argv[0]`.
    public let arguments: [String]
    /// The writing end of the child's standard input when it is ``Redirection/pipe``, else `nil`.
    public let standardInput: InputPipe?
    /// The reading end of the child's standard output when it is ``Redirection/pipe``, else `nil`.
    public let standardOutput: OutputPipe?
    /// The reading end of the child's standard error when it is ``Redirection/pipe``, else `nil`.
    public let standardError: OutputPipe?
    private let reaper: Reaper

    /// Starts `executable` with `arguments`.
    /// - Parameters:
    ///   - executable: the program's path (not looked up on `PATH`); also the child's `argv[0]`.
    ///   - arguments: the arguments after `argv[0]`.
    ///   - environment: the child's whole environment; `nil` (the default) passes this process's
    ///     own (see ``inheritedEnvironment(adding:)``).
    ///   - standardInput: `.inherit` (default), `.null`, `.pipe` or `.file`.
    ///   - standardOutput: `.inherit` (default), `.null`, `.pipe` or `.file`.
    ///   - standardError: `.inherit` (default), `.null`, `.pipe`, `.file` or `.standardOutput`.
    ///   - killsGroupOnExit: `true` sends SIGKILL to what is left of the child's process group (the
    ///     processes it started that stayed in the group: daemons, a shell's background jobs) as soon
    ///     as the child ends, before it is reaped, while no other group can have its ID. Default `false`.
    /// - Throws: ``SystemError`` when a pipe cannot be made (`pipe`), a stream is not valid for its
    ///   descriptor (`EINVAL`, e.g. `.standardOutput` for standard input), or the child cannot be
    ///   started (`posix_spawn`: `ENOENT` when the executable or a `.file` is missing, `EACCES` when
    ///   it may not be run or opened, `ENOEXEC`, …). Nothing is left running or open then.
    public init(
        _ executable: String,
        _ arguments: [String] = [],
        environment: [String: String]? = nil,
        standardInput: Redirection = .inherit,
        standardOutput: Redirection = .inherit,
        standardError: Redirection = .inherit,
        killsGroupOnExit: Bool = false
    ) throws {
        func failure(_ operation: String, _ code: Int32) -> SystemError {
            SystemError(operation: operation, executable: executable, code: code)
        }
        guard standardInput != .standardOutput, standardOutput != .standardOutput else {
            throw failure("redirect", EINVAL)
        }

        // The parent's pipe ends, and the child's ends (closed here once the child has them).
        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        defer { for descriptor in childEnds { close(descriptor) } }
        func makePipe() throws -> (read: Int32, write: Int32) {
            do {
                return try Spawning.makePipe()
            } catch {
                for descriptor in parentEnds { close(descriptor) }
                throw failure("pipe", error.value)
            }
        }
        var inputEnd: Int32?
        var outputEnd: Int32?
        var errorEnd: Int32?
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }

        switch standardInput {
        case .pipe:
            let ends = try makePipe()
            parentEnds.append(ends.write)
            childEnds.append(ends.read)
            inputEnd = ends.write
            posix_spawn_file_actions_adddup2(&actions, ends.read, 0)
        case .null:
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .file(let path):
            posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
        case .inherit, .standardOutput:
            break
        }
        for (descriptor, stream) in [(Int32(1), standardOutput), (Int32(2), standardError)] {
            switch stream {
            case .pipe:
                let ends = try makePipe()
                parentEnds.append(ends.read)
                childEnds.append(ends.write)
                if descriptor == 1 { outputEnd = ends.read } else { errorEnd = ends.read }
                posix_spawn_file_actions_adddup2(&actions, ends.write, descriptor)
            case .null:
                posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, descriptor, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .standardOutput:
                posix_spawn_file_actions_adddup2(&actions, 1, 2)
            case .inherit:
                break
            }
        }
        // The parent's ends are close-on-exec already; closed explicitly too, then every other
        // descriptor from 3 up (this process's sockets, files and other children's pipes).
        for descriptor in parentEnds { posix_spawn_file_actions_addclose(&actions, descriptor) }
        Spawning.closeOtherDescriptors(&actions, keeping: childEnds)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid = pid_t()
        // glibc reports a failed exec or file action as posix_spawn's result (no child is left).
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            for descriptor in parentEnds { close(descriptor) }
            throw failure("posix_spawn", result)
        }

        self.pid = pid
        self.executable = executable
        self.arguments = arguments
        self.standardInput = inputEnd.map { InputPipe(descriptor: $0, executable: executable) }
        self.standardOutput = outputEnd.map { OutputPipe(descriptor: $0, executable: executable) }
        self.standardError = errorEnd.map { OutputPipe(descriptor: $0, executable: executable) }
        self.reaper = Reaper(pid: pid, killsGroupOnExit: killsGroupOnExit)
    }

    /// This process's environment with `additions` added (an addition replaces a variable of the
    /// same name).
    /// - Returns: the environment to pass as `environment:`.
    public static func inheritedEnvironment(adding additions: [String: String] = [:]) -> [String: String] {
        ProcessInfo.processInfo.environment.merging(additions) { $1 }
    }

    // MARK: - Exit

    /// How the child ended, or `nil` while it runs (or has ended but is not reaped yet).
    public var termination: Termination? { reaper.termination }

    /// Whether the child has not been seen to end yet.
    public var isRunning: Bool { reaper.termination == nil }

    /// Blocks the calling thread until the child ends. Not for the main thread, nor for a thread of
    /// the cooperative pool when the child's end depends on other tasks (use ``waitForExit()``).
    /// - Returns: how it ended.
    @discardableResult
    public func waitUntilExit() -> Termination {
        reaper.exited.wait()
        return reaper.termination ?? .exited(-1)
    }

    /// Blocks the calling thread until the child ends or `timeout` seconds pass.
    /// - Returns: how it ended, or `nil` when it still runs at the deadline (it is left running).
    public func waitUntilExit(timeout: TimeInterval) -> Termination? {
        guard reaper.exited.wait(timeout: .now() + timeout) == .success else { return nil }
        return reaper.termination
    }

    /// Suspends until the child ends; no thread is blocked (a Dispatch notification resumes the caller).
    /// Task cancellation does not end the wait (signal the child to end it).
    /// - Returns: how it ended.
    public func waitForExit() async -> Termination {
        let reaper = reaper
        return await withCheckedContinuation { continuation in
            reaper.exited.notify(queue: .global()) {
                continuation.resume(returning: reaper.termination ?? .exited(-1))
            }
        }
    }

    // MARK: - Signals

    /// Sends `signal` to the child, or to its whole process group, unless it was already reaped
    /// (then its process ID may belong to another process).
    /// - Returns: whether the signal was sent (`false` after the child ended, or when `kill` failed).
    @discardableResult
    public func send(_ signal: Int32, toGroup: Bool = false) -> Bool {
        reaper.ifRunning { Glibc.kill(toGroup ? -pid : pid, signal) == 0 } ?? false
    }

    /// Sends SIGTERM, as `Process.terminate()` does.
    /// - Returns: whether the signal was sent (see ``send(_:toGroup:)``).
    @discardableResult
    public func terminate() -> Bool { send(SIGTERM) }

    /// Sends SIGINT, as `Process.interrupt()` does.
    /// - Returns: whether the signal was sent (see ``send(_:toGroup:)``).
    @discardableResult
    public func interrupt() -> Bool { send(SIGINT) }

    /// Sends SIGKILL.
    /// - Returns: whether the signal was sent (see ``send(_:toGroup:)``).
    @discardableResult
    public func kill() -> Bool { send(SIGKILL) }

    // MARK: - Output

    /// Reads standard output and standard error (those that are pipes) to their ends, each on a
    /// thread of its own so that neither fills while the other is read, then waits for the child;
    /// suspends without blocking a thread of the cooperative pool. The pipes are closed afterwards.
    /// - Returns: the output and how the child ended.
    /// - Throws: ``SystemError`` when reading a pipe fails (`read`); the child is still waited for.
    public func readOutputAndWait() async throws -> Output {
        let reading = Spawning.readToEnd(standardOutput, standardError)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            reading.done.notify(queue: .global()) { continuation.resume() }
        }
        let termination = await waitForExit()
        return try reading.output(termination: termination)
    }

    /// ``readOutputAndWait()`` blocking the calling thread instead (see ``waitUntilExit()``).
    /// - Returns: the output and how the child ended.
    /// - Throws: ``SystemError`` when reading a pipe fails (`read`); the child is still waited for.
    public func readOutputAndWaitUntilExit() throws -> Output {
        let reading = Spawning.readToEnd(standardOutput, standardError)
        reading.done.wait()
        let termination = waitUntilExit()
        return try reading.output(termination: termination)
    }

    /// Waits for the child on a thread of its own from the start, and keeps how it ended.
    private final class Reaper: Sendable {
        let pid: pid_t
        /// Entered until the child is reaped.
        let exited = DispatchGroup()
        private let state = Mutex<Termination?>(nil)

        init(pid: pid_t, killsGroupOnExit: Bool) {
            self.pid = pid
            exited.enter()
            let thread = Thread { [self] in
                // Wait without reaping, then reap under the lock: a signal is sent under the same
                // lock only while the child is unreaped, so its process ID cannot have been reused.
                var info = siginfo_t()
                var waited: Int32
                repeat { waited = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) } while waited < 0 && errno == EINTR
                state.withLock { termination in
                    // Unreaped, the child still holds its process group's ID.
                    if killsGroupOnExit && waited == 0 { _ = Glibc.kill(-pid, SIGKILL) }
                    var status: Int32 = 0
                    var reaped: pid_t
                    repeat { reaped = waitpid(pid, &status, 0) } while reaped < 0 && errno == EINTR
                    // -1: another part of this process reaped it first; its status is lost.
                    termination = reaped == pid ? Termination(waitStatus: status) : .exited(-1)
                }
                exited.leave()
            }
            thread.name = "SpawnedProcess \(pid)"
            thread.start()
        }

        var termination: Termination? { state.withLock { $0 } }

        /// Runs `body` under the lock if the child is not reaped yet.
        func ifRunning<T>(_ body: () -> T) -> T? {
            state.withLock { termination in termination == nil ? body() : nil }
        }
    }
}

extension SpawnedProcess {
    /// One end of a pipe: its descriptor, closed once (by ``close()`` or when the value goes away).
    final class PipeEnd: Sendable {
        let descriptor: Int32
        private let closed = Mutex(false)

        init(_ descriptor: Int32) { self.descriptor = descriptor }

        /// Whether ``close()`` was called.
        var isClosed: Bool { closed.withLock { $0 } }

        /// Closes the descriptor the first time; later calls do nothing.
        func close() {
            let wasOpen = closed.withLock { closed in
                defer { closed = true }
                return !closed
            }
            if wasOpen { _ = Glibc.close(descriptor) }
        }

        deinit { close() }
    }

    /// The writing end of a child's standard input pipe. Closed by ``close()`` or when the value goes
    /// away (the child then reads end of file).
    public final class InputPipe: Sendable {
        private let end: PipeEnd
        private let executable: String

        init(descriptor: Int32, executable: String) {
            self.end = PipeEnd(descriptor)
            self.executable = executable
        }

        /// Writes all of `data`, blocking while the pipe is full. SIGPIPE is not raised when the child
        /// closed its end (that fails with `EPIPE` instead).
        /// - Throws: ``SpawnedProcess/SystemError`` (`write`): `EPIPE` when the child no longer reads,
        ///   `EBADF` after ``close()``.
        public func write(_ data: Data) throws {
            guard !end.isClosed else {
                throw SpawnedProcess.SystemError(operation: "write", executable: executable, code: EBADF)
            }
            let code: Int32 = Spawning.withoutSIGPIPE {
                data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Int32 in
                    var offset = 0
                    while offset < buffer.count {
                        let written = Glibc.write(end.descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                        if written < 0 {
                            if errno == EINTR { continue }
                            return errno
                        }
                        offset += written
                    }
                    return 0
                }
            }
            if code != 0 { throw SpawnedProcess.SystemError(operation: "write", executable: executable, code: code) }
        }

        /// Writes `text` as UTF-8, as `write(_:)` does with `Data`.
        /// - Throws: what `write(_:)` with `Data` throws.
        public func write(_ text: String) throws { try write(Data(text.utf8)) }

        /// Closes the pipe: the child reads end of file. Closing again does nothing.
        public func close() { end.close() }
    }

    /// The reading end of a child's standard output or error pipe. Closed by ``close()`` or when the
    /// value goes away. One thread reads it at a time; do not close it while another thread reads.
    public final class OutputPipe: Sendable {
        private let end: PipeEnd
        private let executable: String

        init(descriptor: Int32, executable: String) {
            self.end = PipeEnd(descriptor)
            self.executable = executable
        }

        /// Reads what is there, blocking until something is (or end of file).
        /// - Parameter count: the most bytes to return.
        /// - Returns: up to `count` bytes; empty at end of file (the child and everything that inherited
        ///   the pipe from it closed it, normally by exiting).
        /// - Throws: ``SpawnedProcess/SystemError`` (`read`): `EBADF` after ``close()``, or what `read` reports.
        public func read(upToCount count: Int = 65_536) throws -> Data {
            guard !end.isClosed else {
                throw SpawnedProcess.SystemError(operation: "read", executable: executable, code: EBADF)
            }
            var buffer = [UInt8](repeating: 0, count: max(count, 1))
            while true {
                let received = buffer.withUnsafeMutableBytes { Glibc.read(end.descriptor, $0.baseAddress, $0.count) }
                if received >= 0 { return Data(buffer[0..<received]) }
                if errno != EINTR {
                    throw SpawnedProcess.SystemError(operation: "read", executable: executable, code: errno)
                }
            }
        }

        /// Reads to end of file, blocking the calling thread.
        /// - Returns: everything read.
        /// - Throws: what ``read(upToCount:)`` throws.
        public func readToEnd() throws -> Data {
            var data = Data()
            while true {
                let chunk = try read()
                if chunk.isEmpty { return data }
                data.append(chunk)
            }
        }

        /// Reads to end of file on a thread of its own; suspends without blocking a thread of the
        /// cooperative pool.
        /// - Returns: everything read.
        /// - Throws: what ``read(upToCount:)`` throws.
        public func readToEndInBackground() async throws -> Data {
            try await withCheckedThrowingContinuation { continuation in
                Thread.detachNewThread { [self] in
                    continuation.resume(with: Result { try self.readToEnd() })
                }
            }
        }

        /// Closes the pipe (a child still writing then fails with `EPIPE` or SIGPIPE). Closing again
        /// does nothing.
        public func close() { end.close() }
    }
}

/// An `errno` value thrown inside ``Spawning``.
private struct Errno: Error {
    let value: Int32
}

/// The glibc calls Swift's Glibc module does not export (declared under `_GNU_SOURCE`), found at run
/// time, and the steps shared by the public API.
private enum Spawning {
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    /// `pipe2` (glibc 2.9): a pipe made close-on-exec atomically.
    static let pipe2: Pipe2? = symbol("pipe2")
    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34).
    static let addCloseFrom: AddCloseFrom? = symbol("posix_spawn_file_actions_addclosefrom_np")

    static func symbol<T>(_ name: String) -> T? {
        guard let handle = dlopen(nil, RTLD_NOW), let pointer = dlsym(handle, name) else { return nil }
        return unsafeBitCast(pointer, to: T.self)
    }

    /// A pipe whose two ends are close-on-exec.
    static func makePipe() throws(Errno) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        if let pipe2 {
            guard pipe2(&ends, O_CLOEXEC) == 0 else { throw Errno(value: errno) }
        } else {
            guard pipe(&ends) == 0 else { throw Errno(value: errno) }
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        }
        return (ends[0], ends[1])
    }

    /// Adds the action that closes every descriptor from 3 up in the child (after the `dup2`s onto
    /// 0, 1 and 2). Without `addclosefrom_np`: closes the ones open now that are not close-on-exec,
    /// up to 4,096, except `keeping` (their `dup2`s have run by then anyway).
    static func closeOtherDescriptors(_ actions: inout posix_spawn_file_actions_t, keeping: [Int32]) {
        if let addCloseFrom, addCloseFrom(&actions, 3) == 0 { return }
        let limit = Int32(min(max(sysconf(Int32(_SC_OPEN_MAX)), 0), 4096))
        guard limit > 3 else { return }
        for descriptor in 3..<limit where !keeping.contains(descriptor) {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 && flags & FD_CLOEXEC == 0 {
                posix_spawn_file_actions_addclose(&actions, descriptor)
            }
        }
    }

    /// Runs `body` with SIGPIPE blocked on this thread, then discards a SIGPIPE it raised (a write
    /// to a pipe nobody reads then fails with `EPIPE` only).
    static func withoutSIGPIPE<T>(_ body: () -> T) -> T {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var pending = sigset_t()
        sigpending(&pending)
        let alreadyPending = sigismember(&pending, SIGPIPE) == 1
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        let result = body()
        if !alreadyPending {
            sigpending(&pending)
            if sigismember(&pending, SIGPIPE) == 1 {
                var zero = timespec(tv_sec: 0, tv_nsec: 0)
                while sigtimedwait(&pipeSignal, nil, &zero) < 0 && errno == EINTR {}
            }
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        return result
    }

    /// Output pipes being read to their ends, each on a thread of its own.
    final class Reading: Sendable {
        /// Entered until every pipe is read to its end (and closed).
        let done = DispatchGroup()
        private let results = Mutex<(standardOutput: Data, standardError: Data, error: SpawnedProcess.SystemError?)>((Data(), Data(), nil))

        fileprivate func store(_ data: Data, isStandardOutput: Bool) {
            results.withLock { if isStandardOutput { $0.standardOutput = data } else { $0.standardError = data } }
        }

        fileprivate func store(_ error: any Error) {
            results.withLock { results in
                if results.error == nil {
                    results.error = error as? SpawnedProcess.SystemError
                        ?? SpawnedProcess.SystemError(operation: "read", executable: "", code: EIO)
                }
            }
        }

        /// The output read, with `termination`.
        /// - Throws: the first read error.
        func output(termination: SpawnedProcess.Termination) throws -> SpawnedProcess.Output {
            let (standardOutput, standardError, error) = results.withLock { ($0.standardOutput, $0.standardError, $0.error) }
            if let error { throw error }
            return SpawnedProcess.Output(termination: termination, standardOutput: standardOutput, standardError: standardError)
        }
    }

    /// Starts reading `standardOutput` and `standardError` (each when not `nil`) to their ends.
    static func readToEnd(_ standardOutput: SpawnedProcess.OutputPipe?, _ standardError: SpawnedProcess.OutputPipe?) -> Reading {
        let reading = Reading()
        for (pipe, isStandardOutput) in [(standardOutput, true), (standardError, false)] {
            guard let pipe else { continue }
            reading.done.enter()
            let thread = Thread {
                do {
                    reading.store(try pipe.readToEnd(), isStandardOutput: isStandardOutput)
                } catch {
                    reading.store(error)
                }
                pipe.close()
                reading.done.leave()
            }
            thread.name = isStandardOutput ? "SpawnedProcess stdout" : "SpawnedProcess stderr"
            thread.start()
        }
        return reading
    }
}
