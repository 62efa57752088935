import MSALCore
import Testing

@Suite("Lowercasing identifiers and scopes, and the lowercased scopes of a set")
struct ASCIILowercasingTests {
    @Test("lowercasedIfNeeded() equals lowercased(): ASCII short and long, capitals anywhere or none, and non-ASCII", arguments: [
        "", "a", "A", "User.Read", "https://graph.microsoft.com/User.Read", "ALLCAPS-SCOPE-0123456789",
        "already-lower-case-and-longer-than-fifteen", "Z", "@[`{", "mixed/Path/With.Dots_and-Dashes~X",
        "ÄBC", "Straße/USER.Read", "İstanbul", "ΣΊΣΥΦΟΣ", "café", "already lower ü",
    ])
    func matchesLowercased(string: String) {
        #expect(string.lowercasedIfNeeded() == string.lowercased())
    }

    @Test("isLowercaseASCII reads eight bytes at a time and answers as a byte-by-byte check: every boundary byte at every position of strings of 0 to 19 bytes")
    func wordAtATimeCheck() {
        // The bytes around the ranges the check tells apart: below and at `A`, at and above `Z`,
        // the small letters, the last ASCII byte and the first non-ASCII ones.
        let boundaries: [UInt8] = [0x00, 0x20, 0x40, 0x41, 0x4D, 0x5A, 0x5B, 0x60, 0x61, 0x7A, 0x7B, 0x7F, 0x80, 0xC3, 0xFF]
        var checked = 0
        for length in 0..<20 {
            for position in 0..<max(length, 1) {
                for byte in boundaries {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    if length > 0 { bytes[position] = byte }
                    let expected = bytes.allSatisfy { $0 < 0x80 && !($0 >= 0x41 && $0 <= 0x5A) }
                    #expect(bytes.withUnsafeBufferPointer { UInt8.isLowercaseASCII($0) } == expected, "\(bytes)")
                    checked += 1
                }
            }
        }
        #expect(checked == 15 * (1 + (1..<20).reduce(0, +)))
    }

    @Test("isLowercased(of:) answers as comparing with lowercased(): every boundary byte at every position, against a lowercase string of each length from 0 to 19")
    func lowercasedComparison() {
        // A request's realm or client ID (any case, maybe non-ASCII) against a partition's
        // (lowercase): the word-at-a-time comparison must agree with `lowercased()` and `==`.
        // (0x80 and 0xC3 alone are not UTF-8: the string gets U+FFFD there, a non-ASCII character.)
        let boundaries: [UInt8] = [0x00, 0x40, 0x41, 0x4D, 0x5A, 0x5B, 0x60, 0x61, 0x6D, 0x7A, 0x7B, 0x7F, 0x80, 0xC3]
        var checked = 0
        for length in 0..<20 {
            for position in 0..<max(length, 1) {
                for byte in boundaries {
                    var bytes = [UInt8](repeating: UInt8(ascii: "m"), count: length)
                    if length > 0 { bytes[position] = byte }
                    let given = String(decoding: bytes, as: UTF8.self)
                    for lowered in ["", String(repeating: "m", count: length), given.lowercased(),
                                    String(repeating: "m", count: length + 1), String(repeating: "m", count: max(0, length - 1))] {
                        #expect(lowered.isLowercased(of: given) == (lowered == given.lowercased()), "\(lowered) \(bytes)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == 14 * 5 * (1 + (1..<20).reduce(0, +)))
    }

    @Test("isLowercased(of:) lowercases non-ASCII as lowercased() does", arguments: [
        ("straße/user.read", "Straße/USER.Read", true), ("i̇stanbul", "İstanbul", true), ("istanbul", "İstanbul", false),
        ("café-tenant-0123456789", "CAFÉ-TENANT-0123456789", true), ("cafe-tenant-0123456789", "CAFÉ-TENANT-0123456789", false),
        ("σίσυφοσ", "ΣΊΣΥΦΟΣ", true), ("σίσυφος", "ΣΊΣΥΦΟΣ", false), ("k", "\u{212A}", true), ("\u{212A}", "k", false),
        // Canonically equivalent spellings are equal, as `==` has them (the lowercase side non-ASCII too).
        ("é-tenant", "E\u{301}-TENANT", true), ("e\u{301}-tenant", "É-TENANT", true), ("ab\u{37E}", "AB;", true), ("ab\u{37E}", "AB", false),
        // Non-ASCII on the lowercase side only, inside the first eight bytes and past them.
        ("abcdefg\u{37E}", "ABCDEFG;", true), ("abcdefghijklmno\u{37E}", "ABCDEFGHIJKLMNO;", true), ("abcdefgh\u{37E}x", "ABCDEFGH;Y", false),
    ])
    func lowercasedComparisonUnicode(lowered: String, given: String, expected: Bool) {
        #expect(lowered.isLowercased(of: given) == (lowered == given.lowercased()))
        #expect(lowered.isLowercased(of: given) == expected)
    }

    @Test("hasSameUTF8 tells canonically equivalent strings apart, and arrays of them", arguments: [
        ("K", "\u{212A}"), ("é", "e\u{301}"), ("a\u{301}\u{323}", "a\u{323}\u{301}"), (";", "\u{37E}"),
    ])
    func sameUTF8(pair: (String, String)) {
        #expect(pair.0 == pair.1)  // equal as Swift strings
        #expect(!pair.0.hasSameUTF8(as: pair.1) && !pair.1.hasSameUTF8(as: pair.0))
        #expect(pair.0.hasSameUTF8(as: String(decoding: Array(pair.0.utf8), as: UTF8.self)))
        #expect(!["x", pair.0].hasSameUTF8(as: ["x", pair.1]) && ["x", pair.0].hasSameUTF8(as: ["x", pair.0]))
        #expect(!["x"].hasSameUTF8(as: ["x", "y"]) && [String]().hasSameUTF8(as: []))
    }

    @Test("A string without a capital letter comes back as it is")
    func unchanged() {
        let lower = "https://graph.microsoft.com/user.read"
        #expect(lower.lowercasedIfNeeded() == lower)
        #expect(lower.lowercasedIfNeeded().utf8.count == lower.utf8.count)
    }

    @Test("forEachNormalized visits the lowercased scopes in normalized order")
    func forEachNormalized() throws {
        let set = try ScopeSet.validatedRequest(["Mail.Read", "https://Res.example/User.Read", "mail.read", "A.b"])
        var visited: [String] = []
        set.forEachNormalized { visited.append($0) }
        #expect(visited == set.normalized)
        #expect(visited == ["a.b", "https://res.example/user.read", "mail.read"])
    }
}
