import Foundation
@testable import MSALCache
import MSALCore
import MSALTestSupport
import Testing

@Suite("Cache keys are built as the unified schema's joined and lowercased identifiers, for any text")
struct KeyFormatTests {
    /// Pieces that cross every path of the key builders: ASCII of both cases, separators, empty
    /// parts, precomposed and decomposed accents, letters whose lowercase differs in length or
    /// depends on context (`İ`, `ß`, `ﬁ`, final sigma, the Kelvin sign, title-case digraphs), an
    /// emoji and NUL.
    static let alphabet: [String] = [
        "a", "Z", "-", ".", "", "É", "é", "e\u{301}", "İ", "ß", "ﬁ", "Σ", "ς", "K", "\u{212A}", "🙂", " ", "0", "\u{0}", "Ǆ", "ǅ",
    ]

    static func text(_ generator: inout SplitMix64) -> String {
        var text = ""
        for _ in 0..<Int.random(in: 0...5, using: &generator) { text += alphabet.randomElement(using: &generator)! }
        return text
    }

    @Test("credentialKey and the account and app metadata keys equal the parts joined by '-' and then lowercased, byte for byte")
    func keysAreJoinedThenLowercased() {
        var generator = SplitMix64(seed: 0x6B65_7973)
        for _ in 0..<20_000 {
            let parts = (0..<6).map { _ in Self.text(&generator) }
            let expected = parts.joined(separator: "-").lowercased()
            let key = credentialKey(
                homeAccountID: parts[0], environment: parts[1], credentialType: parts[2], clientOrFamilyID: parts[3],
                realm: parts[4], target: parts[5])
            #expect(Array(key.utf8) == Array(expected.utf8), "\(parts)")
            let three = lowercasedKey(parts[0], parts[1], parts[2])
            #expect(Array(three.utf8) == Array(parts[0...2].joined(separator: "-").lowercased().utf8), "\(parts)")
        }
        // A bridged (not native) string.
        #expect(lowercasedKey(NSString(string: "ABC.Def") as String, "X", "Y") == "abc.def-x-y")
    }

    @Test("An entry's stored key is recognised without building it exactly when it equals the built key as strings compare")
    func storedKeyComparedInPlace() {
        var generator = SplitMix64(seed: 0x6861_736B)
        var equal = 0
        for round in 0..<5_000 {
            let parts = (0..<6).map { _ in Self.text(&generator) }
            let refresh = RefreshTokenEntry(
                homeAccountID: parts[0], environment: parts[1], clientID: parts[2], familyID: round % 3 == 0 ? parts[3] : nil,
                secret: "s", target: round % 2 == 0 ? parts[4] : nil)
            let id = IDTokenEntry(homeAccountID: parts[0], environment: parts[1], clientID: parts[2], realm: parts[3], secret: "s")
            let account = AccountEntry(homeAccountID: parts[0], environment: parts[1], realm: parts[2], localAccountID: "l")
            let metadata = AppMetadataEntry(clientID: parts[0], environment: parts[1])
            // Candidates: each entry's own key, in other cases and forms, cut short or made longer,
            // and random text.
            let keys = [refresh.key, id.key, account.key, metadata.key]
            var candidates = keys + keys.map { $0.uppercased() } + keys.map { $0.decomposedStringWithCanonicalMapping }
                + keys.map { $0.precomposedStringWithCanonicalMapping } + keys.map { String($0.dropLast()) } + keys.map { $0 + "-" }
            candidates.append(parts.joined(separator: "-"))
            candidates.append(Self.text(&generator))
            for candidate in candidates {
                #expect(refresh.hasKey(candidate) == (candidate == refresh.key), "\(parts) \(candidate.debugDescription)")
                #expect(id.hasKey(candidate) == (candidate == id.key), "\(parts) \(candidate.debugDescription)")
                #expect(account.hasKey(candidate) == (candidate == account.key), "\(parts) \(candidate.debugDescription)")
                #expect(metadata.hasKey(candidate) == (candidate == metadata.key), "\(parts) \(candidate.debugDescription)")
                if candidate == id.key { equal += 1 }
            }
        }
        #expect(equal > 10_000)  // each ID token key, and its forms equal to it, at least
        #expect(RefreshTokenEntry(homeAccountID: "H.T", environment: "Login.Example", clientID: "C", secret: "s").hasKey("h.t-login.example-refreshtoken-c--"))
        #expect(!RefreshTokenEntry(homeAccountID: "H.T", environment: "Login.Example", clientID: "C", secret: "s").hasKey("h.t-login.example-refreshtoken-c-"))
    }
}
