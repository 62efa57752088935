import Foundation
import MSALCore
import MSALWebAuth
import Testing

@Suite("AuthorizationResponse")
struct AuthorizationResponseTests {
    private let state = "Zq3v2Yd8xXh1m0Qf7cT4sK9pW6nB5rLaE2uJ8oI1yGk"
    private let secretCode = "0.AXYA-secret-authorization-code_value"

    @Test("A code with the expected state is a code")
    func codeWithState() {
        let response = AuthorizationResponse.parse(queryItems: ["code": secretCode, "state": state, "session_state": "x"], expectedState: state)
        #expect(response == .code(secretCode))
        #expect(response?.error == nil)
    }

    @Test("A full redirect URL is parsed; + is a space and %2B a plus (form encoding)")
    func redirectURL() throws {
        let url = try #require(URL(string: "http://localhost:51234/cb?code=a%2Bb%2Fc&state=\(state)&session_state=1"))
        #expect(AuthorizationResponse.parse(url: url, expectedState: state) == .code("a+b/c"))

        let errorURL = try #require(URL(string: "http://localhost:51234/cb?error=invalid_scope&error_description=AADSTS70011%3A+The+scope+is+invalid.&state=\(state)"))
        #expect(AuthorizationResponse.parse(url: errorURL, expectedState: state)
            == .error(error: "invalid_scope", description: "AADSTS70011: The scope is invalid.", uri: nil, subError: nil))
    }

    @Test("A state that differs is not this request's response", arguments: [
        "Zq3v2Yd8xXh1m0Qf7cT4sK9pW6nB5rLaE2uJ8oI1yGK", "Zq3v2Yd8xXh1m0Qf7cT4sK9pW6nB5rLaE2uJ8oI1yG", "", "other",
    ])
    func stateMismatch(other: String) {
        #expect(AuthorizationResponse.parse(queryItems: ["code": secretCode, "state": other], expectedState: state) == nil)
        #expect(AuthorizationResponse.parse(queryItems: ["error": "access_denied", "state": other], expectedState: state) == nil)
    }

    @Test("A missing state is not this request's response, even for an error")
    func stateMissing() throws {
        #expect(AuthorizationResponse.parse(queryItems: ["code": secretCode], expectedState: state) == nil)
        #expect(AuthorizationResponse.parse(queryItems: ["error": "access_denied"], expectedState: state) == nil)
        #expect(AuthorizationResponse.parse(url: try #require(URL(string: "http://localhost/cb?code=x")), expectedState: state) == nil)
        #expect(AuthorizationResponse.parse(url: try #require(URL(string: "http://localhost/favicon.ico")), expectedState: state) == nil)
    }

    @Test("An empty expected state matches nothing, not even an empty state")
    func emptyExpectedState() {
        #expect(AuthorizationResponse.parse(queryItems: ["code": secretCode, "state": ""], expectedState: "") == nil)
    }

    @Test("A repeated parameter in a redirect URL is refused (RFC 6749 §3.1)")
    func repeatedParameter() throws {
        let url = try #require(URL(string: "http://localhost/cb?code=a&code=b&state=\(state)"))
        #expect(AuthorizationResponse.parse(url: url, expectedState: state) == nil)
    }

    @Test("access_denied is userCanceled and says the user declined")
    func accessDenied() throws {
        let response = try #require(AuthorizationResponse.parse(
            queryItems: ["error": "access_denied", "error_description": "AADSTS65004: User declined to consent.", "state": state],
            expectedState: state
        ))
        let error = try #require(response.error)
        #expect(error.code == .userCanceled)
        #expect(error.message.contains("declined"))
        #expect(error.oauthError == "access_denied")
        #expect(error.oauthErrorDescription == "AADSTS65004: User declined to consent.")
    }

    @Test("A token echoed in the redirect's error_description is redacted in the response, the error's message and its description")
    func echoedTokenRedacted() throws {
        let token = "0.AXkAv4j5cvGGr0GRqy180BHbR8ZbKmoREiIzM0RERVVWZmYAAA"
        let response = try #require(AuthorizationResponse.parse(
            queryItems: ["error": "invalid_request", "error_description": "AADSTS90014: bad login_hint \(token) given", "state": state],
            expectedState: state
        ))
        let error = try #require(response.error)
        for text in [String(describing: response), error.message, error.description, error.oauthErrorDescription ?? ""] {
            #expect(!text.contains(token), "\(text)")
        }
        #expect(error.oauthErrorDescription == "AADSTS90014: bad login_hint <redacted> given")
    }

    @Test("Entra's error_subcode=cancel on the authorize redirect is read as the suberror")
    func errorSubcode() throws {
        let response = try #require(AuthorizationResponse.parse(
            queryItems: ["error": "access_denied", "error_subcode": "cancel", "state": state], expectedState: state
        ))
        #expect(response == .error(error: "access_denied", description: nil, uri: nil, subError: "cancel"))
        #expect(response.error?.code == .userCanceled)
        #expect(response.error?.subError == "cancel")
    }

    @Test("Any other error is serverError with error, description and suberror; the error wins over a code")
    func otherError() throws {
        let response = try #require(AuthorizationResponse.parse(
            queryItems: [
                "error": "interaction_required", "error_description": "AADSTS50076: MFA needed.",
                "error_uri": "https://login.microsoftonline.com/error?code=50076", "suberror": "basic_action",
                "code": secretCode, "state": state,
            ],
            expectedState: state
        ))
        #expect(response == .error(
            error: "interaction_required", description: "AADSTS50076: MFA needed.",
            uri: "https://login.microsoftonline.com/error?code=50076", subError: "basic_action"
        ))
        let error = try #require(response.error)
        #expect(error.code == .serverError)
        #expect(error.internalCode == nil)
        #expect(error.oauthError == "interaction_required")
        #expect(error.oauthErrorDescription == "AADSTS50076: MFA needed.")
        #expect(error.subError == "basic_action")
        #expect(error.message.contains("interaction_required"))
    }

    @Test("An empty or missing code is serverError with invalidResponse")
    func emptyCode() throws {
        for items in [["code": "", "state": state], ["state": state]] {
            let response = try #require(AuthorizationResponse.parse(queryItems: items, expectedState: state))
            #expect(response == .code(""))
            let error = try #require(response.error)
            #expect(error.code == .serverError)
            #expect(error.internalCode == .invalidResponse)
        }
    }

    @Test("description, debugDescription and dump never show the code")
    func redacted() {
        let response = AuthorizationResponse.code(secretCode)
        var dumped = ""
        dump(response, to: &dumped)
        for text in [response.description, String(reflecting: response), "\(response)", dumped] {
            #expect(!text.contains(secretCode))
            #expect(text.contains("redacted"))
        }
        let error = AuthorizationResponse.error(error: "invalid_request", description: "bad", uri: nil, subError: nil)
        #expect(error.description.contains("invalid_request"))
        #expect(error.error?.description.contains("invalid_request") == true)
    }
}
