import Foundation
import MSALCore
@testable import MSALNetwork
import Testing

@Suite("Retry-After parsing (RFC 9110 §10.2.3) and OAuth2Client errors")
struct RetryAfterTests {
    /// 2023-11-14T22:13:20Z.
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    @Test("delta-seconds", arguments: [("0", 0.0), ("30", 30), (" 120\t", 120), ("86400", 86400)])
    func deltaSeconds(value: String, expected: TimeInterval) {
        #expect(RetryAfter.seconds(value, now: now) == expected)
    }

    @Test("invalid values give nil", arguments: ["", " ", "-5", "1.5", "+30", "30s", "soon", "Tue, 14 Nov 2023 22:13:50", "0x10",
                                                   "Tue, 31 Feb 2023 22:13:50 GMT", "Tue, 14 Nov 2023 22:13:50 UTC",
                                                   "Tue, 14 Nov 23 22:13:50 GMT", "Tue, 14 Nov 2023 24:00:00 GMT", "Tue Nov 14 22:13:50 23"])
    func invalid(value: String) {
        #expect(RetryAfter.seconds(value, now: now) == nil)
    }

    @Test("HTTP-date in all three forms of RFC 9110 §5.6.7, measured from now")
    func httpDates() {
        #expect(RetryAfter.seconds("Tue, 14 Nov 2023 22:13:50 GMT", now: now) == 30)
        #expect(RetryAfter.seconds("Tuesday, 14-Nov-23 22:14:20 GMT", now: now) == 60)
        #expect(RetryAfter.seconds("Tue Nov 14 22:15:20 2023", now: now) == 120)
        #expect(RetryAfter.seconds("Thu Nov  2 22:13:20 2023", now: now) == 0, "a date in the past means now")
        #expect(RetryAfter.httpDate("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == Date(timeIntervalSince1970: 784_111_777))
        #expect(RetryAfter.httpDate("Sun Nov  6 08:49:37 1994", now: now) == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test("an RFC 850 year more than 50 years ahead is in the past")
    func twoDigitYear() {
        #expect(RetryAfter.httpDate("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == Date(timeIntervalSince1970: 784_111_777))
        let year2070 = RetryAfter.httpDate("Friday, 01-Jan-70 00:00:00 GMT", now: now)
        #expect(year2070 == Date(timeIntervalSince1970: 3_155_760_000), "2070 is less than 50 years after 2023")
        let in2099 = Date(timeIntervalSince1970: 4_102_444_800 - 86_400)  // 31 Dec 2099
        #expect(RetryAfter.httpDate("Friday, 01-Jan-10 00:00:00 GMT", now: in2099) == Date(timeIntervalSince1970: 4_417_977_600), "2110, not 2010")
    }

    @Test("an HTTP-date is measured from the response's Date header when it has one")
    func responseDate() {
        let response = HTTPResponse(statusCode: 503, headers: [
            "Retry-After": "Tue, 14 Nov 2023 22:13:50 GMT",
            "Date": "Tue, 14 Nov 2023 22:13:40 GMT",  // the server's clock is 20 s ahead of ours
        ])
        #expect(RetryAfter.seconds(in: response, now: now) == 10)
        #expect(RetryAfter.seconds(in: HTTPResponse(statusCode: 503), now: now) == nil)
    }

    @Test("OAuth2Client puts Retry-After on the error of a JSON error, a text 429 and an HTML 503")
    func clientErrors() async throws {
        let clock = ManualWallClock(now)
        let endpoint = URL(string: "https://login.example.com/t/oauth2/v2.0/token")!
        let answers: [(HTTPResponse, TimeInterval?)] = [
            (.json(429, #"{"error":"temporarily_unavailable","error_codes":[50196]}"#, headers: ["Retry-After": "45"]), 45),
            (HTTPResponse(statusCode: 429, headers: ["Content-Type": "text/plain", "retry-after": "60"], body: Data("Too Many Requests".utf8)), 60),
            (HTTPResponse(statusCode: 503, headers: ["Content-Type": "text/html", "Retry-After": "Tue, 14 Nov 2023 22:14:00 GMT"], body: Data("<html/>".utf8)), 40),
            (.json(400, #"{"error":"invalid_grant"}"#), nil),
            (.json(503, #"{"error":"temporarily_unavailable"}"#, headers: ["Retry-After": "later"]), nil),
        ]
        for (response, expected) in answers {
            let client = OAuth2Client(transport: FakeTransport(answer: response), clock: clock)
            let error = try #require(await capture {
                try await client.redeemRefreshToken(tokenEndpoint: endpoint, clientID: "c", refreshToken: "rt", scopes: ["s"], correlationID: "x")
            })
            #expect(error.retryAfter == expected)
            #expect(error.httpStatusCode == response.statusCode)
        }
    }

    @Test("MSALError.description shows retry_after in whole seconds")
    func description() {
        let error = MSALError(.serverError, message: "Busy.", httpStatusCode: 429, retryAfter: 29.2)
        #expect(error.description == "serverError: Busy. http_status=429 retry_after=30s")
    }
}
