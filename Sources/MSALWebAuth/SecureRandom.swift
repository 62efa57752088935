internal import COpenSSL
import Foundation
public import MSALCore

/// Cryptographically secure random bytes from OpenSSL's `RAND_bytes`, for PKCE verifiers, `state`
/// and `nonce` (RFC 7636 §7.1, RFC 6749 §10.10, OpenID Connect Core §15.5.2).
public enum SecureRandom {
    /// Returns `count` random bytes from OpenSSL's CSPRNG (`RAND_bytes`).
    /// - Returns: exactly `count` bytes; an empty array when `count` is 0.
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when `count` is negative or larger than
    ///   `Int32.max`; `.internal(.unexpected)` when OpenSSL cannot produce random bytes (its random
    ///   generator is not seeded). Never falls back to a weaker generator.
    public static func bytes(_ count: Int) throws(MSALError) -> [UInt8] {
        guard count >= 0, let length = Int32(exactly: count) else {
            throw .internal(.invalidParameter, "SecureRandom.bytes needs a count from 0 to Int32.max, not \(count).")
        }
        guard count > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: count)
        let status = buffer.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, length) }
        guard status == 1 else {
            let reason = ERR_get_error()
            ERR_clear_error()
            throw .internal(.unexpected, "OpenSSL RAND_bytes could not produce random bytes (OpenSSL error \(reason)).")
        }
        return buffer
    }

    /// Returns `byteCount` random bytes encoded as base64url without padding (RFC 4648 §5).
    /// - Returns: a string of `ceil(byteCount * 4 / 3)` characters from `[A-Za-z0-9_-]`, e.g. 22
    ///   characters for 16 bytes (128 bits), 43 for 32 bytes (256 bits).
    /// - Throws: ``MSALError`` as ``bytes(_:)`` does.
    public static func base64URLString(byteCount: Int) throws(MSALError) -> String {
        Base64URL.encode(Data(try bytes(byteCount)))
    }
}
