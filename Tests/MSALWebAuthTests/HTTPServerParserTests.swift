import Foundation
import Testing
import MSALCore
import MSALWebAuth

@Suite("HTTPRequestParser")
struct HTTPServerParserTests {
    private func parse(_ text: String, limits: HTTPRequestParser.Limits = .init(), endOfInput: Bool = false) -> HTTPRequestParser.Outcome {
        HTTPRequestParser.parse(Array(text.utf8), limits: limits, endOfInput: endOfInput)
    }

    private func failureStatus(_ outcome: HTTPRequestParser.Outcome) -> Int? {
        if case .failure(let failure) = outcome { return failure.status }
        return nil
    }

    private func request(_ outcome: HTTPRequestParser.Outcome) -> HTTPServerRequest? {
        if case .complete(let request, _) = outcome { return request }
        return nil
    }

    @Test func parsesAFormPostWithQueryAndHeaders() throws {
        let body = "client_id=abc&scope=openid+profile%20offline_access&x=%2B"
        let text = "POST /common/oauth2/v2.0/token?a=1&b=two+words&c=%41&flag HTTP/1.1\r\n"
            + "Host: 127.0.0.1:8080\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            + "X-Multi: one\r\nx-multi:  two \r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body + "EXTRA"
        guard case .complete(let request, let consumed) = parse(text) else {
            Issue.record("expected a complete request")
            return
        }
        #expect(consumed == text.utf8.count - 5)
        #expect(request.method == "POST")
        #expect(request.target == "/common/oauth2/v2.0/token?a=1&b=two+words&c=%41&flag")
        #expect(request.path == "/common/oauth2/v2.0/token")
        #expect(request.queryItems == ["a": "1", "b": "two words", "c": "A", "flag": ""])
        #expect(request.headers["host"] == "127.0.0.1:8080")
        #expect(request.headers["x-multi"] == "one, two")
        #expect(request.formParameters == ["client_id": "abc", "scope": "openid profile offline_access", "x": "+"])
    }

    @Test func percentDecodesThePathButKeepsPlus() {
        let r = request(parse("GET /a%20b/c+d HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(r?.path == "/a b/c+d")
    }

    @Test func acceptsTheAbsoluteForm() {
        let r = request(parse("GET http://127.0.0.1:9/cb?code=x HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n"))
        #expect(r?.path == "/cb")
        #expect(r?.queryItems == ["code": "x"])
    }

    @Test func waitsForTheRestOfTheHeadAndBody() {
        #expect(parse("GET / HTTP/1.1\r\nHost: x\r\n") == .incomplete)
        #expect(parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc") == .incomplete)
        #expect(parse("") == .incomplete)
    }

    @Test func truncatedInputAtEndOfStreamIsBadRequest() {
        #expect(failureStatus(parse("GET / HTTP/1.1\r\nHost: x\r\n", endOfInput: true)) == 400)
        #expect(failureStatus(parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc", endOfInput: true)) == 400)
    }

    @Test(arguments: [
        "GET /\r\nHost: x\r\n\r\n",                         // no version
        "GET  / HTTP/1.1\r\nHost: x\r\n\r\n",               // two spaces
        "G(T / HTTP/1.1\r\nHost: x\r\n\r\n",                // method not a token
        "GET / HTTX/1.1\r\nHost: x\r\n\r\n",                // version malformed
        "GET nopath HTTP/1.1\r\nHost: x\r\n\r\n",           // target neither path nor URL
        "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n",            // bad percent escape
        "GET /?q=%ff HTTP/1.1\r\nHost: x\r\n\r\n",          // query not UTF-8
        "GET / HTTP/1.1\r\n\r\n",                           // HTTP/1.1 without Host
        "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",     // two Hosts
        "GET / HTTP/1.1\r\nHost : x\r\n\r\n",               // space before colon
        "GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",     // no colon
        "GET / HTTP/1.1\r\nHost: x\r\nA: b\r\n c\r\n\r\n",  // obsolete folding
        "GET / HTTP/1.1\nHost: x\n\n",                      // bare LF (missing CR)
        "GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n",           // CR without LF
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        "\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",            // empty request line
    ])
    func malformedRequestsAreBadRequest(_ text: String) {
        #expect(failureStatus(parse(text)) == 400)
    }

    @Test func identicalContentLengthsAreOneValue() {
        let r = request(parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n\r\nab"))
        #expect(r?.body == Data("ab".utf8))
    }

    @Test func chunkedIsNotImplemented() {
        let text = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        #expect(failureStatus(parse(text)) == 501)
    }

    @Test func otherHTTPVersionsAreNotSupported() {
        #expect(failureStatus(parse("GET / HTTP/2.0\r\nHost: x\r\n\r\n")) == 505)
        #expect(request(parse("GET / HTTP/1.0\r\n\r\n"))?.path == "/")
    }

    @Test func oversizedRequestLineIs414() {
        let limits = HTTPRequestParser.Limits(maxHeaderBytes: 1024, maxRequestBytes: 4096)
        let text = "GET /" + String(repeating: "a", count: 2000)
        #expect(failureStatus(parse(text, limits: limits)) == 414)
        // Just under the limit, it is still waiting.
        #expect(parse(String(text.prefix(1000)), limits: limits) == .incomplete)
    }

    @Test func oversizedHeaderSectionIs431() {
        let limits = HTTPRequestParser.Limits(maxHeaderBytes: 1024, maxRequestBytes: 4096)
        let text = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "b", count: 2000) + "\r\n\r\n"
        #expect(failureStatus(parse(text, limits: limits)) == 431)
    }

    @Test func oversizedBodyIs413BeforeTheBodyArrives() {
        let limits = HTTPRequestParser.Limits(maxHeaderBytes: 1024, maxRequestBytes: 4096)
        #expect(failureStatus(parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", limits: limits)) == 413)
        #expect(failureStatus(parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", limits: limits)) == 413)
        #expect(parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\n\r\n", limits: limits) == .incomplete)
    }

    @Test func responseSerializationHasLengthAndClose() {
        let response = HTTPServerResponse.json(["b": .number(3600), "a": .string("x/y"), "n": .null], status: 400)
        let wire = String(decoding: response.serialized(), as: UTF8.self)
        #expect(wire.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(wire.contains("Content-Type: application/json; charset=utf-8\r\n"))
        #expect(wire.contains("Connection: close\r\n"))
        #expect(wire.hasSuffix("\r\n\r\n{\"a\":\"x/y\",\"b\":3600,\"n\":null}"))
        #expect(wire.contains("Content-Length: \(response.body.count)\r\n"))
        let head = String(decoding: HTTPServerResponse.text("hello").serialized(includeBody: false), as: UTF8.self)
        #expect(head.hasSuffix("Content-Length: 5\r\nConnection: close\r\n\r\n"))
    }

    @Test func headerInjectionIsNeutralized() {
        let response = HTTPServerResponse(status: 200, headers: ["X-A": "1\r\nSet-Cookie: evil"])
        let wire = String(decoding: response.serialized(), as: UTF8.self)
        #expect(!wire.contains("\r\nSet-Cookie"))
    }
}
