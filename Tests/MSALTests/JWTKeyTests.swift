import Foundation
@testable import MSAL
import Testing

/// The key decoded ID token claims are kept under: hashed from samples, compared whole.
@Suite("JWTKey")
struct JWTKeyTests {
    /// A token of `length` characters that differs from the others only at `position`.
    static func token(length: Int, differingAt position: Int, with character: Character) -> String {
        var characters = Array(repeating: Character("A"), count: length)
        characters[position] = character
        return String(characters)
    }

    @Test("Tokens that share the sampled bytes are told apart; equal tokens match whatever their storage")
    func samplesDecideOnlyTheHash() {
        // Both differ from each other outside the sampled middle and end: same hash, different keys.
        let first = Self.token(length: 1200, differingAt: 10, with: "x")
        let second = Self.token(length: 1200, differingAt: 10, with: "y")
        #expect(JWTKey(jwt: first).hashValue == JWTKey(jwt: second).hashValue)
        #expect(JWTKey(jwt: first) != JWTKey(jwt: second))

        let kept = KeptValues<JWTKey, String>(limit: 16)
        kept.keep("claims of the first", for: JWTKey(jwt: first))
        kept.keep("claims of the second", for: JWTKey(jwt: second))
        #expect(kept.value(for: JWTKey(jwt: first)) == "claims of the first")
        #expect(kept.value(for: JWTKey(jwt: second)) == "claims of the second")
        // A copy in its own storage (as a token read again from the store is) finds the same value.
        let copy = String(decoding: Array(first.utf8), as: UTF8.self)
        #expect(kept.value(for: JWTKey(jwt: copy)) == "claims of the first")
        // A token differing in the sampled end hashes differently; short tokens hash every byte.
        #expect(JWTKey(jwt: Self.token(length: 1200, differingAt: 1199, with: "x")).hashValue != JWTKey(jwt: first).hashValue)
        #expect(JWTKey(jwt: "a.b.c").hashValue != JWTKey(jwt: "a.b.d").hashValue)
    }
}
