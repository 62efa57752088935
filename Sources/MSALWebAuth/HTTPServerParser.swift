import Foundation

/// A pure HTTP/1.1 request parser: bytes in, an outcome out; no I/O, no state between calls.
///
/// ``LoopbackHTTPServer`` calls ``parse(_:limits:endOfInput:)`` with everything read so far after
/// each read. The grammar is RFC 9112 (HTTP/1.1 message syntax), strictly: lines end in CRLF
/// (a bare LF is rejected, as RFC 9112 §2.2 allows), no obsolete line folding (§5.2), no
/// whitespace before a field's colon (§5.1), `Host` required in HTTP/1.1 (§3.2), and
/// `Transfer-Encoding` (chunked bodies) is not implemented (§6.1: 501).
public enum HTTPRequestParser {
    /// Size limits applied while parsing.
    public struct Limits: Sendable, Hashable {
        /// The most bytes the request line and header fields may take, including the final empty
        /// line. Default 64 KiB (an OAuth redirect's query can be a few KiB).
        public var maxHeaderBytes: Int
        /// The most bytes the whole request (head and body) may take. Default 1 MiB.
        public var maxRequestBytes: Int

        /// Creates limits; each value is at least 64 bytes.
        public init(maxHeaderBytes: Int = 64 * 1024, maxRequestBytes: Int = 1 << 20) {
            self.maxRequestBytes = max(64, maxRequestBytes)
            self.maxHeaderBytes = max(64, min(maxHeaderBytes, self.maxRequestBytes))
        }
    }

    /// Why a request was rejected, with the status to answer it with.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// The response status: 400 malformed, 413 body too large, 414 request line too long,
        /// 431 header section too large, 501 `Transfer-Encoding`, 505 HTTP version not 1.x.
        public var status: Int
        /// A short explanation, safe to send back as the body.
        public var reason: String

        /// Creates a failure.
        public init(status: Int, reason: String) {
            self.status = status
            self.reason = reason
        }

        /// `<status> <reason>`.
        public var description: String { "\(status) \(reason)" }
    }

    /// The result of one parse.
    public enum Outcome: Sendable, Hashable {
        /// More bytes are needed.
        case incomplete
        /// A whole request; `consumedBytes` is the length of the request within the input (any
        /// bytes after it are a pipelined request, which the server ignores).
        case complete(HTTPServerRequest, consumedBytes: Int)
        /// The bytes are not an acceptable request.
        case failure(Failure)
    }

    private static let cr: UInt8 = 13
    private static let lf: UInt8 = 10
    private static let space: UInt8 = 32
    private static let tab: UInt8 = 9

    /// Parses the bytes received so far.
    ///
    /// - Parameters:
    ///   - bytes: everything received on the connection, from its first byte.
    ///   - limits: the size limits.
    ///   - endOfInput: `true` when the peer has closed its side, so no more bytes will come; an
    ///     incomplete request is then a failure (400).
    /// - Returns: ``Outcome/incomplete``, ``Outcome/complete(_:consumedBytes:)`` or
    ///   ``Outcome/failure(_:)`` with the status to answer.
    public static func parse(_ bytes: [UInt8], limits: Limits = Limits(), endOfInput: Bool = false) -> Outcome {
        // Find the end of the head (CRLF CRLF), rejecting a bare LF early so a client that
        // sends LF-only lines is answered at once rather than after the read timeout.
        let scanLimit = min(bytes.count, limits.maxHeaderBytes)
        var headEnd: Int?
        var sawLineEnd = false
        var index = 0
        while index < scanLimit {
            if bytes[index] == lf {
                guard index > 0, bytes[index - 1] == cr else {
                    return .failure(Failure(status: 400, reason: "A line ends in a bare LF; HTTP/1.1 requires CRLF."))
                }
                sawLineEnd = true
                if index >= 3, bytes[index - 2] == lf, bytes[index - 3] == cr {
                    headEnd = index + 1
                    break
                }
            } else if index > 0, bytes[index - 1] == cr {
                return .failure(Failure(status: 400, reason: "A CR is not followed by LF."))
            }
            index += 1
        }
        guard let headEnd else {
            if bytes.count >= limits.maxHeaderBytes {
                if !sawLineEnd {
                    return .failure(Failure(status: 414, reason: "The request line is longer than \(limits.maxHeaderBytes) bytes."))
                }
                return .failure(Failure(status: 431, reason: "The header section is longer than \(limits.maxHeaderBytes) bytes."))
            }
            if endOfInput {
                return .failure(Failure(status: 400, reason: "The connection closed before the header section ended (missing CRLF CRLF)."))
            }
            return .incomplete
        }

        // Split the head into lines (without the final empty line).
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = 0
        var position = 0
        while position < headEnd - 2 {
            if bytes[position] == cr && bytes[position + 1] == lf {
                lines.append(bytes[lineStart..<position])
                position += 2
                lineStart = position
            } else {
                position += 1
            }
        }
        guard let requestLine = lines.first, !requestLine.isEmpty else {
            return .failure(Failure(status: 400, reason: "The request line is empty."))
        }

        // Request line: method SP request-target SP HTTP-version (RFC 9112 §3).
        let parts = requestLine.split(separator: space, omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            return .failure(Failure(status: 400, reason: "The request line is not 'method target version' separated by single spaces."))
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        guard !method.isEmpty, parts[0].allSatisfy(isTokenCharacter) else {
            return .failure(Failure(status: 400, reason: "The method is not a token."))
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            if version.utf8.count == 8, version.hasPrefix("HTTP/"),
               version.utf8.enumerated().allSatisfy({ i, c in i < 5 || (i == 6 ? c == UInt8(ascii: ".") : (c >= 48 && c <= 57)) }) {
                return .failure(Failure(status: 505, reason: "Only HTTP/1.0 and HTTP/1.1 are supported."))
            }
            return .failure(Failure(status: 400, reason: "The HTTP version is malformed."))
        }
        guard !parts[1].isEmpty, parts[1].allSatisfy({ $0 > 32 && $0 < 127 }) else {
            return .failure(Failure(status: 400, reason: "The request target is empty or has characters outside visible ASCII."))
        }
        let target = String(decoding: parts[1], as: UTF8.self)

        // Header fields: name ":" OWS value OWS (RFC 9112 §5).
        var headers: [String: String] = [:]
        var contentLengths: [String] = []
        for line in lines.dropFirst() {
            guard let first = line.first, first != space, first != tab else {
                return .failure(Failure(status: 400, reason: "Obsolete line folding is not accepted."))
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                return .failure(Failure(status: 400, reason: "A header line has no colon."))
            }
            let nameBytes = line[line.startIndex..<colon]
            guard !nameBytes.isEmpty, nameBytes.allSatisfy(isTokenCharacter) else {
                return .failure(Failure(status: 400, reason: "A header field name is empty or not a token (no whitespace before the colon)."))
            }
            var valueBytes = line[(colon + 1)...]
            while let c = valueBytes.first, c == space || c == tab { valueBytes.removeFirst() }
            while let c = valueBytes.last, c == space || c == tab { valueBytes.removeLast() }
            guard valueBytes.allSatisfy({ $0 == tab || ($0 >= 32 && $0 != 127) }) else {
                return .failure(Failure(status: 400, reason: "A header field value contains a control character."))
            }
            let name = String(decoding: nameBytes, as: UTF8.self).lowercased()
            let value = String(decoding: valueBytes, as: UTF8.self)
            if name == "content-length" { contentLengths.append(value) }
            if name == "host", headers[name] != nil {
                return .failure(Failure(status: 400, reason: "More than one Host header field."))
            }
            if let existing = headers[name] {
                headers[name] = existing + ", " + value
            } else {
                headers[name] = value
            }
        }
        if version == "HTTP/1.1" && headers["host"] == nil {
            return .failure(Failure(status: 400, reason: "An HTTP/1.1 request must carry a Host header field."))
        }
        if headers["transfer-encoding"] != nil {
            return .failure(Failure(status: 501, reason: "Transfer-Encoding (chunked bodies) is not supported; send Content-Length."))
        }

        // Content-Length (RFC 9112 §6.3): digits; a list of identical values is one value.
        var bodyLength = 0
        if !contentLengths.isEmpty {
            let values = Set(contentLengths.flatMap { $0.split(separator: ",") }.map {
                $0.trimmingCharacters(in: .whitespaces)
            })
            guard values.count == 1, let value = values.first, !value.isEmpty,
                  value.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 })
            else {
                return .failure(Failure(status: 400, reason: "The Content-Length is not a single decimal number."))
            }
            guard value.utf8.count <= 15, let length = Int(value), headEnd + length <= limits.maxRequestBytes else {
                return .failure(Failure(status: 413, reason: "The request is larger than \(limits.maxRequestBytes) bytes."))
            }
            bodyLength = length
        }
        let total = headEnd + bodyLength
        guard bytes.count >= total else {
            if endOfInput {
                return .failure(Failure(status: 400, reason: "The connection closed before the body (Content-Length \(bodyLength)) was complete."))
            }
            return .incomplete
        }

        // The target: origin form, absolute form, or `*` (RFC 9112 §3.2).
        let rawPath: Substring
        let rawQuery: Substring?
        if target == "*" {
            rawPath = "*"
            rawQuery = nil
        } else {
            guard !target.contains("#") else {
                return .failure(Failure(status: 400, reason: "The request target contains a fragment."))
            }
            var pathAndQuery = Substring(target)
            if !target.hasPrefix("/") {
                let lower = target.lowercased()
                guard lower.hasPrefix("http://") || lower.hasPrefix("https://"),
                      let schemeEnd = target.range(of: "://")
                else {
                    return .failure(Failure(status: 400, reason: "The request target is neither a path nor an absolute URL."))
                }
                let afterScheme = target[schemeEnd.upperBound...]
                if let slash = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) {
                    pathAndQuery = afterScheme[slash...]
                    if pathAndQuery.hasPrefix("?") { pathAndQuery = "/" + pathAndQuery }
                } else {
                    pathAndQuery = "/"
                }
            }
            if let question = pathAndQuery.firstIndex(of: "?") {
                rawPath = pathAndQuery[..<question]
                rawQuery = pathAndQuery[pathAndQuery.index(after: question)...]
            } else {
                rawPath = pathAndQuery
                rawQuery = nil
            }
        }
        guard let path = rawPath.removingPercentEncoding else {
            return .failure(Failure(status: 400, reason: "The path is not valid percent-encoded UTF-8."))
        }
        var queryItems: [String: String] = [:]
        if let rawQuery {
            guard let decoded = FormURLEncoding.decode(String(rawQuery)) else {
                return .failure(Failure(status: 400, reason: "The query is not valid percent-encoded UTF-8."))
            }
            queryItems = decoded
        }

        let request = HTTPServerRequest(
            method: method,
            target: target,
            path: path,
            queryItems: queryItems,
            headers: headers,
            body: Data(bytes[headEnd..<total])
        )
        return .complete(request, consumedBytes: total)
    }

    /// `tchar` of RFC 9110 §5.6.2.
    private static func isTokenCharacter(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(c)
        }
    }
}
