import Foundation

/// The loopback redirect exchange as a state machine: one HTTP request in, the answer for the
/// browser and what it means for the sign-in out. No I/O; ``LoopbackRedirectListener`` is its
/// socket shell.
///
/// The rules (RFC 8252 §7.3 loopback redirect, RFC 6749 §4.1.2 authorization response, §10.12
/// `state` against CSRF):
/// - A `GET` on the redirect path whose `state` matches is THE response: answered 200 with a
///   short page (success, or the error and its description, HTML-escaped), and the exchange is
///   finished.
/// - A `GET` on the redirect path with a missing or wrong `state`: 400, keep waiting (it is not
///   the response to this sign-in; a stale tab or a forged request).
/// - Another method on the redirect path: 405, keep waiting.
/// - Any other path (`/favicon.ico`, a probe): 404, keep waiting.
/// - Anything after the exchange finished or was closed: 404 saying the sign-in is over.
///
/// Every page is sent with `Cache-Control: no-store`, `Referrer-Policy: no-referrer` and a
/// `Content-Security-Policy` that allows no script. A page never contains the authorization
/// code or the state.
public struct LoopbackRedirectExchange: Sendable {
    /// What a request meant for the sign-in.
    public enum Outcome: Sendable, Equatable {
        /// Not the authorization response; keep listening.
        case keepWaiting
        /// The authorization response for this sign-in (a code or an error); stop listening.
        case finished(AuthorizationResponse)
    }

    /// The path the authorization server redirects to, e.g. `/` or `/callback`; an empty path
    /// is `/`.
    public let redirectPath: String
    private let expectedState: String
    /// The response once received; `nil` while waiting.
    public private(set) var response: AuthorizationResponse?
    /// Whether the exchange still waits for the response: `false` once it came or ``close()``
    /// was called.
    public private(set) var isWaiting = true

    /// Creates an exchange waiting for the response.
    /// - Parameters:
    ///   - redirectPath: the path of the redirect URI (percent-decoded, as
    ///     ``HTTPServerRequest/path`` is); empty means `/`.
    ///   - expectedState: the `state` sent in the authorization request.
    public init(redirectPath: String, expectedState: String) {
        self.redirectPath = redirectPath.isEmpty ? "/" : redirectPath
        self.expectedState = expectedState
    }

    /// Decides the answer to one request.
    /// - Parameter request: a well-formed request received by the listener.
    /// - Returns: the response to send to the browser and the ``Outcome``. After an outcome of
    ///   ``Outcome/finished(_:)`` (or ``close()``) every further request gets 404 and
    ///   ``Outcome/keepWaiting``.
    public mutating func receive(_ request: HTTPServerRequest) -> (response: HTTPServerResponse, outcome: Outcome) {
        guard isWaiting else {
            return (Self.page(status: 404, title: "Sign-in no longer waiting",
                              body: "This sign-in is no longer waiting for a response; you can close this window."), .keepWaiting)
        }
        guard request.path == redirectPath else {
            return (Self.page(status: 404, title: "Not found", body: "There is nothing here."), .keepWaiting)
        }
        guard request.method == "GET" else {
            var answer = Self.page(status: 405, title: "Method not allowed",
                                   body: "The sign-in response is expected as a GET request.")
            answer.headers["Allow"] = "GET"
            return (answer, .keepWaiting)
        }
        guard let parsed = AuthorizationResponse.parse(queryItems: request.queryItems, expectedState: expectedState) else {
            return (Self.page(status: 400, title: "Unexpected sign-in response",
                              body: "This response does not belong to the sign-in in progress (its state is missing or does not match). Return to the application and try again."),
                    .keepWaiting)
        }
        response = parsed
        isWaiting = false
        switch parsed {
        case .code(let code) where code.isEmpty:
            return (Self.page(status: 200, title: "Sign-in failed",
                              body: "The sign-in did not complete: the response carried no authorization code. You can close this window and return to the application."),
                    .finished(parsed))
        case .code:
            return (Self.page(status: 200, title: "Signed in", body: "You are signed in; you can close this window."),
                    .finished(parsed))
        case .error(let error, let description, _, _):
            var body = "The sign-in did not complete: \(Self.escapeHTML(error))"
            if let description, !description.isEmpty {
                body += "<br>\(Self.escapeHTML(description))"
            }
            body += "<br>You can close this window and return to the application."
            return (Self.page(status: 200, title: "Sign-in failed", bodyHTML: body), .finished(parsed))
        }
    }

    /// Stops waiting without a response (the listener timed out or was canceled): every later
    /// request gets 404.
    public mutating func close() {
        isWaiting = false
    }

    // MARK: - Pages

    /// Escapes `&`, `<`, `>`, `"` and `'` for HTML text and attribute values.
    /// - Returns: the escaped text.
    public static func escapeHTML(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }

    private static func page(status: Int, title: String, body: String) -> HTTPServerResponse {
        page(status: status, title: title, bodyHTML: escapeHTML(body))
    }

    private static func page(status: Int, title: String, bodyHTML: String) -> HTTPServerResponse {
        let html = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escapeHTML(title))</title></head>
            <body><h1>\(escapeHTML(title))</h1><p>\(bodyHTML)</p></body></html>

            """
        var answer = HTTPServerResponse.html(html, status: status)
        answer.headers["Cache-Control"] = "no-store"
        answer.headers["Referrer-Policy"] = "no-referrer"
        answer.headers["Content-Security-Policy"] = "default-src 'none'"
        return answer
    }
}
