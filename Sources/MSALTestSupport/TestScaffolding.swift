public import Foundation
internal import MSALCore

/// A fresh directory under the system's temporary directory, removed with everything in it when the
/// value goes away: the place tests put real cache files.
public final class ScratchDirectory: Sendable {
    /// The directory.
    public let url: URL
    /// The directory's path.
    public var path: String { url.path }

    /// Creates `<tmp>/<prefix>-<UUID>`.
    /// - Throws: what `FileManager.createDirectory` throws.
    public init(prefix: String = "msal-tests") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` in the directory (nothing is created).
    public func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014): a
/// small seeded generator so that randomized tests can be repeated from their printed seed. Not for
/// anything secret.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Starts the sequence of `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 bits of the sequence.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The mode bits of a file (`st_mode & 0o777`), e.g. `0o600`.
/// - Returns: the bits; -1 when Foundation reports none.
/// - Throws: when the file cannot be examined.
public func permissions(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

/// Whether `error` is an ``MSALError`` `.internal(.cacheError)` whose message contains `text`.
public func isCacheError(_ error: any Error, containing text: String) -> Bool {
    guard let error = error as? MSALError else { return false }
    return error == .internal(.cacheError, "") && error.message.contains(text)
}
