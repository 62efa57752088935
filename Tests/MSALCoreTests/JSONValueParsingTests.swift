import Foundation
import MSALCore
import Testing

/// `JSONValue(parsing:)` reads JSON with simdjson and falls back to Foundation's
/// `JSONSerialization` for what simdjson does not take; these tests hold the two to the same answers.
@Suite("JSON is parsed by simdjson, with Foundation for what simdjson does not take")
struct JSONValueParsingTests {
    /// MSAL Python's caches (the interop fixtures) and the cache tests' own fixtures.
    static func fixtureDocuments() throws -> [(name: String, data: Data)] {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let folders = [tests.appendingPathComponent("MSALCacheTests/Fixtures")]
        var documents: [(String, Data)] = []
        for folder in folders {
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() where name.hasSuffix(".json") {
                documents.append((name, try Data(contentsOf: folder.appendingPathComponent(name))))
            }
        }
        return documents
    }

    /// Documents with the parts a parser can read differently: escapes, non-ASCII text, NUL, numbers
    /// in every form, nesting, repeated keys, scalars at the top level, whitespace.
    static let handWritten: [String] = [
        #"{"a":1,"a":2}"#, "-0", "-0.0", "0.1", "1e-400", "1.5e3", "-2", "2E+2", "12345678901234567890", "9007199254740993",
        "-9223372036854775808", "18446744073709551615", "123.456e-7", "5e-324", "1.7976931348623157e308",
        #""\u0000x""#, #""\"\\\/\b\f\n\r\t""#, #"{"k":"\u00e9\ud83d\ude00 é 😀 \u4e2d"}"#, " \n\t[ 1 , [ ] , { } , \"\" ] \r\n",
        "true", "false", "null", "[]", "{}", #"[[[[{"deep":[null,true,false]}]]]]"#,
        #"{"token_type":"Bearer","expires_in":3599,"ext_expires_in":"3599","foci":"1","scope":"a b","amr":["pwd","mfa"]}"#,
    ]

    @Test("simdjson takes the fixtures and the hand-written documents, and reads each as Foundation does")
    func sameAsFoundation() throws {
        var documents = try Self.fixtureDocuments()
        #expect(documents.count >= 4)
        for text in Self.handWritten { documents.append((text, Data(text.utf8))) }
        for (name, data) in documents {
            let fast = JSONValue.parsedBySimdJSON(data)
            let foundation = JSONValue(parsingWithFoundation: data)
            #expect(fast != nil, "simdjson did not take \(name)")
            #expect(fast == foundation, "\(name)")
            #expect(JSONValue(parsing: data) == foundation, "\(name)")
        }
    }

    @Test("Random numbers, in integer, decimal and exponent form, are read as the nearest Double (as Swift's Double(String) reads them)")
    func numbers() throws {
        var generator = SystemRandomNumberGenerator()
        var texts: [String] = []
        for _ in 0..<2_000 {
            texts.append(String(Int64.random(in: .min ... .max, using: &generator)))
            texts.append(String(UInt64.random(in: 0 ... .max, using: &generator)))
            let double = Double(bitPattern: UInt64.random(in: 0 ... .max, using: &generator))
            if double.isFinite { texts.append("\(double)") }
            texts.append(String(format: "%.17g", Double.random(in: -1e6...1e6, using: &generator)))
            texts.append("\(Int.random(in: 1...999_999, using: &generator))e\(Int.random(in: -320...300, using: &generator))")
        }
        var differing: [String] = []
        for text in texts {
            let expected = try #require(Double(text), "\(text)")
            if JSONValue(parsing: Data("[\(text)]".utf8)) != .array([.number(expected)]) { differing.append(text) }
        }
        #expect(differing.isEmpty, "\(differing.prefix(10))")
    }

    @Test("Text simdjson does not take goes to Foundation: a byte order mark, UTF-16, an integer beyond 64 bits, nesting deeper than 512")
    func fallback() throws {
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        let documents: [Data] = [
            Data("\u{FEFF}{\"a\":1}".utf8),
            try #require(#"{"a":"é"}"#.data(using: .utf16)),
            Data("123456789012345678901234567890".utf8),
            Data("-9223372036854775809".utf8),
            Data(deep.utf8),
        ]
        for data in documents {
            #expect(JSONValue.parsedBySimdJSON(data) == nil, "\(data.count) bytes")
            #expect(JSONValue(parsing: data) == JSONValue(parsingWithFoundation: data))
        }
        // Foundation reads the first four (the deep one is past its own limit, or not: it decides).
        #expect(JSONValue(parsing: documents[0]) == .object(["a": .number(1)]))
        #expect(JSONValue(parsing: documents[1]) == .object(["a": .string("é")]))
        #expect(JSONValue(parsing: documents[2])?.doubleValue == 1.2345678901234568e29)
        #expect(JSONValue(parsing: documents[3])?.doubleValue == -9.223372036854775809e18)
    }

    @Test("Text that is not JSON, or not UTF-8, is refused; what Foundation alone takes (a trailing comma) it still decides")
    func notJSON() {
        let refused: [[UInt8]] = [
            [], Array("{".utf8), Array("{\"a\":}".utf8), Array("NaN".utf8), Array("1 2".utf8),
            Array("{\"a\":1}x".utf8), Array("'a'".utf8), [0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], Array(#""\ud800""#.utf8),
        ]
        for bytes in refused {
            #expect(JSONValue.parsedBySimdJSON(Data(bytes)) == nil, "\(bytes)")
            #expect(JSONValue(parsing: Data(bytes)) == nil, "\(bytes)")
        }
        // Foundation's JSONSerialization on Linux takes a trailing comma; simdjson does not, so the
        // answer stays what it was before simdjson.
        for text in ["[1,]", #"{"a":1,}"#] {
            let data = Data(text.utf8)
            #expect(JSONValue.parsedBySimdJSON(data) == nil, "\(text)")
            #expect(JSONValue(parsing: data) == JSONValue(parsingWithFoundation: data), "\(text)")
        }
        #expect(JSONValue(parsing: Data("[1,]".utf8)) == .array([.number(1)]))
    }

    @Test("A document over a megabyte, then small ones: each is read whole (the thread's parser gives its memory back in between)")
    func largeThenSmall() throws {
        var members: [String] = []
        for index in 0..<20_000 { members.append(#""key-\#(index)":{"secret":"\#(String(repeating: "x", count: 60))","n":\#(index)}"#) }
        let large = Data("{\(members.joined(separator: ","))}".utf8)
        #expect(large.count > 1 << 20)
        let value = try #require(JSONValue.parsedBySimdJSON(large)?.objectValue)
        #expect(value.count == 20_000)
        #expect(value["key-19999"]?.objectValue?["n"] == .number(19_999))
        #expect(JSONValue.parsedBySimdJSON(Data(#"{"small":[1,"two"]}"#.utf8)) == .object(["small": .array([.number(1), .string("two")])]))
        #expect(JSONValue.parsedBySimdJSON(large)?.objectValue?.count == 20_000)
    }

    @Test("Threads parsing at once each get their own document's values")
    func concurrent() async {
        let failures = await withTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var failures = 0
                    for round in 0..<300 {
                        let text = #"{"task":\#(task),"round":\#(round),"name":"t\#(task)-r\#(round)","list":[\#(task),\#(round)]}"#
                        let expected: JSONValue = .object([
                            "task": .number(Double(task)), "round": .number(Double(round)), "name": .string("t\(task)-r\(round)"),
                            "list": .array([.number(Double(task)), .number(Double(round))]),
                        ])
                        if JSONValue(parsing: Data(text.utf8)) != expected { failures += 1 }
                    }
                    return failures
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 0)
    }
}
