import Foundation
import MSALCore
@testable import MSALNetwork
import Testing

@Suite("HTTP values and form encoding")
struct HTTPTests {
    @Test("RFC 6749 Appendix B example encodes exactly")
    func appendixBExample() {
        // RFC 6749 Appendix B: " %&+£€" → "+%25%26%2B%C2%A3%E2%82%AC"
        #expect(FormEncoding.encode(" %&+£€") == "+%25%26%2B%C2%A3%E2%82%AC")
    }

    @Test("unreserved bytes stay, everything else is escaped")
    func unreserved() {
        #expect(FormEncoding.encode("AZaz09*-._") == "AZaz09*-._")
        #expect(FormEncoding.encode("a/b:c?d=e~f") == "a%2Fb%3Ac%3Fd%3De%7Ef")
        #expect(FormEncoding.encode("urn:ietf:params:oauth:grant-type:device_code")
            == "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code")
    }

    @Test("formPost sorts fields, sets the content type and keeps given headers")
    func formPost() throws {
        let url = try #require(URL(string: "https://login.example.com/token"))
        let request = HTTPRequest.formPost(
            url: url, parameters: ["scope": "openid profile", "client_id": "abc"], headers: ["Accept": "application/json"]
        )
        #expect(request.method == .post)
        #expect(request.url == url)
        #expect(String(decoding: request.body ?? Data(), as: UTF8.self) == "client_id=abc&scope=openid+profile")
        #expect(request.header("content-type") == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(request.header("accept") == "application/json")
    }

    @Test("formPost keeps a Content-Type the caller set")
    func formPostContentType() throws {
        let url = try #require(URL(string: "https://login.example.com/token"))
        let request = HTTPRequest.formPost(url: url, parameters: [:], headers: ["content-type": "application/x-www-form-urlencoded"])
        #expect(request.headers.count == 1)
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
    }

    @Test("encoding round-trips through the decoder")
    func roundTrip() {
        let fields = ["a b": "c&d=e", "ü": "€ +%", "empty": ""]
        #expect(FormEncoding.decode(FormEncoding.encode(fields)) == fields)
        #expect(FormEncoding.decode("a=%zz") == nil)
    }

    @Test("response header names are lowercased")
    func responseHeaders() {
        let response = HTTPResponse(statusCode: 200, headers: ["Content-Type": "text/plain", "Client-Request-Id": "x"])
        #expect(response.headers == ["content-type": "text/plain", "client-request-id": "x"])
        #expect(response.header("CLIENT-REQUEST-ID") == "x")
        #expect(response.isSuccess)
        #expect(!HTTPResponse(statusCode: 302).isSuccess)
    }
}
