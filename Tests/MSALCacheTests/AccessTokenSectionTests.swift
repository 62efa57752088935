import Foundation
@testable import MSALCache
import MSALCore
import MSALTestSupport
import Testing

/// `AccessTokenSection` keeps no key that is its entry's own, and must behave exactly as a
/// `[String: AccessTokenEntry]` keyed by the stored key: checked against one, operation by operation,
/// with identifiers in other cases, keys of other MSALs, non-ASCII and canonically equivalent
/// spellings, and parts whose `-` make two different entries share one key.
@Suite("AccessTokenSection")
struct AccessTokenSectionTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    static func entry(home: String, environment: String = "login.microsoftonline.com", realm: String = "utid", target: String, secret: String) -> AccessTokenEntry {
        AccessTokenEntry(
            homeAccountID: home, environment: environment, clientID: "client", realm: realm, target: target,
            secret: secret, cachedAt: t0, expiresOn: t0.addingTimeInterval(60))
    }

    /// Entries whose keys collide or nearly do: case, `-` placement, non-ASCII (composed and not,
    /// a Kelvin sign that lowercases to ASCII `k`), targets of other lengths.
    static let shapes: [(home: String, environment: String, target: String)] = [
        ("uid.utid", "login.microsoftonline.com", "User.Read"),
        ("UID.UTID", "login.microsoftonline.com", "user.read"),  // same key as the first
        ("uid.utid", "login.microsoftonline.com", "User.Read Mail.Read"),
        ("a-b", "c", "x"),
        ("a", "b-c", "x"),  // same key as the one before: "a-b-c-accesstoken-…"
        ("caf\u{E9}.utid", "login.microsoftonline.com", "x"),
        ("cafe\u{301}.utid", "login.microsoftonline.com", "x"),  // canonically equivalent to the one before
        ("\u{212A}elvin.utid", "login.microsoftonline.com", "x"),  // lowercases to "kelvin.utid"
        ("kelvin.utid", "login.microsoftonline.com", "x"),
        ("uid.utid", "login.microsoftonline.com", "https://graph.microsoft.com/.default"),
    ]

    @Test("Random stores, replacements and removals agree with a dictionary keyed by the stored key (seeded)")
    func behavesAsADictionary() {
        var random = SplitMix64(seed: 5)
        var section = AccessTokenSection()
        var reference: [String: AccessTokenEntry] = [:]
        for step in 0 ..< 2_000 {
            let shape = Self.shapes[Int(random.next() % UInt64(Self.shapes.count))]
            let entry = Self.entry(home: shape.home, environment: shape.environment, target: shape.target, secret: "AT-\(step)")
            let key: String
            switch random.next() % 4 {
            case 0: key = "foreign-key-\(random.next() % 5)"  // a key another MSAL wrote
            case 1: key = entry.key.uppercased()  // not the entry's own: stored as given
            default: key = entry.key
            }
            switch random.next() % 5 {
            case 0:
                #expect(section.removeValue(forKey: key) == reference.removeValue(forKey: key))
            case 1:
                section[key] = nil
                reference[key] = nil
            default:
                section[key] = entry
                reference[key] = entry
            }
            #expect(section.count == reference.count)
        }
        #expect(section == AccessTokenSection(reference))
        #expect(Dictionary(uniqueKeysWithValues: section.map { ($0.key, $0.value) }) == reference)
        #expect(Set(section.keys) == Set(reference.keys))
        for key in reference.keys { #expect(section[key] == reference[key]) }
        for shape in Self.shapes {
            let probe = Self.entry(home: shape.home, environment: shape.environment, target: shape.target, secret: "")
            #expect(section[probe.key] == reference[probe.key])
        }
    }

    @Test("A key is found however a caller spells it as a string: canonically equivalent keys are one key")
    func canonicalEquivalence() {
        let composed = Self.entry(home: "caf\u{E9}.utid", target: "x", secret: "AT-1")
        var section = AccessTokenSection()
        section[composed.key] = composed
        let decomposedKey = composed.key.replacingOccurrences(of: "\u{E9}", with: "e\u{301}")
        #expect(decomposedKey.utf8.count != composed.key.utf8.count && decomposedKey == composed.key)
        #expect(section[decomposedKey]?.secret == "AT-1")
        var reference: [String: AccessTokenEntry] = [composed.key: composed]
        section[decomposedKey] = Self.entry(home: "cafe\u{301}.utid", target: "x", secret: "AT-2")
        reference[decomposedKey] = section[decomposedKey]
        #expect(section.count == 1 && reference.count == 1 && section[composed.key]?.secret == "AT-2")
        // Two different entries whose joined fields are one key replace each other, as in a dictionary.
        let first = Self.entry(home: "a-b", environment: "c", target: "x", secret: "AT-a")
        let second = Self.entry(home: "a", environment: "b-c", target: "x", secret: "AT-b")
        #expect(first.key == second.key)
        section[first.key] = first
        section[second.key] = second
        #expect(section.count == 2 && section[first.key]?.secret == "AT-b")
    }

    @Test("A key that is the entry's own is not kept; another key is, as given")
    func keepsOnlyForeignKeys() {
        var section = AccessTokenSection()
        for index in 0 ..< 50 {
            let entry = Self.entry(home: "UID-\(index).utid", target: "User.Read", secret: "AT-\(index)")
            if index % 10 == 0 {
                section["written-by-another-msal-\(index)"] = entry
            } else if index % 2 == 0 {
                section.store(entry)
            } else {
                section[entry.key] = entry
            }
        }
        #expect(section.count == 50 && section.foreignKeyCount == 5)
        #expect(Set(section.keys).isSuperset(of: (0 ..< 50).filter { $0 % 10 == 0 }.map { "written-by-another-msal-\($0)" }))
        section[Self.entry(home: "UID-1.utid", target: "User.Read", secret: "").key.uppercased()] = Self.entry(home: "UID-1.utid", target: "User.Read", secret: "AT-up")
        #expect(section.count == 51 && section.foreignKeyCount == 6)  // a key in other case is another key
    }

    @Test("A key in another Unicode form than the entry's fields is kept as written, and found under either form")
    func otherUnicodeFormKept() throws {
        let entry = Self.entry(home: "uid.utid", realm: "caf\u{E9}-tenant", target: "x", secret: "AT-1")  // fields in NFC
        let decomposed = entry.key.replacingOccurrences(of: "\u{E9}", with: "e\u{301}")  // the key in NFD
        #expect(decomposed == entry.key && !decomposed.utf8.elementsEqual(entry.key.utf8))
        var section = AccessTokenSection()
        section[decomposed] = entry
        #expect(section.foreignKeyCount == 1)
        #expect(section.keys.count == 1 && section.keys[0].utf8.elementsEqual(decomposed.utf8))
        #expect(section[entry.key]?.secret == "AT-1" && section[decomposed]?.secret == "AT-1")
        // Written back as MSAL JSON, the key keeps its bytes.
        var contents = TokenCacheContents()
        contents.accessTokens = section
        let json = try contents.msalJSON()
        #expect(json.range(of: Data(decomposed.utf8)) != nil && json.range(of: Data(entry.key.utf8)) == nil)
        let reread = try TokenCacheContents(msalJSON: contents.msalJSON())
        #expect(reread.accessTokens.keys.count == 1 && reread.accessTokens.keys[0].utf8.elementsEqual(decomposed.utf8))
    }

    @Test("Literals, equality and the empty section")
    func literalsAndEquality() {
        let a = Self.entry(home: "a.t", target: "x", secret: "AT-a"), b = Self.entry(home: "b.t", target: "x", secret: "AT-b")
        let section: AccessTokenSection = [a.key: a, "other-msal-key": b]
        #expect(section.count == 2 && section["other-msal-key"] == b && section[a.key] == a)
        #expect(section != [a.key: a, "other-msal-key": a])  // same keys, another entry
        #expect(section != [a.key: a, b.key: b])  // same entries, another key
        #expect(AccessTokenSection().isEmpty && AccessTokenSection().first == nil && section.first != nil)
    }
}
