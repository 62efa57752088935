import Foundation
import MSALCore
import Testing

@Suite("An ID token is read only in the JWT compact form: three parts (JWS) or five (JWE)")
struct IDTokenClaimsCompactFormTests {
    @Test("Every sequence of up to four pieces (dots, empty parts, a payload, non-base64) is accepted exactly when it has 3 or 5 dot-separated parts whose second is a base64url JSON object")
    func compactForm() {
        let payload = Base64URL.encode(Data(#"{"sub":"s"}"#.utf8))
        let pieces = ["", ".", "..", "a", payload, "é", "\(payload).", ".\(payload)"]
        var sequences: [[String]] = [[]]
        var checked = 0
        for _ in 0..<4 {
            sequences = sequences.flatMap { sequence in pieces.map { sequence + [$0] } }
            for sequence in sequences {
                let jwt = sequence.joined()
                let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
                let expected = (parts.count == 3 || parts.count == 5)
                    && Base64URL.decode(String(parts[1])).flatMap { JSONValue(parsing: $0)?.objectValue } != nil
                #expect(((try? IDTokenClaims(jwt: jwt)) != nil) == expected, "\(jwt)")
                checked += 1
            }
        }
        #expect(checked == 8 + 64 + 512 + 4096)
    }
}
