import Foundation
import MSALCore

/// Random and derived values for ``LocalIdentityProvider``'s codes and tokens.
enum TokenMint {
    /// `bytes` random bytes, base64url without padding.
    static func randomToken(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode(Data((0..<bytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) }))
    }

    /// A 9-character user code of capital letters and digits without look-alikes (0/O, 1/I), as
    /// Entra shows (`FJYQTR4B8`).
    static func userCode() -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        return String((0..<9).map { _ in alphabet.randomElement()! })
    }

    /// Splits a `scope` parameter on spaces (RFC 6749 §3.3), keeping the given order.
    static func scopes(_ scope: String) -> [String] {
        scope.split(whereSeparator: { $0 == " " }).map(String.init)
    }

    /// A compact JWT with header `{"alg":"none","typ":"JWT"}` and an empty signature
    /// (RFC 7519 §6.1, an unsecured JWT).
    static func unsignedJWT(_ claims: [String: JSONValue]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = Base64URL.encode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let payload = Base64URL.encode((try? encoder.encode(claims)) ?? Data("{}".utf8))
        return "\(header).\(payload)."
    }

    /// Entra's `sub` is pairwise: stable for a user and an app, different across apps. 32 bytes
    /// of a stable hash, base64url (43 characters, as Entra's).
    static func pairwiseSubject(objectID: String, clientID: String) -> String {
        Base64URL.encode(stableHash("sub|\(objectID)|\(clientID.lowercased())", bytes: 32))
    }

    /// A guest's object ID in a tenant other than its home: stable, GUID-shaped.
    static func guestObjectID(user: LocalIdentityProvider.User, tenantID: String) -> String {
        var bytes = [UInt8](stableHash("guest|\(user.objectID.lowercased())|\(tenantID)", bytes: 16))
        bytes[6] = (bytes[6] & 0x0F) | 0x40  // version 4 layout
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 9562 variant
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let h = Array(hex)
        return [String(h[0..<8]), String(h[8..<12]), String(h[12..<16]), String(h[16..<20]), String(h[20..<32])].joined(separator: "-")
    }

    /// FNV-1a 64, run with a different seed per 8-byte block. Stable across runs and platforms;
    /// not cryptographic (these are test values).
    static func stableHash(_ text: String, bytes: Int) -> Data {
        var output = Data()
        var block: UInt64 = 0
        while output.count < bytes {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ (block &* 0x9E37_79B9_7F4A_7C15)
            for byte in text.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01B3
            }
            withUnsafeBytes(of: hash.bigEndian) { output.append(contentsOf: $0) }
            block += 1
        }
        return output.prefix(bytes)
    }

    /// Escapes `& < > " '` for HTML text and attribute values.
    static func htmlEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;")
            .replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&#39;")
    }
}
