internal import COpenSSL
import Foundation
public import MSALCore

/// A Proof Key for Code Exchange pair (RFC 7636): the secret ``codeVerifier`` the app keeps and
/// the ``codeChallenge`` it sends with the authorization request, using the `S256` method.
///
/// The verifier is a secret until the code is redeemed: ``description``, ``debugDescription`` and
/// the mirror show only the challenge.
public struct PKCE: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The secret sent to the token endpoint as `code_verifier` (RFC 7636 §4.1, §4.5):
    /// 43–128 characters of `[A-Z] [a-z] [0-9] - . _ ~`.
    public let codeVerifier: String
    /// `BASE64URL(SHA256(ASCII(codeVerifier)))`, sent as `code_challenge` (RFC 7636 §4.2).
    public let codeChallenge: String
    /// The challenge method, always `S256` (RFC 7636 §4.2; `plain` is never used, §7.2).
    public var codeChallengeMethod: String { "S256" }

    /// The shortest verifier RFC 7636 §4.1 allows.
    public static let minimumVerifierLength = 43
    /// The longest verifier RFC 7636 §4.1 allows.
    public static let maximumVerifierLength = 128

    /// Creates a fresh pair: 32 random bytes (256 bits, from ``SecureRandom``) encoded as a
    /// 43-character base64url verifier, as RFC 7636 §4.1 recommends.
    /// - Throws: ``MSALError`` `.internal(.unexpected)` when OpenSSL cannot produce random bytes.
    public init() throws(MSALError) {
        let verifier = try SecureRandom.base64URLString(byteCount: 32)
        self.codeVerifier = verifier
        self.codeChallenge = PKCE.challenge(for: verifier)
    }

    /// Creates a pair from a given verifier (for tests and for resuming a stored flow).
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when the verifier is shorter than 43
    ///   or longer than 128 characters, or has a character outside `[A-Z] [a-z] [0-9] - . _ ~`
    ///   (RFC 7636 §4.1). The message never contains the verifier.
    public init(codeVerifier: String) throws(MSALError) {
        let length = codeVerifier.utf8.count
        guard (PKCE.minimumVerifierLength...PKCE.maximumVerifierLength).contains(length) else {
            throw .internal(.invalidParameter, "A PKCE code verifier must be 43 to 128 characters long (RFC 7636 §4.1), not \(length).")
        }
        guard codeVerifier.utf8.allSatisfy(PKCE.isUnreserved) else {
            throw .internal(.invalidParameter, "A PKCE code verifier may contain only A-Z, a-z, 0-9, '-', '.', '_' and '~' (RFC 7636 §4.1).")
        }
        self.codeVerifier = codeVerifier
        self.codeChallenge = PKCE.challenge(for: codeVerifier)
    }

    /// Computes the `S256` code challenge of a verifier: `BASE64URL(SHA256(ASCII(verifier)))`
    /// without padding (RFC 7636 §4.2), with SHA-256 from OpenSSL's EVP interface.
    /// - Returns: a 43-character base64url string.
    public static func challenge(for verifier: String) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var digestLength: UInt32 = 0
        let bytes = Array(verifier.utf8)
        let status = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &digestLength, EVP_sha256(), nil)
            }
        }
        // EVP_Digest with the built-in SHA-256 fails only on allocation failure; there is no
        // meaningful recovery, and returning a wrong challenge would fail later at the server.
        precondition(status == 1 && digestLength == 32, "OpenSSL EVP_Digest(SHA-256) failed")
        return Base64URL.encode(Data(digest.prefix(Int(digestLength))))
    }

    /// RFC 3986 §2.3 unreserved characters, the verifier's alphabet (RFC 7636 §4.1).
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    /// The method and the challenge; never the verifier.
    public var description: String { "PKCE(method: S256, codeChallenge: \(codeChallenge), codeVerifier: <redacted>)" }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// A mirror with the challenge only, so `dump` does not print the verifier.
    public var customMirror: Mirror {
        Mirror(self, children: ["codeChallenge": codeChallenge, "codeChallengeMethod": codeChallengeMethod], displayStyle: .struct)
    }
}
