internal import Foundation
internal import MSALCache
internal import MSALCore
internal import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The cross-process lock and change counter of one access group's keyring items: the file
/// `<directory>/keyring.<access group>.lock` (mode 0600, its directory 0700; a store with extra
/// item attributes, which only tests make, has its own file `keyring.<access group>.attributes-<hash>.lock`).
///
/// - **Lock.** Writers hold `flock(LOCK_EX)` on it, each call on its own open file description, so
///   writers in this and other processes are serialized; the kernel drops the lock when its holder
///   dies, so there are no stale locks. Threads of one process first queue in arrival order for the
///   file (`flock` waiters that poll are served in no order, and a busy thread that releases and
///   retakes the lock at once would starve the others).
/// - **Counter.** The file holds one 64-bit little-endian counter, the store's change stamp. A writer
///   makes it odd before touching the keyring and even (and larger) after, all under the lock, so a
///   reader that reads the same even value before and after reading the keyring saw one committed
///   state (a sequence lock). A new file starts at a random even value, so a counter recreated after
///   the directory was wiped does not repeat old stamps. Readers take no lock.
/// - **Do not delete it while processes use the store.** A writer holding the lock on a deleted file
///   no longer excludes one that creates a new file (the directory is meant to be wiped only at
///   logout, as `$XDG_RUNTIME_DIR` is).
///
/// Source: msal-extensions' `CrossPlatLock` (a lock file beside the cache); the sequence lock is the
/// Linux kernel's `seqlock_t` idea applied to a file.
struct KeyringLockFile: Sendable {
    /// The lock file's path.
    let path: String
    /// How long a writer waits for the lock, in seconds.
    let timeout: TimeInterval

    /// Describes the lock file of `accessGroup` (and a store's extra `attributes`) in `directory`;
    /// creates nothing.
    init(directory: String, accessGroup: String, attributes: [String: String] = [:], timeout: TimeInterval) {
        let directory = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        path = directory + "/" + Self.fileName(accessGroup: accessGroup, attributes: attributes)
        self.timeout = timeout
    }

    /// The default directory: `$XDG_RUNTIME_DIR/swift-msal` when `XDG_RUNTIME_DIR` names an existing
    /// directory, else `$XDG_CACHE_HOME/swift-msal` (absolute `XDG_CACHE_HOME`), else
    /// `~/.cache/swift-msal` (XDG Base Directory Specification).
    static func defaultDirectory(environment: [String: String]) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            var info = stat()
            if stat(runtime, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                return trimmed(runtime) + "/swift-msal"
            }
        }
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") {
            return trimmed(cache) + "/swift-msal"
        }
        var home = environment["HOME"] ?? ""
        if !home.hasPrefix("/") { home = NSHomeDirectory() }
        return trimmed(home) + "/.cache/swift-msal"
    }

    /// `keyring.<group>.lock`; a group longer than 200 UTF-8 bytes is replaced by its 64-bit FNV-1a
    /// hash in hex, to stay within file name limits. (Groups contain no `/`: ``TokenCacheAccessGroup/validate(_:)``.)
    static func fileName(accessGroup: String, attributes: [String: String] = [:]) -> String {
        let suffix = attributes.isEmpty ? ""
            : ".attributes-" + fnv(attributes.sorted { $0.key < $1.key }.map { $0.key + "\u{0}" + $0.value }.joined(separator: "\u{0}"))
        if accessGroup.utf8.count <= 200 {
            return "keyring." + accessGroup + suffix + ".lock"
        }
        return "keyring.fnv-" + fnv(accessGroup) + suffix + ".lock"
    }

    /// The 64-bit FNV-1a hash of `text`'s UTF-8 bytes, in hex.
    private static func fnv(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }

    /// Reads the counter without locking.
    /// - Returns: the counter; 0 when the file does not exist yet or is empty.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file exists but cannot be read.
    func readCounter() throws(MSALError) -> UInt64 {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            let code = errno
            if code == ENOENT { return 0 }
            throw failure("Cannot open the keyring token cache's lock file '\(path)'", code, "Check that it is readable by this user.")
        }
        defer { close(descriptor) }
        return try Self.counter(descriptor, path: path) ?? 0
    }

    /// Runs `body` while holding the exclusive lock. Creates the directory (0700) and the file (0600)
    /// when missing, and waits up to ``timeout`` for another holder.
    /// - Returns: what `body` returns.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file cannot be created or opened, or
    ///   the lock stays held beyond ``timeout``; or what `body` throws.
    func withExclusiveLock<T>(_ body: (Holder) throws(MSALError) -> T) throws(MSALError) -> T {
        let deadline = Date().addingTimeInterval(timeout)
        let queue = FairLock.forPath(path)
        guard queue.lock(until: deadline) else { throw stayedLocked }
        defer { queue.unlock() }
        try LockedFile.prepareDirectory(for: path)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw failure("Cannot open the keyring token cache's lock file '\(path)'", errno, "Check that its directory is writable by this user, or pass another lock directory.")
        }
        var locked = false
        defer {
            close(descriptor)  // closing releases the lock
            if locked { LockedFile.noteRelease(ofLockAt: path) }
        }
        let path = self.path
        try LockedFile.waitForExclusiveLock(
            on: descriptor, lockPath: path, timeout: max(0, deadline.timeIntervalSinceNow),
            progress: { try? Self.counter(descriptor, path: path) }, stayedLocked: stayedLocked.message)
        locked = true
        return try body(Holder(descriptor: descriptor, path: path))
    }

    private var stayedLocked: MSALError {
        .internal(
            .cacheError,
            "The keyring token cache stayed locked by another thread or process for more than \(Int(timeout)) seconds. Try again; if it persists, find the process holding '\(path)'.")
    }

    /// The locked file: read and write the counter.
    struct Holder {
        fileprivate let descriptor: Int32
        fileprivate let path: String

        /// Whether the file holds a counter yet (a new or emptied file does not).
        /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file cannot be read.
        func hasCounter() throws(MSALError) -> Bool {
            try KeyringLockFile.counter(descriptor, path: path) != nil
        }

        /// The counter; a new (empty) file is given a random even value first.
        /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file cannot be read or written.
        func counter() throws(MSALError) -> UInt64 {
            if let value = try KeyringLockFile.counter(descriptor, path: path) { return value }
            var initial = UInt64.random(in: 0...UInt64.max) & ~1
            if initial == 0 { initial = 2 }
            try setCounter(initial)
            return initial
        }

        /// Stores the counter.
        /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file cannot be written.
        func setCounter(_ value: UInt64) throws(MSALError) {
            var bytes = value.littleEndian
            let written = withUnsafeBytes(of: &bytes) { pwrite(descriptor, $0.baseAddress, 8, 0) }
            if written != 8 {
                throw failure("Cannot write the keyring token cache's lock file '\(path)'", written < 0 ? errno : EIO, "Check the free space of its file system.")
            }
        }
    }

    /// The counter in the open file, or `nil` when it holds fewer than 8 bytes.
    private static func counter(_ descriptor: Int32, path: String) throws(MSALError) -> UInt64? {
        var bytes: UInt64 = 0
        while true {
            let count = withUnsafeMutableBytes(of: &bytes) { pread(descriptor, $0.baseAddress, 8, 0) }
            if count == 8 { return UInt64(littleEndian: bytes) }
            if count >= 0 { return nil }
            let code = errno
            if code == EINTR { continue }
            throw failure("Cannot read the keyring token cache's lock file '\(path)'", code, "Check that it is readable by this user.")
        }
    }

    private static func trimmed(_ path: String) -> String {
        path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }
}

/// A first-come, first-served lock for the threads of this process, one per lock file path.
private final class FairLock: @unchecked Sendable {
    private static let registry = Mutex<[String: FairLock]>([:])

    /// The lock of `path` (created on first use, kept for the process's life).
    static func forPath(_ path: String) -> FairLock {
        registry.withLock { locks in
            if let lock = locks[path] { return lock }
            let lock = FairLock()
            locks[path] = lock
            return lock
        }
    }

    private let condition = NSCondition()
    private var held = false
    private var waiting: [UInt64] = []
    private var nextTicket: UInt64 = 0

    /// Waits for the lock in arrival order until `deadline`.
    /// - Returns: whether the lock is now held by the caller.
    func lock(until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let ticket = nextTicket
        nextTicket &+= 1
        waiting.append(ticket)
        while held || waiting.first != ticket {
            if !condition.wait(until: deadline), held || waiting.first != ticket {
                waiting.removeAll { $0 == ticket }
                condition.broadcast()  // the next in line may now be first
                return false
            }
        }
        waiting.removeFirst()
        held = true
        return true
    }

    /// Releases the lock.
    func unlock() {
        condition.lock()
        held = false
        condition.broadcast()
        condition.unlock()
    }
}

/// A `.cacheError` naming the failed step, `strerror(code)` and what to do.
private func failure(_ what: String, _ code: Int32, _ advice: String) -> MSALError {
    .internal(.cacheError, "\(what) (\(String(cString: strerror(code)))). \(advice)")
}
