import Foundation
import MSALCore
import MSALWebAuth
import Testing

private func get(_ target: String, method: String = "GET") -> HTTPServerRequest {
    guard case .complete(let request, _) = HTTPRequestParser.parse(
        Array("\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    ) else {
        preconditionFailure("test request did not parse: \(target)")
    }
    return request
}

private func bodyText(_ response: HTTPServerResponse) -> String {
    String(decoding: response.body, as: UTF8.self)
}

/// The per-request decisions of the loopback redirect, without sockets.
@Suite("LoopbackRedirectListener exchange")
struct LoopbackRedirectListenerExchangeTests {
    @Test func matchingStateFinishesWithTheCodeAndASuccessPage() {
        var exchange = LoopbackRedirectExchange(redirectPath: "/callback", expectedState: "STATE-1")
        let (answer, outcome) = exchange.receive(get("/callback?code=SECRET-CODE&state=STATE-1&session_state=x"))
        #expect(answer.status == 200)
        #expect(outcome == .finished(.code("SECRET-CODE")))
        #expect(exchange.response == .code("SECRET-CODE"))
        #expect(!exchange.isWaiting)
        let text = bodyText(answer)
        #expect(text.contains("You are signed in; you can close this window"))
        #expect(!text.contains("SECRET-CODE") && !text.contains("STATE-1"))
        #expect(answer.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(answer.headers["Cache-Control"] == "no-store")
        #expect(answer.headers["Content-Security-Policy"] == "default-src 'none'")

        // Only one response is accepted: a replay is turned away.
        let (again, againOutcome) = exchange.receive(get("/callback?code=OTHER&state=STATE-1"))
        #expect(again.status == 404)
        #expect(againOutcome == .keepWaiting)
        #expect(exchange.response == .code("SECRET-CODE"))
    }

    @Test(arguments: ["/callback?code=C", "/callback?code=C&state=WRONG", "/callback?code=C&state=", "/callback?code=C&state=STATE-1x"])
    func missingOrWrongStateIs400AndKeepsWaiting(target: String) {
        var exchange = LoopbackRedirectExchange(redirectPath: "/callback", expectedState: "STATE-1")
        let (answer, outcome) = exchange.receive(get(target))
        #expect(answer.status == 400)
        #expect(outcome == .keepWaiting)
        #expect(exchange.isWaiting)
        #expect(!bodyText(answer).contains("STATE-1"))
        // The right one still gets through.
        #expect(exchange.receive(get("/callback?code=C&state=STATE-1")).outcome == .finished(.code("C")))
    }

    @Test(arguments: ["/", "/favicon.ico", "/callback/", "/callbackx?code=C&state=STATE-1", "/other?code=C&state=STATE-1"])
    func otherPathsAre404AndKeepWaiting(target: String) {
        var exchange = LoopbackRedirectExchange(redirectPath: "/callback", expectedState: "STATE-1")
        let (answer, outcome) = exchange.receive(get(target))
        #expect(answer.status == 404)
        #expect(outcome == .keepWaiting)
        #expect(exchange.isWaiting)
    }

    @Test func otherMethodsOnTheRedirectPathAre405() {
        var exchange = LoopbackRedirectExchange(redirectPath: "/callback", expectedState: "S")
        for method in ["POST", "HEAD", "PUT"] {
            let (answer, outcome) = exchange.receive(get("/callback?code=C&state=S", method: method))
            #expect(answer.status == 405)
            #expect(answer.headers["Allow"] == "GET")
            #expect(outcome == .keepWaiting)
        }
        #expect(exchange.isWaiting)
    }

    @Test func emptyRedirectPathIsTheRoot() {
        var exchange = LoopbackRedirectExchange(redirectPath: "", expectedState: "S")
        #expect(exchange.redirectPath == "/")
        #expect(exchange.receive(get("/?code=C&state=S")).outcome == .finished(.code("C")))
    }

    @Test func errorResponseShowsTheErrorEscaped() {
        var exchange = LoopbackRedirectExchange(redirectPath: "/", expectedState: "S")
        let description = "<script>alert('x')</script> & \"more\""
        let query = "error=access_denied&error_description=\(description.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&state=S"
        let (answer, outcome) = exchange.receive(get("/?\(query)"))
        #expect(outcome == .finished(.error(error: "access_denied", description: description, uri: nil, subError: nil)))
        #expect(answer.status == 200)
        let text = bodyText(answer)
        #expect(text.contains("access_denied"))
        #expect(text.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;more&quot;"))
        #expect(!text.contains("<script>"))
        #expect(!text.contains("You are signed in"))
    }

    @Test func matchingStateWithoutCodeFinishesWithAFailurePage() {
        var exchange = LoopbackRedirectExchange(redirectPath: "/", expectedState: "S")
        let (answer, outcome) = exchange.receive(get("/?state=S"))
        #expect(outcome == .finished(.code("")))
        #expect(bodyText(answer).contains("no authorization code"))
        #expect(!bodyText(answer).contains("You are signed in"))
    }

    @Test func closedExchangeTurnsEverythingAway() {
        var exchange = LoopbackRedirectExchange(redirectPath: "/", expectedState: "S")
        exchange.close()
        let (answer, outcome) = exchange.receive(get("/?code=C&state=S"))
        #expect(answer.status == 404)
        #expect(outcome == .keepWaiting)
        #expect(exchange.response == nil)
    }

    @Test func escapeHTML() {
        #expect(LoopbackRedirectExchange.escapeHTML(#"<a href="x">'&'</a>"#) == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;")
        #expect(LoopbackRedirectExchange.escapeHTML("plain é") == "plain é")
    }
}
