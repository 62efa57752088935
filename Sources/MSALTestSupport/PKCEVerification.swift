import Foundation
internal import COpenSSL
import MSALCore

extension LocalIdentityProvider {
    /// The PKCE `S256` code challenge for a code verifier: `BASE64URL-ENCODE(SHA256(ASCII(code_verifier)))`
    /// (RFC 7636 §4.2), computed with OpenSSL's SHA-256.
    ///
    /// The provider checks a token request's `code_verifier` with it (RFC 7636 §4.6); tests use it
    /// to derive the `code_challenge` they send to the authorize endpoint.
    /// - Parameter verifier: the `code_verifier`, 43–128 characters of `[A-Za-z0-9-._~]`
    ///   (RFC 7636 §4.1); any string is hashed, as its UTF-8 bytes.
    /// - Returns: 43 characters of base64url without padding (RFC 7636 Appendix A).
    public static func s256(_ verifier: String) -> String {
        let input = Array(verifier.utf8)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = input.withUnsafeBytes { bytes in
            EVP_Digest(bytes.baseAddress, bytes.count, &digest, &length, EVP_sha256(), nil)
        }
        precondition(ok == 1 && length == 32, "OpenSSL's EVP_Digest(SHA-256) failed")
        return Base64URL.encode(Data(digest.prefix(Int(length))))
    }

    /// Whether a string is a valid `code_verifier`: 43–128 characters from the unreserved set
    /// `[A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~"` (RFC 7636 §4.1).
    static func isValidCodeVerifier(_ verifier: String) -> Bool {
        (43...128).contains(verifier.utf8.count) && verifier.utf8.allSatisfy { byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
        }
    }
}
