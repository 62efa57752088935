public import Foundation
public import MSALCore
internal import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One file shared between threads and processes: atomic whole-file replacement and a
/// cross-process exclusive lock, the building block of the file-based token cache backends
/// (``JSONFileTokenCacheStore``, the encrypted file store).
///
/// - **Exclusion.** ``withExclusiveLock(_:)`` holds `flock(LOCK_EX)` on the sibling lock file
///   `<path>.lock`, opened anew for each call, so it excludes other threads of this process (each
///   call has its own open file description) and other processes alike. The kernel releases the lock
///   when its holder dies, so there are no stale locks; the lock file itself stays (it is empty).
///   Waiters poll; `flock` is not fair, so a call that starts just after this process released the
///   lock leaves the waiters a turn first, and the timeout counts only time in which the file did not
///   change (a queue of writers that keeps changing it is progress, not a stuck holder).
/// - **Atomic replacement.** ``replace(with:)`` writes a temporary file (mode 0600) in the same
///   directory, `fsync`s it, renames it over the target and `fsync`s the directory: a reader (which
///   needs no lock) sees the old or the new content, never a mix, also after a crash. The temporary
///   file of a writer that died before its rename is removed by the next ``withExclusiveLock(_:)``.
/// - **Files.** Missing directories are created with mode 0700, the file and lock file with 0600.
///
/// Errors are ``MSALError`` `.internal(.cacheError)` whose message names the path, the reason and
/// what to do.
///
/// Source: msal-extensions' `CrossPlatLock` (a lock file beside the cache) and the
/// write-temp-then-rename pattern of MSAL .NET's and msal-extensions' file persistence.
public struct LockedFile: Sendable {
    /// The file's path.
    public let path: String
    /// How long ``withExclusiveLock(_:)`` waits while the lock is held and the file does not change
    /// before failing, in seconds.
    public let lockTimeout: TimeInterval

    /// The lock file's path: `<path>.lock`.
    public var lockPath: String { path + ".lock" }

    /// The identity of one version of the file, for cheap change detection.
    public struct Status: Sendable, Hashable {
        /// The inode number (a replacement gives the file a new inode).
        public var inode: UInt64
        /// The size in bytes.
        public var size: Int64
        /// The modification time in nanoseconds since 1970.
        public var modificationTimeNanoseconds: Int64
    }

    /// Describes the file at `path`; creates nothing.
    /// - Parameters:
    ///   - path: the file; its directory is created (0700) when first needed.
    ///   - lockTimeout: how long to wait for the lock (default 10 seconds).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the path is empty or exists and is not a
    ///   regular file.
    public init(path: String, lockTimeout: TimeInterval = 10) throws(MSALError) {
        guard !path.isEmpty, !path.hasSuffix("/") else {
            throw .internal(.cacheError, "The token cache path '\(path)' is not a file path; pass a file path such as ~/.local/share/msal/msal_token_cache.json.")
        }
        self.path = path
        self.lockTimeout = lockTimeout
        var info = stat()
        if lstat(path, &info) == 0, info.st_mode & S_IFMT != S_IFREG, stat(path, &info) != 0 || info.st_mode & S_IFMT != S_IFREG {
            throw .internal(.cacheError, "The token cache path '\(path)' exists but is not a regular file. Choose another path.")
        }
    }

    // MARK: Reading

    /// Reads the whole file.
    /// - Returns: its content, or `nil` when the file does not exist.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when it exists but cannot be read.
    public func read() throws(MSALError) -> Data? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw failure("Cannot open the token cache file '\(path)'", code, "Check that it is readable by this user.")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw .internal(.cacheError, "The token cache path '\(path)' is not a regular file. Choose another path.")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { posixRead(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw failure("Cannot read the token cache file '\(path)'", code, "Check the file and the disk.")
            }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
        }
    }

    /// The file's current ``Status``, or `nil` when it does not exist.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when it cannot be examined.
    public func status() throws(MSALError) -> Status? {
        var info = stat()
        if stat(path, &info) != 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw failure("Cannot examine the token cache file '\(path)'", code, "Check that its directory is accessible to this user.")
        }
        return Status(
            inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modificationTimeNanoseconds: Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec))
    }

    // MARK: Writing

    /// Replaces the file's content atomically: writes a temporary file (mode 0600) in the same
    /// directory, `fsync`s it, renames it over the file and `fsync`s the directory. Creates missing
    /// directories (mode 0700). Call it inside ``withExclusiveLock(_:)`` for a read-modify-write.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when it could not be written; then the file
    ///   is unchanged and no temporary file is left behind.
    public func replace(with data: Data) throws(MSALError) {
        try prepareDirectory()
        let directory = directoryPath
        let name = (path as NSString).lastPathComponent
        var temporary = ""
        var descriptor: Int32 = -1
        for _ in 0..<8 {
            temporary = directory + "/." + name + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if descriptor >= 0 || errno != EEXIST { break }
        }
        guard descriptor >= 0 else {
            throw failure("Cannot create a temporary file in '\(directory)' to write the token cache", errno, "Check that the directory is writable by this user.")
        }
        var renamed = false
        defer {
            if descriptor >= 0 { close(descriptor) }
            if !renamed { unlink(temporary) }
        }
        fchmod(descriptor, 0o600)
        let writeError: Int32 = data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Int32 in
            var offset = 0
            while offset < bytes.count {
                let written = posixWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    let code = errno
                    if code == EINTR { continue }
                    return code
                }
                offset += written
            }
            return 0
        }
        if writeError != 0 {
            throw failure("Cannot write the token cache file '\(path)'", writeError, "Check the free disk space; the file was left unchanged.")
        }
        if fsync(descriptor) != 0 {
            throw failure("Cannot flush the token cache file '\(path)' to disk", errno, "Check the disk; the file was left unchanged.")
        }
        close(descriptor)
        descriptor = -1
        if rename(temporary, path) != 0 {
            throw failure("Cannot replace the token cache file '\(path)'", errno, "Check that the directory is writable by this user; the file was left unchanged.")
        }
        renamed = true
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            _ = fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }

    // MARK: Locking

    /// Runs `body` while holding the exclusive lock on ``lockPath``, which serializes it with every
    /// other holder in this and other processes. Creates missing directories (0700) and the lock file
    /// (0600). Waits while other holders keep changing the file, and up to ``lockTimeout`` for a
    /// holder that does not (a crashed holder's lock is released by the kernel at once).
    /// - Returns: what `body` returns.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the lock file cannot be opened or the
    ///   lock stays held for ``lockTimeout`` with no change to the file, or what `body` throws.
    public func withExclusiveLock<T>(_ body: () throws(MSALError) -> T) throws(MSALError) -> T {
        try prepareDirectory()
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw failure("Cannot open the token cache lock file '\(lockPath)'", errno, "Check that the directory is writable by this user.")
        }
        var locked = false
        defer {
            close(descriptor)  // closing releases the lock
            if locked { Self.noteRelease(of: lockPath) }
        }
        try Self.waitForExclusiveLock(
            on: descriptor, lockPath: lockPath, timeout: lockTimeout, progress: { try? self.status() },
            stayedLocked: "The token cache '\(path)' stayed locked by another thread or process, with no change to it, for more than \(String(format: "%g", lockTimeout)) seconds. Try again; if it persists, find the process holding '\(lockPath)'.")
        locked = true
        removeAbandonedTemporaryFiles()
        return try body()
    }

    /// Takes `flock(LOCK_EX)` on `descriptor`, an open file description of `lockPath`, fairly among
    /// many writers. A contended wait blocks in the kernel on a helper thread (waiters burn no CPU,
    /// which on a busy machine would starve the holder), and a call that starts right after this
    /// process released the same lock leaves waiters a turn first (the kernel wakes them at once).
    /// The timeout counts only time in which `progress` returned the same value: a queue of writers
    /// that keep changing the store is not a stuck holder. The caller releases by closing
    /// `descriptor`, then calls ``noteRelease(ofLockAt:)``. Used by this type and by the keyring
    /// store's lock file.
    /// - Parameters:
    ///   - progress: a value that changes whenever a holder commits (file status, a counter).
    ///   - stayedLocked: the message of the timeout error (names the store, never a secret).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` with `stayedLocked` after `timeout` seconds
    ///   without progress, or when `flock` fails otherwise.
    public static func waitForExclusiveLock(
        on descriptor: Int32, lockPath: String, timeout: TimeInterval, progress: () -> AnyHashable?, stayedLocked: @autoclosure () -> String
    ) throws(MSALError) {
        leaveTurnToWaiters(of: lockPath)
        var code: Int32 = 0
        repeat {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return }
            code = errno
        } while code == EINTR
        guard code == EWOULDBLOCK else { throw flockFailure(lockPath, code) }

        // Contended: block in the kernel on a helper thread, through a duplicate of the descriptor
        // (the same open file description, so the lock it gets is the caller's). When the wait is
        // given up, the helper closes its duplicate once it gets the lock, which then goes away
        // with the caller's descriptor.
        let waiter = BlockingLockWait(descriptor: fcntl(descriptor, F_DUPFD_CLOEXEC, 0))
        guard waiter.descriptor >= 0 else { throw flockFailure(lockPath, errno) }
        waiter.start()
        var deadline = Date().addingTimeInterval(timeout)
        var seen = progress()
        while true {
            if let outcome = waiter.wait(seconds: min(0.1, max(0.001, deadline.timeIntervalSinceNow))) {
                if outcome == 0 { return }
                throw flockFailure(lockPath, outcome)
            }
            guard Date() >= deadline else { continue }
            // Other holders changed the store since: the writers are making progress, wait on.
            let current = progress()
            if current != seen {
                seen = current
                deadline = Date().addingTimeInterval(timeout)
                continue
            }
            if waiter.abandon() { throw .internal(.cacheError, stayedLocked()) }
            // The lock came in just now.
        }
    }

    private static func flockFailure(_ lockPath: String, _ code: Int32) -> MSALError {
        .internal(
            .cacheError,
            "Cannot lock the token cache lock file '\(lockPath)' (\(String(cString: strerror(code)))). Check that the file system supports flock.")
    }

    /// Records that this process just released the lock at `lockPath` (see
    /// ``waitForExclusiveLock(on:lockPath:timeout:progress:stayedLocked:)``).
    public static func noteRelease(ofLockAt lockPath: String) {
        noteRelease(of: lockPath)
    }

    /// Removes the temporary files of ``replace(with:)`` that writers left when they died before
    /// renaming them (`.<name>.tmp-<pid>-<random>` whose process no longer exists): they would pile
    /// up, each a full copy of the cache, tokens included, that signing out does not remove. Called
    /// with the lock held, so no writer that locks is in the middle of one; a file of a live process
    /// (this one included) is left alone. Best effort: failures are ignored.
    private func removeAbandonedTemporaryFiles() {
        let prefix = "." + (path as NSString).lastPathComponent + ".tmp-"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directoryPath)) ?? []
        for name in names where name.hasPrefix(prefix) {
            guard let owner = name.dropFirst(prefix.count).split(separator: "-").first.flatMap({ pid_t($0) }),
                  owner > 0, owner != getpid(),
                  kill(owner, 0) != 0, errno == ESRCH
            else { continue }
            unlink(directoryPath + "/" + name)
        }
    }

    /// How long the lock stays free for waiters after this process released it before a new call of
    /// this process tries to take it again. Waiters block in the kernel, which wakes them at the
    /// release; this is time for one of them to be scheduled and take it.
    private static let turnForWaiters: Duration = .milliseconds(2)

    /// When this process last released each lock file (by path).
    private static let releases = Mutex<[String: ContinuousClock.Instant]>([:])

    private static func noteRelease(of lockPath: String) {
        let now = ContinuousClock.now
        releases.withLock { $0[lockPath] = now }
    }

    /// Waits out the rest of ``turnForWaiters`` when this process released `lockPath` less than that
    /// ago. `flock` is not fair: without this, a process that writes back to back re-takes the
    /// lock microseconds after releasing it, before any polling waiter looks, and other processes
    /// wait beyond ``lockTimeout`` (seen with 16 processes writing 200 changes each on one file).
    /// Calls already waiting are not delayed.
    private static func leaveTurnToWaiters(of lockPath: String) {
        guard let released = releases.withLock({ $0[lockPath] }) else { return }
        let remaining = turnForWaiters - (ContinuousClock.now - released)
        guard remaining > .zero else { return }
        let (seconds, attoseconds) = remaining.components
        usleep(UInt32(seconds) * 1_000_000 + UInt32(attoseconds / 1_000_000_000_000))
    }

    // MARK: Helpers

    private var directoryPath: String {
        let directory = (path as NSString).deletingLastPathComponent
        return directory.isEmpty ? "." : directory
    }

    /// Creates the missing directories of ``path`` with mode 0700.
    private func prepareDirectory() throws(MSALError) {
        try Self.prepareDirectory(for: path)
    }

    /// Creates the missing directories of a token-cache file's path with mode 0700, as every
    /// file-backed store does before creating its file.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when a path component exists but is not a
    ///   directory, or a directory cannot be created (the message says what to do).
    public static func prepareDirectory(for path: String) throws(MSALError) {
        let directory = (path as NSString).deletingLastPathComponent
        guard !directory.isEmpty else { return }
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            prefix += "/" + component
            var info = stat()
            if stat(prefix, &info) == 0 {
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    throw .internal(.cacheError, "Cannot use the token cache '\(path)': '\(prefix)' is not a directory. Choose another path.")
                }
                continue
            }
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                let reason = String(cString: strerror(errno))
                throw .internal(.cacheError, "Cannot create the directory '\(prefix)' for the token cache (\(reason)). Create it, make its parent writable, or choose another path.")
            }
        }
    }

    /// A cheap value that changes whenever the file is replaced or modified: an FNV-1a hash of its
    /// (inode, size, modification time), or a fixed value while it does not exist. File-backed
    /// stores add their own write count to it for ``TokenCacheStore/changeStamp()``.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file cannot be examined.
    public func contentStamp() throws(MSALError) -> UInt64 {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        guard let status = try status() else { return value }
        for field in [status.inode, UInt64(bitPattern: status.size), UInt64(bitPattern: status.modificationTimeNanoseconds)] {
            for shift in stride(from: 0, to: 64, by: 8) {
                value = (value ^ ((field >> UInt64(shift)) & 0xFF)) &* 0x100_0000_01b3
            }
        }
        return value
    }

    private func failure(_ what: String, _ code: Int32, _ advice: String) -> MSALError {
        .internal(.cacheError, "\(what) (\(String(cString: strerror(code)))). \(advice)")
    }
}

/// `read(2)`, callable where a method named `read` shadows it.
private func posixRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

/// `write(2)`, callable where a method shadows it.
private func posixWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}

/// One blocking `flock(LOCK_EX)` on a thread of its own, which the caller waits for with a timeout
/// and may give up on.
private final class BlockingLockWait: @unchecked Sendable {
    /// A duplicate of the caller's descriptor; closed by the helper thread when it is done.
    let descriptor: Int32
    private let done = DispatchSemaphore(value: 0)
    /// `nil` while waiting; then 0 (locked) or the `errno` of the failure.
    private let state = Mutex<(outcome: Int32?, abandoned: Bool)>((nil, false))

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    func start() {
        Thread.detachNewThread { [self] in
            var result: Int32
            repeat {
                result = flock(descriptor, LOCK_EX) == 0 ? 0 : errno
            } while result == EINTR
            close(descriptor)  // the lock stays with the caller's descriptor (same description)
            state.withLock { $0.outcome = result }
            done.signal()
        }
    }

    /// Waits up to `seconds`. - Returns: the outcome, or `nil` when still waiting.
    func wait(seconds: Double) -> Int32? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return state.withLock { $0.outcome }
    }

    /// Gives the wait up unless it already ended. - Returns: whether it was given up (the lock, if
    /// the helper gets it later, is released when the caller closes its descriptor).
    func abandon() -> Bool {
        state.withLock { state in
            if state.outcome != nil { return false }
            state.abandoned = true
            return true
        }
    }
}
