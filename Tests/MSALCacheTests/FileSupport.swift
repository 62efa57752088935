import Foundation
import MSALCore
import Synchronization

/// A fresh directory under the system temp dir, removed when the value goes away.
final class TemporaryDirectory: Sendable {
    let url: URL
    var path: String { url.path }

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("msal-cache-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Mode bits of a file (`st_mode & 0o777`).
func permissions(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

/// Whether `error` is an MSAL cache error whose message contains `text`.
func isCacheError(_ error: any Error, containing text: String) -> Bool {
    guard let error = error as? MSALError else { return false }
    return error == .internal(.cacheError, "") && error.message.contains(text)
}
