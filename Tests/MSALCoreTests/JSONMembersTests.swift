import Foundation
@testable import MSALCore
import MSALTestSupport
import Testing

/// `JSONValue.forEachMember(ofObjectIn:_:)` reads an object member by member (how token responses
/// and ID tokens are read); these tests hold it to `JSONValue(parsing:)`, the dictionary it replaces.
@Suite("An object read member by member gives what the parsed dictionary holds")
struct JSONMembersTests {
    /// Names that repeat often, so documents have repeated members.
    static let names = ["iss", "sub", "aud", "exp", "a", "", "é", "access_token", "x\\u0000y", "nested"]

    /// Random JSON text for a value, nested up to `depth`.
    static func value(_ random: inout SplitMix64, depth: Int) -> String {
        switch Int.random(in: 0..<(depth > 0 ? 9 : 6), using: &random) {
        case 0: return "null"
        case 1: return Bool.random(using: &random) ? "true" : "false"
        case 2: return String(Int.random(in: -1_000_000...1_000_000, using: &random))
        case 3: return "\(Double.random(in: -1e9...1e9, using: &random))"
        case 4: return #""\#(["", "v", "3600", "é😀", "a\\\"b", "1e3"].randomElement(using: &random)!)""#
        case 5: return #""\#(String(repeating: "t", count: Int.random(in: 0...40, using: &random)))""#
        case 6, 7: return object(&random, depth: depth - 1)
        default:
            let count = Int.random(in: 0...4, using: &random)
            return "[" + (0..<count).map { _ in value(&random, depth: depth - 1) }.joined(separator: ",") + "]"
        }
    }

    /// Random JSON text for an object, nested up to `depth`.
    static func object(_ random: inout SplitMix64, depth: Int) -> String {
        let count = Int.random(in: 0...8, using: &random)
        let members = (0..<count).map { _ in
            #""\#(names.randomElement(using: &random)!)":\#(value(&random, depth: depth))"#
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// The members as a dictionary, each member overwriting an earlier one of the same name.
    static func membersAsDictionary(_ data: Data) -> [String: JSONValue]? {
        var dictionary: [String: JSONValue] = [:]
        var strings: [String: String?] = [:]
        var numbers: [String: Double?] = [:]
        let isObject = JSONValue.forEachMember(ofObjectIn: data) { name, value in
            dictionary[name.string] = value.value
            strings[name.string] = .some(value.stringValue)
            numbers[name.string] = .some(value.doubleValue)
        }
        guard isObject else { return nil }
        // The readers of one member agree with its whole value.
        for (name, value) in dictionary {
            #expect(strings[name]! == value.stringValue, "\(name)")
            #expect(numbers[name]! == value.doubleValue, "\(name)")
        }
        return dictionary
    }

    @Test("Seeded random objects, nested, with repeated names: the members give the parsed dictionary (the last of repeated names)")
    func randomObjects() {
        var random = SplitMix64(seed: 20_261_202)
        var repeated = 0
        for _ in 0..<3_000 {
            let text = Self.object(&random, depth: 3)
            let data = Data(text.utf8)
            let expected = JSONValue(parsing: data)?.objectValue
            #expect(expected != nil, "\(text)")
            #expect(Self.membersAsDictionary(data) == expected, "\(text)")
            var names = 0
            _ = JSONValue.forEachMember(ofObjectIn: data) { _, _ in names += 1 }
            if names > expected?.count ?? 0 { repeated += 1 }
        }
        #expect(repeated > 500)  // the names repeat often enough to test the last-wins reading
    }

    @Test("A member name compares with a literal byte for byte")
    func names() {
        var seen: [String] = []
        _ = JSONValue.forEachMember(ofObjectIn: Data(#"{"iss":1,"Iss":2,"is":3,"":4,"iss\u0000":5,"é":6}"#.utf8)) { name, _ in
            if name == "iss" { seen.append("iss") }
            if name == "" { seen.append("empty") }
            if name == "é" { seen.append("é") }
            if name == "is" { seen.append("is") }
        }
        #expect(seen == ["iss", "is", "empty", "é"])
    }

    @Test("Text that is not an object (a scalar, an array, not JSON, empty) calls nothing and answers false; what simdjson does not take is read through Foundation")
    func notObjectsAndFallback() {
        for text in ["", "1", "[]", #"[{"a":1}]"#, #""s""#, "null", "{", #"{"a":}"#, "nope"] {
            var calls = 0
            #expect(!JSONValue.forEachMember(ofObjectIn: Data(text.utf8)) { _, _ in calls += 1 }, "\(text)")
            #expect(calls == 0, "\(text)")
        }
        // A byte order mark and an integer beyond 64 bits: simdjson refuses both, Foundation reads them.
        for text in ["\u{FEFF}{\"a\":1,\"b\":[2]}", #"{"a":123456789012345678901234567890,"b":"x"}"#] {
            let data = Data(text.utf8)
            #expect(JSONValue.parsedBySimdJSON(data) == nil)
            let expected = JSONValue(parsingWithFoundation: data)?.objectValue
            #expect(expected != nil)
            #expect(Self.membersAsDictionary(data) == expected, "\(text)")
        }
    }

    @Test("Seeded random claims: every modeled claim of IDTokenClaims is what the dictionary of all claims gives, and all is the parsed payload")
    func idTokenClaims() throws {
        var random = SplitMix64(seed: 7)
        let claimNames = ["iss", "sub", "aud", "exp", "iat", "nonce", "oid", "tid", "preferred_username", "upn", "email",
                          "name", "given_name", "family_name", "other"]
        let values = [#""v""#, #""""#, #""1764673600""#, "1764673600", "1.5", "null", "true", #"["c","d",3]"#, #"{"x":"y"}"#, #"["only"]"#]
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...12, using: &random)
            let members = (0..<count).map { _ in #""\#(claimNames.randomElement(using: &random)!)":\#(values.randomElement(using: &random)!)"# }
            let payload = Data(("{" + members.joined(separator: ",") + "}").utf8)
            let jwt = "e30." + Base64URL.encode(payload) + ".sig"
            let claims = try IDTokenClaims(jwt: jwt)
            let all = try #require(JSONValue(parsing: payload)?.objectValue)
            let text = String(decoding: payload, as: UTF8.self)
            #expect(claims.issuer == all["iss"]?.stringValue, "\(text)")
            #expect(claims.subject == all["sub"]?.stringValue, "\(text)")
            let audiences = all["aud"]?.stringValue.map { [$0] } ?? all["aud"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(claims.audiences == audiences, "\(text)")
            #expect(claims.expiresOn == all["exp"]?.doubleValue.map(Date.init(timeIntervalSince1970:)), "\(text)")
            #expect(claims.issuedAt == all["iat"]?.doubleValue.map(Date.init(timeIntervalSince1970:)), "\(text)")
            #expect(claims.nonce == all["nonce"]?.stringValue, "\(text)")
            #expect(claims.objectID == all["oid"]?.stringValue, "\(text)")
            #expect(claims.tenantID == all["tid"]?.stringValue, "\(text)")
            #expect(claims.preferredUsername == (all["preferred_username"]?.stringValue ?? all["upn"]?.stringValue ?? all["email"]?.stringValue), "\(text)")
            #expect(claims.name == all["name"]?.stringValue, "\(text)")
            #expect(claims.givenName == all["given_name"]?.stringValue, "\(text)")
            #expect(claims.familyName == all["family_name"]?.stringValue, "\(text)")
            #expect(claims.email == all["email"]?.stringValue, "\(text)")
            #expect(claims.all == all, "\(text)")
        }
    }

    @Test("Claims are equal and hash alike exactly when their JWTs are equal; all is the payload's claims, read again alike")
    func claimsEquality() throws {
        let jwt = "e30." + Base64URL.encode(Data(#"{"sub":"s","name":"n"}"#.utf8)) + ".sig"
        let a = try IDTokenClaims(jwt: jwt), b = try IDTokenClaims(jwt: jwt)
        let c = try IDTokenClaims(jwt: "e30." + Base64URL.encode(Data(#"{"sub":"s","name":"n"}"#.utf8)) + ".other")
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(a != c)  // the same claims under another signature: another token
        #expect(a.all == ["sub": .string("s"), "name": .string("n")])
        #expect(b.all == a.all && a.all["sub"] == .string("s"))  // read a second time, from what was kept
    }

    @Test("Base64URL decodes every length and byte as Foundation decodes the standard alphabet, from a String and from a Substring")
    func base64URL() {
        var random = SplitMix64(seed: 99)
        for length in 0..<200 {
            let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &random) })
            let encoded = Base64URL.encode(bytes)
            #expect(!encoded.contains("=") && !encoded.contains("+") && !encoded.contains("/"))
            #expect(Base64URL.decode(encoded) == bytes, "\(length)")
            let framed = "x." + encoded + ".y"
            let start = framed.index(framed.startIndex, offsetBy: 2), end = framed.index(framed.endIndex, offsetBy: -2)
            #expect(Base64URL.decode(framed[start..<end]) == bytes, "\(length)")
            // The standard alphabet and padding are taken too, as Foundation takes them.
            #expect(Base64URL.decode(bytes.base64EncodedString()) == bytes, "\(length)")
        }
        for invalid in ["a", "abcde", "ab$d"] { #expect(Base64URL.decode(invalid) == nil, "\(invalid)") }
    }
}
