package import Foundation
import CSimdJSON

/// The name of a member of a JSON object, as UTF-8 bytes: valid only inside the closure of
/// ``JSONValue/forEachMember(ofObjectIn:_:)`` that received it.
package struct JSONMemberName {
    fileprivate let bytes: UnsafeRawBufferPointer

    /// Whether the name is exactly `literal` (byte for byte: member names are case-sensitive,
    /// RFC 8259 §8.3).
    package static func == (name: JSONMemberName, literal: StaticString) -> Bool {
        literal.withUTF8Buffer { expected in
            expected.count == name.bytes.count
                && (expected.isEmpty || memcmp(expected.baseAddress!, name.bytes.baseAddress!, expected.count) == 0)
        }
    }

    /// The name as a `String`.
    package var string: String { String(decoding: bytes, as: UTF8.self) }
}

/// The value of a member of a JSON object, read on demand: valid only inside the closure of
/// ``JSONValue/forEachMember(ofObjectIn:_:)`` that received it.
package struct JSONMemberValue {
    fileprivate enum Source {
        /// The value at an index of simdjson's values.
        case parsed(UnsafePointer<msal_json_value>, Int)
        /// A value Foundation's parser read.
        case value(JSONValue)
    }

    fileprivate let source: Source

    /// The string, if this is a string (``JSONValue/stringValue``).
    package var stringValue: String? {
        switch source {
        case .parsed(let values, let index):
            let value = values[index]
            return value.kind == Int32(MSAL_JSON_STRING) ? JSONValue.string(value) : nil
        case .value(let value): return value.stringValue
        }
    }

    /// The number, or a string that parses as one (``JSONValue/doubleValue``).
    package var doubleValue: Double? {
        switch source {
        case .parsed(let values, let index):
            let value = values[index]
            switch value.kind {
            case Int32(MSAL_JSON_NUMBER): return value.number
            case Int32(MSAL_JSON_STRING): return Double(JSONValue.string(value))
            default: return nil
            }
        case .value(let value): return value.doubleValue
        }
    }

    /// The whole value (with its elements or members).
    package var value: JSONValue {
        switch source {
        case .parsed(let values, var index): return JSONValue(parsed: values, at: &index)
        case .value(let value): return value
        }
    }
}

extension JSONValue {
    /// Reads the members of the JSON object in `data` one at a time, without building a dictionary:
    /// how a token response and an ID token's claims are read, taking only the fields they model.
    ///
    /// The text is parsed as ``init(parsing:)`` parses it (simdjson, else Foundation's
    /// `JSONSerialization`). simdjson's members come in document order, repeated names included, so
    /// a reader that lets each member overwrite what an earlier one of the same name gave sees what
    /// ``init(parsing:)``'s dictionary holds (the last of repeated names); Foundation's come in no
    /// particular order, each name once.
    /// - Parameters:
    ///   - data: JSON text.
    ///   - body: called with each member's name and value; neither may escape the call, and the
    ///     call must not parse JSON (``init(parsing:)``, ``IDTokenClaims/all``, this function): the
    ///     values it reads belong to the thread's parser, which the next parse reuses.
    /// - Returns: `false`, having called `body` for no member, when `data` is not JSON or its top
    ///   level is not an object.
    package static func forEachMember(ofObjectIn data: Data, _ body: (JSONMemberName, JSONMemberValue) -> Void) -> Bool {
        let parsed: Bool? = withSimdJSONValues(of: data) { values in
            guard values[0].kind == Int32(MSAL_JSON_OBJECT) else { return false }
            var position = 1
            for _ in 0..<values[0].count {
                let name = values[position]
                let value = values[position + 1]
                body(JSONMemberName(bytes: UnsafeRawBufferPointer(start: name.bytes, count: name.length)),
                     JSONMemberValue(source: .parsed(values, position + 1)))
                // Past the name, the value, and the value's elements or members.
                let kind = value.kind
                position += 2 + (kind == Int32(MSAL_JSON_ARRAY) || kind == Int32(MSAL_JSON_OBJECT) ? value.length : 0)
            }
            return true
        }
        if let parsed { return parsed }
        guard case .object(let object)? = JSONValue(parsingWithFoundation: data) else { return false }
        for (name, value) in object {
            var name = name
            name.withUTF8 { body(JSONMemberName(bytes: UnsafeRawBufferPointer($0)), JSONMemberValue(source: .value(value))) }
        }
        return true
    }
}
