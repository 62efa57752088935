import BenchmarkSupport
import Foundation
import MSALCache
import MSALCacheEncryptedFile
import MSALCacheKeyring
import MSALCacheSQLite
import MSALCore

/// The backends the benchmarks run on, by the name in the JSON lines.
enum Backend: String, CaseIterable {
    case inMemory = "in-memory"
    case sqlite
    case encryptedFile = "encrypted-file"
    case jsonFile = "json-file"
    case keyring

    /// Whether the cache outlives the store instance (a cold start means something).
    var isPersistent: Bool { self != .inMemory }
}

/// Where a backend's cache lives for one run: a scratch directory (removed at the end) or, for the
/// keyring, the default collection of the D-Bus session's Secret Service (a throwaway keyring from
/// scripts/lib/keyring-session.sh).
struct BackendLocation {
    let backend: Backend
    let directory: ScratchPath

    var cachePath: String { directory.file("cache") }
    var keyPath: String { directory.file("cache.key") }

    /// Opens a new store instance on the location (what a new process would do).
    /// `inMemory` needs `contents`: it has no location to read from.
    func openStore(contents: TokenCacheContents? = nil) throws -> any TokenCacheStore {
        switch backend {
        case .inMemory:
            return InMemoryTokenCacheStore(contents: contents ?? TokenCacheContents())
        case .sqlite:
            return try SQLiteTokenCacheStore(path: cachePath)
        case .encryptedFile:
            return try EncryptedFileTokenCacheStore(path: cachePath, keySource: .keyFile(path: keyPath))
        case .jsonFile:
            return try JSONFileTokenCacheStore(path: cachePath)
        case .keyring:
            return try KeyringTokenCacheStore()
        }
    }

    /// Writes `contents` to the location in one change, and returns a store on it.
    func populate(_ contents: TokenCacheContents) throws -> any TokenCacheStore {
        let store = try openStore(contents: backend == .inMemory ? contents : nil)
        guard backend != .inMemory else { return store }
        var upserts: [CacheEntry] = []
        upserts.reserveCapacity(contents.count)
        for kind in CacheEntryKind.allCases {
            for (_, entry) in contents.entries(of: kind) { upserts.append(entry) }
        }
        try store.apply(TokenCacheChange(upserts: upserts))
        return store
    }

    /// Whether the keyring is a throwaway one, deleted with its D-Bus session when the run ends
    /// (scripts/lib/keyring-session.sh sets `MSAL_TEST_KEYRING_SESSION=1`).
    static let keyringIsThrowaway = ProcessInfo.processInfo.environment["MSAL_TEST_KEYRING_SESSION"] == "1"

    /// Removes every entry of the store (the keyring outlives the process; files go with the directory).
    func clear() throws {
        guard backend == .keyring else { return }
        let store = try openStore()
        let contents = try store.readAll()
        var removals: [CacheEntryRemoval] = []
        for kind in CacheEntryKind.allCases {
            for (key, _) in contents.entries(of: kind) { removals.append(CacheEntryRemoval(kind: kind, key: key)) }
        }
        if !removals.isEmpty { try store.apply(TokenCacheChange(removals: removals)) }
    }
}

/// A fresh directory under the temporary directory, removed with its contents on `remove()`.
final class ScratchPath {
    let path: String

    init(prefix: String) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// The size in bytes of the files in the directory (the cache on disk).
    func sizeOnDisk() -> UInt64 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: file(name))[.size] as? NSNumber)?.uint64Value ?? 0
            return total + size
        }
    }
}
