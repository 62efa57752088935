import Foundation
import MSALCore
@testable import MSALNetwork
import MSALTestSupport
import Testing

/// A 2xx token response is read member by member (`TokenResponse(readingSuccess:requestCorrelationID:)`);
/// these tests hold it to the dictionary path (`ServerResponse.jsonObject` then
/// `TokenResponse(json:host:status:correlationID:)`), which reads every other answer.
@Suite("A token response read member by member is the one the parsed dictionary gives")
struct TokenResponseReadingTests {
    static let names = [
        "access_token", "token_type", "expires_in", "ext_expires_in", "refresh_in", "refresh_token", "id_token",
        "scope", "client_info", "foci", "correlation_id", "error", "error_description", "other", "nested",
        "acc\\u0065ss_token", "é",
    ]
    static let values = [
        #""AT-1""#, #""""#, #""3600""#, "3600", "1.5", "-0.5", "1e300", "null", "true", #""Bearer""#, #""pop""#,
        #"["a",{"b":[1,2]}]"#, #"{"x":{"y":"z"}}"#, #""invalid_grant""#, "1",
    ]

    /// What the dictionary path answers: the response, or the error it throws.
    static func dictionaryPath(_ response: HTTPResponse, requestCorrelationID: String) -> Result<TokenResponse, MSALError> {
        Result { () throws(MSALError) -> TokenResponse in
            let object = try ServerResponse.jsonObject(response, endpoint: "token endpoint", host: "h", requestCorrelationID: requestCorrelationID)
            let correlation = ServerResponse.correlationID(object, response, requestCorrelationID: requestCorrelationID)
            return try TokenResponse(json: object, host: "h", status: response.statusCode, correlationID: correlation)
        }
    }

    @Test("Seeded random bodies (repeated, missing and mistyped fields, errors, extra fields, 2xx and not, header correlation IDs): read member by member exactly when the dictionary path answers, to the same response")
    func randomBodies() {
        var random = SplitMix64(seed: 1_202)
        var readFast = 0, declined = 0
        for _ in 0..<6_000 {
            let count = Int.random(in: 0...9, using: &random)
            var members = (0..<count).map { _ in
                #""\#(Self.names.randomElement(using: &random)!)":\#(Self.values.randomElement(using: &random)!)"#
            }
            if Bool.random(using: &random) { members.insert(#""access_token":"AT-\#(Int.random(in: 0...9, using: &random))""#, at: 0) }
            var object = "{" + members.joined(separator: ",") + "}"
            // Sometimes text simdjson refuses (a byte order mark, an integer beyond 64 bits), read through Foundation.
            switch Int.random(in: 0..<10, using: &random) {
            case 0: object = "\u{FEFF}" + object
            case 1 where !members.isEmpty: object = "{\"big\":123456789012345678901234567890," + object.dropFirst()
            default: break
            }
            let body = [object, "[1]", "", "<html>", " {} "][Int.random(in: 0..<20, using: &random) < 16 ? 0 : Int.random(in: 1...4, using: &random)]
            var headers = ["Content-Type": Int.random(in: 0..<10, using: &random) == 0 ? "text/html" : "application/json"]
            switch Int.random(in: 0..<3, using: &random) {
            case 0: headers["client-request-id"] = "header-id"
            case 1: headers["client-request-id"] = ""
            default: break
            }
            let status = [200, 200, 200, 201, 400, 500][Int.random(in: 0..<6, using: &random)]
            let response = HTTPResponse(statusCode: status, headers: headers, body: Data(body.utf8))
            let expected = Self.dictionaryPath(response, requestCorrelationID: "sent-id")
            if let fast = TokenResponse(readingSuccess: response, requestCorrelationID: "sent-id") {
                readFast += 1
                switch expected {
                case .success(let tokens): #expect(tokens == fast, "\(status) \(headers) \(body)")
                case .failure(let error): Issue.record("read an answer the dictionary path rejects (\(error.code)): \(status) \(body)")
                }
            } else {
                declined += 1
                // Declined only where the dictionary path throws (it then says why).
                if case .success = expected { Issue.record("declined an answer the dictionary path reads: \(status) \(body)") }
            }
        }
        // Both branches are exercised often.
        #expect(readFast > 1_000 && declined > 1_000, "\(readFast) read, \(declined) declined")
    }

    @Test("foci: a non-empty string as sent; a number in range as a whole number; anything else none (no trap on 1e300)")
    func familyID() {
        #expect(TokenResponse.familyID(.string("1")) == "1")
        #expect(TokenResponse.familyID(.string("")) == nil)
        #expect(TokenResponse.familyID(.number(1)) == "1")
        #expect(TokenResponse.familyID(.number(1.9)) == "1")
        #expect(TokenResponse.familyID(.number(-0.5)) == "0")
        #expect(TokenResponse.familyID(.number(1e300)) == nil)
        #expect(TokenResponse.familyID(.bool(true)) == nil)
        #expect(TokenResponse.familyID(nil) == nil)
    }

    @Test("The refresh through OAuth2Client reads the usual answer, and still throws the server's error")
    func throughTheClient() async throws {
        let endpoint = URL(string: "https://login.example.com/t/oauth2/v2.0/token")!
        let ok = FakeTransport(answer: .json(200, #"{"access_token":"AT","expires_in":"3599","foci":1,"scope":"a b","x":[1],"refresh_token":"RT"}"#, headers: ["client-request-id": "from-header"]))
        let tokens = try await OAuth2Client(transport: ok).redeemRefreshToken(
            tokenEndpoint: endpoint, clientID: "c", refreshToken: "old", scopes: ["a"], correlationID: "sent")
        #expect(tokens == TokenResponse(
            accessToken: "AT", expiresIn: 3599, refreshToken: "RT", scope: "a b", familyID: "1", correlationID: "from-header",
            additionalFields: ["x": .array([.number(1)])]))
        let rejected = FakeTransport(answer: .json(200, #"{"access_token":"AT","error":"invalid_grant"}"#))
        let error = await capture {
            try await OAuth2Client(transport: rejected).redeemRefreshToken(
                tokenEndpoint: endpoint, clientID: "c", refreshToken: "old", scopes: ["a"], correlationID: "sent")
        }
        #expect(error?.code == .interactionRequired)
        #expect(error?.oauthError == "invalid_grant")
    }
}
