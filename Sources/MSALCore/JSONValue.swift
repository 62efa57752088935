public import Foundation
import CSimdJSON

/// A JSON value, for claims and for fields swift-msal does not model but must keep.
public enum JSONValue: Sendable, Hashable, Codable {
    /// A string.
    case string(String)
    /// A number, kept as `Double` (JSON has one number type).
    case number(Double)
    /// `true` or `false`.
    case bool(Bool)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])
    /// `null`.
    case null

    /// Decodes any JSON value.
    /// - Throws: `DecodingError` when the input is not JSON.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Most likely first: every failed attempt throws, and throwing is what makes decoding slow.
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([String: JSONValue].self) { self = .object(value) }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else { self = .array(try container.decode([JSONValue].self)) }
    }

    /// Encodes the value as JSON.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }

    /// Parses JSON text (RFC 8259; a top-level scalar is allowed): every token response, ID token
    /// and JSON token cache is read through here.
    ///
    /// simdjson (Debian's `libsimdjson-dev`) parses UTF-8 text; text it does not take (a byte order
    /// mark, UTF-16 or UTF-32, an integer beyond 64 bits, nesting deeper than 512, or text that is not
    /// JSON) goes to Foundation's `JSONSerialization`, which decides. Where both take a text they give
    /// the same value (the last of repeated keys), except that simdjson reads each number as the
    /// nearest `Double`, as Swift's `Double(String)` and MSAL Python do, where Foundation's reading
    /// on Linux can be a unit or two in the last place off. simdjson is several times faster (a
    /// token response: 2.2 against 10.7 µs; an ID token's claims: 5.3 against 14–28 µs).
    /// - Returns: `nil` when `data` is not JSON.
    public init?(parsing data: Data) {
        guard let value = Self.parsedBySimdJSON(data) ?? JSONValue(parsingWithFoundation: data) else { return nil }
        self = value
    }

    /// `data` as Foundation's `JSONSerialization` reads it (what ``init(parsing:)`` falls back to).
    /// - Returns: `nil` when `data` is not JSON.
    package init?(parsingWithFoundation data: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]),
              let value = JSONValue(foundationObject: object) else { return nil }
        self = value
    }

    /// `data` parsed by simdjson (`CSimdJSON`), or `nil` when simdjson does not take it (see
    /// ``init(parsing:)``).
    package static func parsedBySimdJSON(_ data: Data) -> JSONValue? {
        withSimdJSONValues(of: data) { values in
            var position = 0
            return JSONValue(parsed: values, at: &position)
        }
    }

    /// Calls `body` with the values of `data` as `msal_json_parse` lists them (valid only during
    /// the call, which must not parse JSON itself: the thread's parser holds them).
    /// - Returns: what `body` returns, or `nil` when simdjson does not take `data`.
    static func withSimdJSONValues<R>(of data: Data, _ body: (UnsafePointer<msal_json_value>) -> R) -> R? {
        guard !data.isEmpty else { return nil }
        return data.withUnsafeBytes { (text: UnsafeRawBufferPointer) -> R? in
            guard let base = text.baseAddress else { return nil }
            var values: UnsafePointer<msal_json_value>?
            let count = msal_json_parse(base.assumingMemoryBound(to: CChar.self), text.count, &values)
            defer { msal_json_done() }
            guard count > 0, let values else { return nil }
            return body(values)
        }
    }

    /// The value at `position` of a document parsed by `msal_json_parse` (with its elements or
    /// members, which follow it); `position` moves past them.
    init(parsed values: UnsafePointer<msal_json_value>, at position: inout Int) {
        let value = values[position]
        position += 1
        switch value.kind {
        case Int32(MSAL_JSON_FALSE): self = .bool(false)
        case Int32(MSAL_JSON_TRUE): self = .bool(true)
        case Int32(MSAL_JSON_NUMBER): self = .number(value.number)
        case Int32(MSAL_JSON_STRING): self = .string(Self.string(value))
        case Int32(MSAL_JSON_ARRAY):
            var elements: [JSONValue] = []
            elements.reserveCapacity(Int(value.count))
            for _ in 0..<value.count { elements.append(JSONValue(parsed: values, at: &position)) }
            self = .array(elements)
        case Int32(MSAL_JSON_OBJECT):
            // Not `reserveCapacity`, whose unspecialized body looks the storage's type up at runtime.
            var members = [String: JSONValue](minimumCapacity: Int(value.count))
            for _ in 0..<value.count {
                let key = Self.string(values[position])
                position += 1
                members[key] = JSONValue(parsed: values, at: &position)
            }
            self = .object(members)
        default: self = .null
        }
    }

    /// A parsed string's bytes (valid UTF-8: simdjson validates the text) as a `String`.
    static func string(_ value: msal_json_value) -> String {
        String(decoding: UnsafeRawBufferPointer(start: value.bytes, count: value.length), as: UTF8.self)
    }

    /// Converts what `JSONSerialization` returns; `nil` for anything else.
    private init?(foundationObject object: Any) {
        // The dynamic type is checked before each cast: a failed cast (say, of a number to String)
        // tries bridging and costs more than the cast that succeeds.
        let dynamicType = type(of: object)
        if dynamicType == String.self, let string = object as? String {
            self = .string(string)
        } else if dynamicType is NSNumber.Type, let number = object as? NSNumber {
            self = Self(number: number)
        } else if let dictionary = object as? [String: Any] {
            var values = [String: JSONValue](minimumCapacity: dictionary.count)
            for (key, element) in dictionary {
                guard let value = JSONValue(foundationObject: element) else { return nil }
                values[key] = value
            }
            self = .object(values)
        } else if let array = object as? [Any] {
            var values: [JSONValue] = []
            values.reserveCapacity(array.count)
            for element in array {
                guard let value = JSONValue(foundationObject: element) else { return nil }
                values.append(value)
            }
            self = .array(values)
        } else if object is NSNull {
            self = .null
        } else if let string = object as? String {  // an NSString
            self = .string(string)
        } else if let number = object as? NSNumber {  // a number bridged from another type
            self = Self(number: number)
        } else {
            return nil
        }
    }

    /// A number from JSONSerialization: `true`/`false` come as Boolean NSNumbers, whose type code is "c".
    private init(number: NSNumber) {
        self = number.objCType.pointee == CChar(UInt8(ascii: "c")) ? .bool(number.boolValue) : .number(number.doubleValue)
    }

    /// The string, if this is a string.
    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }
    /// The number, if this is a number, or a string that parses as one (some providers send `"3600"`).
    public var doubleValue: Double? {
        switch self {
        case .number(let value): value
        case .string(let value): Double(value)
        default: nil
        }
    }
    /// The object, if this is an object.
    public var objectValue: [String: JSONValue]? { if case .object(let value) = self { value } else { nil } }
    /// The array, if this is an array.
    public var arrayValue: [JSONValue]? { if case .array(let value) = self { value } else { nil } }
    /// The Boolean, if this is a Boolean.
    public var boolValue: Bool? { if case .bool(let value) = self { value } else { nil } }
}

/// Base64url without padding (RFC 4648 §5), as used by JWTs (RFC 7515 §2) and Entra's `client_info`.
public enum Base64URL {
    /// Decodes base64url with or without padding.
    /// - Returns: the bytes, or `nil` when the input is not base64url.
    public static func decode(_ string: some StringProtocol) -> Data? {
        if let decoded = string.utf8.withContiguousStorageIfAvailable({ decode(UnsafeRawBufferPointer($0)) }) {
            return decoded
        }
        return Array(string.utf8).withUnsafeBytes { decode($0) }
    }

    /// Decodes base64url bytes: in one pass into one buffer, '-' and '_' become '+' and '/' and the
    /// padding goes back on; Foundation then decodes standard base64 (RFC 4648 §4).
    private static func decode(_ encoded: UnsafeRawBufferPointer) -> Data? {
        let count = encoded.count
        let remainder = count % 4
        if remainder == 1 { return nil }
        var standard = Data(repeating: UInt8(ascii: "="), count: remainder == 0 ? count : count + 4 - remainder)
        standard.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
            for index in 0..<count {
                let byte = encoded[index]
                buffer[index] = byte == UInt8(ascii: "-") ? UInt8(ascii: "+") : byte == UInt8(ascii: "_") ? UInt8(ascii: "/") : byte
            }
        }
        return Data(base64Encoded: standard)
    }

    /// Encodes bytes as base64url without padding.
    /// - Returns: the encoded string.
    public static func encode(_ data: Data) -> String {
        var bytes = Array(data.base64EncodedData())
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "+"): bytes[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): bytes[index] = UInt8(ascii: "_")
            default: break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
