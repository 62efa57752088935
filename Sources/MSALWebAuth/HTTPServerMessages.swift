public import Foundation
public import MSALCore

/// One HTTP/1.1 request received by ``LoopbackHTTPServer``, fully read (head and body).
///
/// Produced by ``HTTPRequestParser``; the message syntax follows RFC 9112 §2–§6.
public struct HTTPServerRequest: Sendable, Hashable {
    /// The method token as sent, e.g. `GET` or `POST` (RFC 9112 §3.1; case-sensitive).
    public var method: String
    /// The request target exactly as sent, e.g. `/common/oauth2/v2.0/token?x=1` (RFC 9112 §3.2).
    public var target: String
    /// The path of the target, percent-decoded (`/a%20b` reads `/a b`). For the absolute form
    /// (`http://host/p`) only the path part; for the asterisk form (`*`), `*`.
    public var path: String
    /// The query of the target decoded as `application/x-www-form-urlencoded` (`+` reads as a
    /// space, then percent-decoding), as OAuth redirects carry it (RFC 6749 Appendix B). A key
    /// without `=` maps to the empty string; when a key repeats, the first value is kept.
    public var queryItems: [String: String]
    /// The header fields, names lowercased; a repeated field's values are joined with `, `
    /// (RFC 9110 §5.3).
    public var headers: [String: String]
    /// The body: exactly `Content-Length` bytes, or empty.
    public var body: Data

    /// Creates a request; ``HTTPRequestParser`` does this for received bytes.
    public init(
        method: String,
        target: String,
        path: String,
        queryItems: [String: String] = [:],
        headers: [String: String] = [:],
        body: Data = Data()
    ) {
        self.method = method
        self.target = target
        self.path = path
        self.queryItems = queryItems
        self.headers = headers
        self.body = body
    }

    /// The body decoded as `application/x-www-form-urlencoded` (`+` reads as a space, then
    /// percent-decoding; WHATWG URL Standard §5.1), as OAuth token requests send it
    /// (RFC 6749 §4.1.3, Appendix B).
    ///
    /// Returns the name/value pairs; pairs that are not valid UTF-8 or percent-encoding are
    /// skipped, and when a name repeats the first value is kept. The `Content-Type` header is
    /// not consulted.
    public var formParameters: [String: String] {
        FormURLEncoding.decode(String(decoding: body, as: UTF8.self)) ?? [:]
    }
}

/// An HTTP response for ``LoopbackHTTPServer`` to send.
///
/// The server always adds `Content-Length` and `Connection: close` (RFC 9112 §6.3, §9.6), so
/// these need not (and cannot) be set through ``headers``.
public struct HTTPServerResponse: Sendable, Hashable {
    /// The status code (RFC 9110 §15), e.g. 200, 400.
    public var status: Int
    /// Header fields to send, e.g. `Content-Type`. `Content-Length` and `Connection` are ignored
    /// here: the server writes them itself.
    public var headers: [String: String]
    /// The body bytes; sent as is.
    public var body: Data

    /// Creates a response.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response (`application/json; charset=utf-8`) with the value encoded with sorted
    /// keys and unescaped slashes; an integral number is written without a fraction (`3600`).
    /// - Returns: the response; status 200 unless given.
    public static func json(_ value: JSONValue, status: Int = 200) -> HTTPServerResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(value)) ?? Data("null".utf8)
        return HTTPServerResponse(
            status: status, headers: ["Content-Type": "application/json; charset=utf-8"], body: body)
    }

    /// A JSON object response; see ``json(_:status:)-(JSONValue,_)``.
    /// - Returns: the response; status 200 unless given.
    public static func json(_ object: [String: JSONValue], status: Int = 200) -> HTTPServerResponse {
        json(JSONValue.object(object), status: status)
    }

    /// An HTML response (`text/html; charset=utf-8`); the text is sent as is (not escaped).
    /// - Returns: the response; status 200 unless given.
    public static func html(_ html: String, status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: ["Content-Type": "text/html; charset=utf-8"], body: Data(html.utf8))
    }

    /// A plain-text response (`text/plain; charset=utf-8`).
    /// - Returns: the response; status 200 unless given.
    public static func text(_ text: String, status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Data(text.utf8))
    }

    /// A response with no body and no `Content-Type` (`Content-Length: 0` is still sent).
    /// - Returns: the response; status 204 unless given.
    public static func empty(status: Int = 204) -> HTTPServerResponse {
        HTTPServerResponse(status: status)
    }

    /// The response as written on the wire: status line, headers (sorted by name, then
    /// `Content-Length` and `Connection: close`), an empty line and the body.
    /// - Parameter includeBody: `false` for a response to `HEAD` (RFC 9110 §9.3.2): the
    ///   `Content-Length` still states the length of the body that a `GET` would carry.
    /// - Returns: the bytes to send.
    public func serialized(includeBody: Bool = true) -> Data {
        var head = "HTTP/1.1 \(status) \(HTTPServerResponse.reasonPhrase(for: status))\r\n"
        for (name, value) in headers.sorted(by: { $0.key.lowercased() < $1.key.lowercased() }) {
            let lower = name.lowercased()
            if lower == "content-length" || lower == "connection" || lower == "transfer-encoding" { continue }
            // CR and LF in a header would split the response (RFC 9110 §5.5): drop them.
            let safeName = String(String.UnicodeScalarView(name.unicodeScalars.filter { $0 != "\r" && $0 != "\n" && $0 != ":" }))
            let safeValue = String(String.UnicodeScalarView(value.unicodeScalars.filter { $0 != "\r" && $0 != "\n" }))
            head += "\(safeName): \(safeValue)\r\n"
        }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        var data = Data(head.utf8)
        if includeBody { data.append(body) }
        return data
    }

    /// The reason phrase for a status code (RFC 9110 §15); `Unknown` for codes it does not list.
    /// - Returns: e.g. `OK` for 200.
    public static func reasonPhrase(for status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 302: "Found"
        case 303: "See Other"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Unknown"
        }
    }
}

/// `application/x-www-form-urlencoded` (WHATWG URL Standard §5), shared by the query and the body.
enum FormURLEncoding {
    /// Decodes `a=1&b=x+y`; a key without `=` maps to "". The first value of a repeated key wins.
    /// - Returns: the pairs, or `nil` when a name or value is not valid percent-encoding.
    static func decode(_ string: String) -> [String: String]? {
        var result: [String: String] = [:]
        for pair in string.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decodeComponent(parts[0]) else { return nil }
            let value: String
            if parts.count == 2 {
                guard let decoded = decodeComponent(parts[1]) else { return nil }
                value = decoded
            } else {
                value = ""
            }
            if result[name] == nil { result[name] = value }
        }
        return result
    }

    /// `+` to space, then percent-decoding.
    /// - Returns: the decoded text, or `nil` for a bad `%` escape or bytes that are not UTF-8.
    static func decodeComponent(_ component: Substring) -> String? {
        component.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
