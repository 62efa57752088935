import Foundation
import MSALCore
import MSALWebAuth
import Testing

@Suite("PKCE")
struct PKCETests {
    private static let appendixBVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    private static let appendixBChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"

    @Test("RFC 7636 Appendix B: the S256 challenge of the example verifier")
    func appendixB() throws {
        #expect(PKCE.challenge(for: Self.appendixBVerifier) == Self.appendixBChallenge)
        let pkce = try PKCE(codeVerifier: Self.appendixBVerifier)
        #expect(pkce.codeVerifier == Self.appendixBVerifier)
        #expect(pkce.codeChallenge == Self.appendixBChallenge)
        #expect(pkce.codeChallengeMethod == "S256")
    }

    @Test("SHA-256 of the empty string and of a 128-character verifier (known digests)")
    func otherDigests() {
        // SHA-256("") = e3b0c442...b855, base64url without padding.
        #expect(PKCE.challenge(for: "") == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU")
        // SHA-256("abc") = ba7816bf...15ad (FIPS 180-2 example).
        #expect(PKCE.challenge(for: "abc") == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0")
    }

    @Test("A generated verifier is 43 base64url characters and its challenge matches it")
    func generated() throws {
        for _ in 0..<50 {
            let pkce = try PKCE()
            #expect(pkce.codeVerifier.count == 43)
            #expect(pkce.codeVerifier.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
            #expect(pkce.codeChallenge == PKCE.challenge(for: pkce.codeVerifier))
            #expect(pkce.codeChallenge.count == 43)
            #expect(try PKCE(codeVerifier: pkce.codeVerifier) == pkce)
        }
    }

    @Test("Two generated pairs differ")
    func fresh() throws {
        let first = try PKCE()
        let second = try PKCE()
        #expect(first.codeVerifier != second.codeVerifier)
        #expect(first.codeChallenge != second.codeChallenge)
    }

    @Test("Verifiers at the length limits and with every allowed character are accepted")
    func validVerifiers() throws {
        _ = try PKCE(codeVerifier: String(repeating: "a", count: 43))
        _ = try PKCE(codeVerifier: String(repeating: "~", count: 128))
        _ = try PKCE(codeVerifier: "ABCXYZabcxyz0189-._~" + String(repeating: "Q", count: 30))
    }

    @Test("Invalid verifiers are refused with invalidParameter, without echoing the verifier", arguments: [
        String(repeating: "a", count: 42),
        String(repeating: "a", count: 129),
        "",
        String(repeating: "a", count: 42) + "+",
        String(repeating: "a", count: 42) + "/",
        String(repeating: "a", count: 42) + "=",
        String(repeating: "a", count: 42) + " ",
        String(repeating: "a", count: 42) + "é",
        "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz%",
    ])
    func invalidVerifiers(verifier: String) {
        do {
            _ = try PKCE(codeVerifier: verifier)
            Issue.record("accepted an invalid verifier of \(verifier.count) characters")
        } catch {
            #expect(error.code == .internal)
            #expect(error.internalCode == .invalidParameter)
            if verifier.count >= 40 {
                #expect(!error.description.contains(String(verifier.prefix(40))))
            }
        }
    }

    @Test("description, debugDescription and dump never show the verifier")
    func redacted() throws {
        let pkce = try PKCE(codeVerifier: Self.appendixBVerifier)
        var dumped = ""
        dump(pkce, to: &dumped)
        for text in [pkce.description, String(reflecting: pkce), "\(pkce)", dumped] {
            #expect(!text.contains(Self.appendixBVerifier))
            #expect(text.contains(Self.appendixBChallenge))
        }
    }

    @Test("SecureRandom returns the count asked for, differs between calls, and refuses a negative count")
    func secureRandom() throws {
        #expect(try SecureRandom.bytes(0).isEmpty)
        let a = try SecureRandom.bytes(32)
        let b = try SecureRandom.bytes(32)
        #expect(a.count == 32)
        #expect(a != b)
        #expect(try SecureRandom.base64URLString(byteCount: 16).count == 22)
        #expect(throws: MSALError.internal(.invalidParameter, "")) { try SecureRandom.bytes(-1) }
    }
}
