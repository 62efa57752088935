public import Foundation
public import MSALCore

/// An HTTP method, e.g. `GET` or `POST` (RFC 9110 §9). Write `.get`, `.post` or a string literal.
public struct HTTPMethod: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method token as sent on the wire, uppercase by convention.
    public var rawValue: String

    /// Creates a method from its token.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Creates a method from a string literal such as `"PUT"`.
    public init(stringLiteral value: String) { self.rawValue = value }

    /// `GET` (RFC 9110 §9.3.1).
    public static let get: HTTPMethod = "GET"
    /// `POST` (RFC 9110 §9.3.3).
    public static let post: HTTPMethod = "POST"

    /// The method token.
    public var description: String { rawValue }
}

/// An HTTP request as swift-msal sends it: a value, so it can be recorded and compared in tests.
public struct HTTPRequest: Sendable {
    /// The method.
    public var method: HTTPMethod
    /// The absolute request URL.
    public var url: URL
    /// Header fields. Names are compared case-insensitively by servers; swift-msal writes them
    /// in the spelling MSAL uses (`client-request-id`, `x-client-SKU`).
    public var headers: [String: String]
    /// The body, or `nil` for none.
    public var body: Data?

    /// Creates a request.
    public init(method: HTTPMethod, url: URL, headers: [String: String] = [:], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The value of the header `name`, compared case-insensitively.
    /// - Returns: the value, or `nil` when the request has no such header.
    public func header(_ name: String) -> String? {
        if let value = headers[name] { return value }
        return headers.first { $0.key.utf8.elementsEqual(name.utf8) { $0.asciiLowercased == $1.asciiLowercased } }?.value
    }

    /// A `POST` with an `application/x-www-form-urlencoded` body, as every OAuth 2.0 token and
    /// device authorization request is (RFC 6749 §4.1.3, §6; RFC 8628 §3.1).
    ///
    /// Parameters are written sorted by name, so the body is stable; names and values are
    /// encoded as RFC 6749 Appendix B requires (UTF-8, then percent-encoding of every byte except
    /// `A-Z a-z 0-9 * - . _`, with space as `+`).
    /// - Parameters:
    ///   - url: the endpoint.
    ///   - parameters: the form fields.
    ///   - headers: extra header fields; `Content-Type` is set unless given here.
    /// - Returns: the request.
    public static func formPost(url: URL, parameters: [String: String], headers: [String: String] = [:]) -> HTTPRequest {
        var request = HTTPRequest(method: .post, url: url, headers: headers, body: Data(FormEncoding.encodedBytes(parameters)))
        if request.header("Content-Type") == nil {
            request.headers["Content-Type"] = "application/x-www-form-urlencoded; charset=utf-8"
        }
        return request
    }
}

/// An HTTP response: status, header fields with lowercased names, and the whole body.
public struct HTTPResponse: Sendable {
    /// The status code, e.g. 200 or 400.
    public var statusCode: Int
    /// Header fields; names are lowercased (field names are case-insensitive, RFC 9110 §5.1).
    public var headers: [String: String]
    /// The body; empty when the response has none.
    public var body: Data

    /// Creates a response; header names are lowercased (when two names differ only in case, one
    /// of their values is kept).
    public init(statusCode: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.statusCode = statusCode
        var lowered: [String: String] = [:]
        for (name, value) in headers { lowered[name.lowercased()] = value }
        self.headers = lowered
        self.body = body
    }

    /// The value of the header `name`, compared case-insensitively.
    /// - Returns: the value, or `nil` when the response has no such header.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// Whether the status is in `200...299`.
    public var isSuccess: Bool { (200...299).contains(statusCode) }
}

/// Sends one HTTP request and returns the whole response. The one seam between swift-msal and
/// the network: tests pass a fake, apps may pass their own (a proxy, a pinned TLS stack).
///
/// An implementation must guarantee:
/// - any HTTP status, 4xx and 5xx included, is a *response*, not an error;
/// - a connection that cannot be made (refused, DNS, TLS, reset) throws ``MSALError``
///   `.internal(.networkError)` whose message names the host, promptly: a provider that is down
///   is a clear error, never a hang;
/// - no answer within the implementation's timeout throws `.internal(.timeout)`;
/// - cancelling the calling task stops the request and throws `.userCanceled`;
/// - it keeps no cookies and no cache between requests (every token request stands alone);
/// - it never logs or puts into an error a header value or a body (they carry secrets).
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response, whatever its status.
    /// - Throws: ``MSALError`` `.internal(.networkError)`, `.internal(.timeout)` or `.userCanceled`,
    ///   as described on the protocol.
    func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse
}

/// `application/x-www-form-urlencoded` serialization (RFC 6749 Appendix B, which points at the
/// HTML form encoding: the WHATWG URL Standard §5.2 "application/x-www-form-urlencoded serializing").
enum FormEncoding {
    /// Bytes left as they are: ASCII alphanumerics and `*-._`.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }

    /// Encodes one name or value.
    static func encode(_ string: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(string.utf8.count)
        append(string, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the encoding of `string` to `out`: runs of unreserved bytes (a whole token, usually)
    /// are copied at once.
    private static func append(_ string: String, to out: inout [UInt8]) {
        var string = string
        string.withUTF8 { bytes in
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count, isUnreserved(bytes[end]) { end += 1 }
                if end > start { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<end])) }
                guard end < bytes.count else { return }
                appendEscaped(bytes[end], to: &out)
                start = end + 1
            }
        }
    }

    /// Appends one reserved byte: `+` for a space, else `%XX`.
    private static func appendEscaped(_ byte: UInt8, to out: inout [UInt8]) {
        if byte == UInt8(ascii: " ") {
            out.append(UInt8(ascii: "+"))
        } else {
            out.append(UInt8(ascii: "%"))
            out.append(hexDigit(byte >> 4))
            out.append(hexDigit(byte & 0x0F))
        }
    }

    /// The uppercase hexadecimal digit of a value below 16.
    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// Encodes the fields as `name=value` pairs joined by `&`, sorted by name.
    static func encode(_ parameters: [String: String]) -> String {
        String(decoding: encodedBytes(parameters), as: UTF8.self)
    }

    /// The encoded fields (as `encode(_ parameters:)` joins them), as bytes built in one buffer.
    static func encodedBytes(_ parameters: [String: String]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(parameters.reduce(16) { $0 + $1.key.utf8.count + $1.value.utf8.count + 2 })
        for (index, field) in parameters.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            append(field.key, to: &out)
            out.append(UInt8(ascii: "="))
            append(field.value, to: &out)
        }
        return out
    }

    /// Decodes a form body into its fields (for tests and for servers in tests).
    /// - Returns: the fields, or `nil` when a percent escape is malformed or the bytes are not UTF-8.
    static func decode(_ body: String) -> [String: String]? {
        var result: [String: String] = [:]
        for pair in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decodeComponent(parts[0]) else { return nil }
            let value = parts.count > 1 ? decodeComponent(parts[1]) : ""
            guard let value else { return nil }
            result[name] = value
        }
        return result
    }

    private static func decodeComponent(_ component: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(component.utf8).makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
