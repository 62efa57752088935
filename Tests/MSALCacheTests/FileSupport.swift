import Foundation
import MSALCore
import MSALTestSupport
import Synchronization

/// A fresh directory for real cache files (MSALTestSupport's), under the name the tests use.
typealias TemporaryDirectory = ScratchDirectory

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
