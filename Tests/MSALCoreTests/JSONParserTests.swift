import Foundation
@testable import MSALCore
import Testing

/// The byte parser behind `JSONValue(parsing:)` must give what `JSONSerialization` gives, or leave
/// the document to it: both paths are compared on hand-picked and on generated documents.
@Suite("JSON parser")
struct JSONParserTests {
    /// Equal, with numbers compared bit for bit (so `-0` and `0` differ).
    static func same(_ lhs: JSONValue?, _ rhs: JSONValue?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): return true
        case let (.number(a)?, .number(b)?): return a.bitPattern == b.bitPattern
        case let (.array(a)?, .array(b)?): return a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        case let (.object(a)?, .object(b)?):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map { same(value, $0) } ?? false }
        case let (a?, b?): return a == b
        default: return false
        }
    }

    static let documents: [String] = [
        #"{}"#, #"[]"#, #""text""#, "1", "-0", "0", "1.5", "-1.25E-3", "1e10", "9007199254740993",
        "12345678901234567890", "1e400", "true", "false", "null", " \n\t{ \"a\" : [1, 2.5, true, null, \"x\"] } \r\n",
        #"{"a":{"b":{"c":[{"d":"e"}]}}}"#, #"{"s":"\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r"}"#, #"{"k":"caf\u00E9"}"#,
        #"{"AccessToken":{"k-1":{"secret":"abc","expires_on":"1700000000","extended_expires_on":"1700003600"}}}"#,
        // Rejected by both, or left to JSONSerialization:
        #"{"a":1,"a":2}"#, #"{"lone":"\ud800"}"#, #"{"low":"\udc00x"}"#, "{\"ctl\":\"a\u{01}b\"}", #"[1,]"#, #"{"a":1,}"#,
        "01", "-", "1.", ".5", "1e", "+1", "[1 2]", #"{"a" 1}"#, #"{a:1}"#, "tru", "nul", "", " ", "[", "{", #"""#,
        #"{"a":"\x"}"#, #"{"a":"\u12"}"#, "\u{FEFF}{}", "[1]x",
    ]

    @Test("Hand-picked documents: the same value as JSONSerialization, or nil for both")
    func handPicked() {
        for text in Self.documents {
            let data = Data(text.utf8)
            let reference = JSONValue(foundationParsing: data)
            if let fast = JSONParser.parse(data) {
                #expect(Self.same(fast, reference), "\(text)")
            }
            #expect(Self.same(JSONValue(parsing: data), reference), "\(text)")
        }
    }

    @Test("The byte parser reads plain documents itself (the cache files' shape)")
    func acceptsPlainDocuments() {
        for text in [#"{"a":[1,2.5,true,null,"x"],"b":{"c":"\u00e9\n"}}"#, "-0", "123", #""s""#] {
            #expect(JSONParser.parse(Data(text.utf8)) != nil, "\(text)")
        }
        // -0 is an integer: JSONSerialization gives 0, and so does the parser.
        #expect(Self.same(JSONParser.parse(Data("-0".utf8)), .number(0)))
    }

    @Test("Invalid UTF-8, UTF-16 and documents nested deeper than the limit go to JSONSerialization")
    func leftToFoundation() {
        let invalidUTF8 = Data([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D])  // {"a":"\xFF"}
        #expect(JSONParser.parse(invalidUTF8) == nil)
        #expect(Self.same(JSONValue(parsing: invalidUTF8), JSONValue(foundationParsing: invalidUTF8)))
        let utf16 = #"{"a":1}"#.data(using: .utf16)!
        #expect(JSONParser.parse(utf16) == nil)
        #expect(Self.same(JSONValue(parsing: utf16), JSONValue(foundationParsing: utf16)))
        let deep = Data((String(repeating: "[", count: 600) + String(repeating: "]", count: 600)).utf8)
        #expect(JSONParser.parse(deep) == nil)
        #expect(Self.same(JSONValue(parsing: deep), JSONValue(foundationParsing: deep)))
    }

    @Test("Generated documents and their mutations: both paths agree (seeded)")
    func generated() {
        var state: UInt64 = 0x5EED_1234
        func next() -> UInt64 {  // SplitMix64
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let pieces = ["\"a\"", "\"\\u00e9\"", "\"\\n\"", "0", "-1", "2.5e3", "true", "false", "null", "\"x y\"", "1e-2", "-0.0"]
        func value(_ depth: Int) -> String {
            switch depth > 3 ? 0 : next() % 4 {
            case 1: return "[" + (0..<Int(next() % 4)).map { _ in value(depth + 1) }.joined(separator: ",") + "]"
            case 2: return "{" + (0..<Int(next() % 4)).map { "\"k\($0)\":" + value(depth + 1) }.joined(separator: ",") + "}"
            default: return pieces[Int(next() % UInt64(pieces.count))]
            }
        }
        let noise: [UInt8] = Array(",:[]{}\"\\ 0eE.-+tu".utf8)
        for _ in 0..<500 {
            var bytes = Array(value(0).utf8)
            if next() % 2 == 0, !bytes.isEmpty {  // a mutation: replace, drop or insert one byte
                let at = Int(next() % UInt64(bytes.count))
                switch next() % 3 {
                case 0: bytes[at] = noise[Int(next() % UInt64(noise.count))]
                case 1: bytes.remove(at: at)
                default: bytes.insert(noise[Int(next() % UInt64(noise.count))], at: at)
                }
            }
            let data = Data(bytes)
            #expect(Self.same(JSONValue(parsing: data), JSONValue(foundationParsing: data)), "\(String(decoding: bytes, as: UTF8.self))")
        }
    }
}
