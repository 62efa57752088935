import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
import MSALCore
import MSALNetwork
import MSALTestSupport
import MSALWebAuth
import Synchronization
import Testing

/// A token endpoint without I/O: answers every request with `answer` and records it.
private final class TokenEndpointTransport: HTTPTransport {
    private let recorded = Mutex<[HTTPRequest]>([])
    private let answer: HTTPResponse

    init(_ answer: HTTPResponse) { self.answer = answer }

    var requests: [HTTPRequest] { recorded.withLock { $0 } }

    func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse {
        recorded.withLock { $0.append(request) }
        return answer
    }
}

/// Ordered record of what happened, shared by the closures of a test.
private final class Events: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ event: String) { storage.withLock { $0.append(event) } }
    var all: [String] { storage.withLock { $0 } }
}

/// A one-shot signal: ``wait()`` returns once ``fire()`` was called, before or after.
private final class Signal: Sendable {
    private struct State {
        var fired = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    func fire() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let fired = state.withLock { state in
                if !state.fired { state.waiter = continuation }
                return state.fired
            }
            if fired { continuation.resume() }
        }
    }
}

private let codeSecret = "AUTH-CODE-SECRET-7"
private let accessTokenSecret = "ACCESS-TOKEN-SECRET-7"
private let tokenEndpoint = URL(string: "https://login.example.com/common/oauth2/v2.0/token")!
private let authorizeEndpoint = URL(string: "https://login.example.com/common/oauth2/v2.0/authorize")!

private func tokenAnswer() -> HTTPResponse {
    HTTPResponse(
        statusCode: 200, headers: ["Content-Type": "application/json"],
        body: Data(#"{"access_token":"\#(accessTokenSecret)","token_type":"Bearer","expires_in":3600,"scope":"User.Read","refresh_token":"RT-SECRET"}"#.utf8))
}

private func errorAnswer(_ error: String) -> HTTPResponse {
    HTTPResponse(
        statusCode: 400, headers: ["Content-Type": "application/json"],
        body: Data(#"{"error":"\#(error)","error_description":"\#(error) described"}"#.utf8))
}

/// The query parameters of a URL (URLComponents decoding).
private func queryItems(_ url: URL) -> [String: String] {
    var result: [String: String] = [:]
    for item in URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? [] {
        result[item.name] = item.value ?? ""
    }
    return result
}

/// The form fields of a recorded token request.
private func formFields(_ request: HTTPRequest) -> [String: String] {
    var components = URLComponents()
    components.percentEncodedQuery = String(decoding: request.body ?? Data(), as: UTF8.self).replacingOccurrences(of: "+", with: "%20")
    var result: [String: String] = [:]
    for item in components.queryItems ?? [] { result[item.name] = item.value ?? "" }
    return result
}

/// What the authorization server does in the "browser": redirect with `query` plus the
/// authorization URL's `state` to its `redirect_uri`.
/// - Returns: the page the listener answered.
@discardableResult
private func performRedirect(for authorizationURL: URL, query: String, state overrideState: String? = nil) async throws -> (status: Int, body: String) {
    let parameters = queryItems(authorizationURL)
    let redirectURI = try #require(parameters["redirect_uri"].flatMap(URL.init(string:)))
    let state = overrideState ?? parameters["state"] ?? ""
    let stateEncoded = state.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    return try await loopbackGET(loopbackRedirectURL(redirectURI, query: query + "&state=" + stateEncoded))
}

/// A listener started and a request built with its bound redirect URI, as the facade does.
private func startedListenerAndRequest(
    redirectURI: String = "http://localhost/",
    timeout: TimeInterval = 300
) throws -> (LoopbackRedirectListener, AuthorizationRequest) {
    // The listener needs the request's state, the request the listener's bound port: create
    // the request, then give it the bound redirect URI (its state stays the same).
    var request = try AuthorizationRequest(
        authorizationEndpoint: authorizeEndpoint, clientID: "client-1",
        redirectURI: URL(string: redirectURI)!, scopes: ["User.Read"]
    )
    let listener = LoopbackRedirectListener(redirectURI: URL(string: redirectURI)!, expectedState: request.state, timeout: timeout)
    request.redirectURI = try listener.start()
    return (listener, request)
}

@Suite("AuthorizationCodeFlow")
struct AuthorizationCodeFlowTests {
    @Test func browserRedirectsWithACodeAndTheCodeIsRedeemed() async throws {
        let (listener, request) = try startedListenerAndRequest()
        let transport = TokenEndpointTransport(tokenAnswer())
        let events = Events()
        let page = Mutex<String>("")
        let logLines = Mutex<[String]>([])
        let logger = Logger(level: .debug) { _, line in logLines.withLock { $0.append(line) } }
        let browser = ClosureBrowserLauncher { url in
            events.append("browser")
            guard let answer = try? await performRedirect(for: url, query: "code=\(codeSecret)") else { return false }
            page.withLock { $0 = "\(answer.status) \(answer.body)" }
            return true
        }
        let flow = AuthorizationCodeFlow(client: OAuth2Client(transport: transport), browser: browser, logger: logger)

        let token = try await flow.run(
            request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "corr-1"
        ) { url, opened in
            events.append("onAuthorizationURL opened=\(opened) same=\(url == request.url)")
        }

        #expect(token.accessToken == accessTokenSecret)
        #expect(events.all == ["browser", "onAuthorizationURL opened=true same=true"])
        let answered = page.withLock { $0 }
        #expect(answered.hasPrefix("200 "))
        #expect(answered.contains("You are signed in; you can close this window"))

        let sent = try #require(transport.requests.first)
        #expect(transport.requests.count == 1)
        #expect(sent.url == tokenEndpoint)
        #expect(sent.header("client-request-id") == "corr-1")
        #expect(formFields(sent) == request.tokenParameters(code: codeSecret))
        #expect(formFields(sent)["redirect_uri"] == request.redirectURI.absoluteString)

        // The listener is closed, and no secret reached the log.
        #expect(!isListening(try #require(request.redirectURI.port)))
        let log = logLines.withLock { $0 }.joined(separator: "\n")
        #expect(!log.isEmpty)
        for secret in [codeSecret, accessTokenSecret, request.state, request.nonce, request.pkce.codeVerifier, request.pkce.codeChallenge] {
            #expect(!log.contains(secret))
        }
    }

    @Test func anIdleBrowserConnectionDoesNotDelayTheResult() async throws {
        // Browsers open speculative connections and leave them silent; the flow must not wait
        // for them (they end after the read timeout, here 300 s).
        var request = try AuthorizationRequest(
            authorizationEndpoint: authorizeEndpoint, clientID: "client-1",
            redirectURI: URL(string: "http://localhost/")!, scopes: ["User.Read"])
        let listener = LoopbackRedirectListener(
            redirectURI: request.redirectURI, expectedState: request.state, readTimeout: 300)
        request.redirectURI = try listener.start()
        let port = try #require(request.redirectURI.port)
        let events = Events()
        let idle = Task.detached {
            // Connect and stay silent until the flow is done (or 10 s passed), then leave.
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            events.append("idle connected")
            for _ in 0..<1000 where !events.all.contains("flow done") {
                try? await Task.sleep(nanoseconds: 10_000_000)
            }
            events.append("idle leaves")  // before close: closing may release a waiting flow
            close(fd)
        }
        let browser = ClosureBrowserLauncher { url in
            while !events.all.contains("idle connected") { try? await Task.sleep(nanoseconds: 5_000_000) }
            return (try? await performRedirect(for: url, query: "code=\(codeSecret)")) != nil
        }
        let flow = AuthorizationCodeFlow(client: OAuth2Client(transport: TokenEndpointTransport(tokenAnswer())), browser: browser)
        let token = try await flow.run(request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "c") { _, _ in }
        events.append("flow done")
        await idle.value
        #expect(token.accessToken == accessTokenSecret)
        #expect(events.all == ["idle connected", "flow done", "idle leaves"])
    }

    @Test func accessDeniedShowsTheErrorPageAndThrowsUserCanceled() async throws {
        let (listener, request) = try startedListenerAndRequest(redirectURI: "http://127.0.0.1/callback")
        let transport = TokenEndpointTransport(tokenAnswer())
        let page = Mutex<String>("")
        let browser = ClosureBrowserLauncher { url in
            let answer = try? await performRedirect(
                for: url, query: "error=access_denied&error_description=The+user+said+%3Cb%3Eno%3C%2Fb%3E")
            page.withLock { $0 = answer?.body ?? "" }
            return true
        }
        let flow = AuthorizationCodeFlow(client: OAuth2Client(transport: transport), browser: browser)
        let error = await thrown {
            try await flow.run(request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "corr-2") { _, _ in }
        }
        #expect(error?.code == .userCanceled)
        #expect(error?.oauthError == "access_denied")
        #expect(error?.correlationID == "corr-2")
        #expect(transport.requests.isEmpty, "nothing is redeemed")
        let body = page.withLock { $0 }
        #expect(body.contains("access_denied"))
        #expect(body.contains("The user said &lt;b&gt;no&lt;/b&gt;"))
    }

    @Test func otherErrorResponseIsAServerError() async throws {
        let (listener, request) = try startedListenerAndRequest()
        let browser = ClosureBrowserLauncher { url in
            (try? await performRedirect(for: url, query: "error=invalid_scope&error_description=bad+scope&suberror=x")) != nil
        }
        let flow = AuthorizationCodeFlow(client: OAuth2Client(transport: TokenEndpointTransport(tokenAnswer())), browser: browser)
        let error = await thrown {
            try await flow.run(request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "c") { _, _ in }
        }
        #expect(error?.code == .serverError)
        #expect(error?.oauthError == "invalid_scope")
        #expect(error?.oauthErrorDescription == "bad scope")
        #expect(error?.subError == "x")
    }

    @Test func forgedRedirectIsIgnoredAndTheRealOneCompletes() async throws {
        let (listener, request) = try startedListenerAndRequest()
        let forged = Mutex<Int>(0)
        let browser = ClosureBrowserLauncher { url in
            let forgedAnswer = try? await performRedirect(for: url, query: "code=FORGED", state: "attacker-state")
            forged.withLock { $0 = forgedAnswer?.status ?? -1 }
            return (try? await performRedirect(for: url, query: "code=\(codeSecret)")) != nil
        }
        let transport = TokenEndpointTransport(tokenAnswer())
        let flow = AuthorizationCodeFlow(client: OAuth2Client(transport: transport), browser: browser)
        _ = try await flow.run(request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "c") { _, _ in }
        #expect(forged.withLock { $0 } == 400)
        #expect(transport.requests.map { formFields($0)["code"] } == [codeSecret])
    }

    @Test func withoutABrowserTheAppGetsTheURLAndTheUserCompletesElsewhere() async throws {
        let (listener, request) = try startedListenerAndRequest()
        let flow = AuthorizationCodeFlow(
            client: OAuth2Client(transport: TokenEndpointTransport(tokenAnswer())),
            browser: ClosureBrowserLauncher { _ in false })
        let opened = Mutex<Bool?>(nil)
        let token = try await flow.run(request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "c") { url, browserOpened in
            opened.withLock { $0 = browserOpened }
            // The app prints the URL; the user opens it by hand and signs in.
            _ = try? await performRedirect(for: url, query: "code=\(codeSecret)")
        }
        #expect(opened.withLock { $0 } == false)
        #expect(token.accessToken == accessTokenSecret)
    }

    @Test func tokenEndpointErrorIsPassedOnWithTheCorrelationID() async throws {
        let (listener, request) = try startedListenerAndRequest()
        let browser = ClosureBrowserLauncher { url in
            (try? await performRedirect(for: url, query: "code=\(codeSecret)")) != nil
        }
        let flow = AuthorizationCodeFlow(client: OAuth2Client(transport: TokenEndpointTransport(errorAnswer("invalid_grant"))), browser: browser)
        let error = await thrown {
            try await flow.run(request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "corr-3") { _, _ in }
        }
        #expect(error?.code == .interactionRequired)
        #expect(error?.oauthError == "invalid_grant")
        #expect(error?.correlationID == "corr-3")
        #expect(error.map { !$0.description.contains(codeSecret) } == true)
    }

    @Test func listenerIsStartedBeforeTheBrowserOpens() async throws {
        // The flow starts an unstarted listener itself; the request must carry its port, so use
        // a fixed free port.
        let probe = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/")!, expectedState: "x")
        let port = try #require(try probe.start().port)
        probe.stop()
        let redirectURI = URL(string: "http://127.0.0.1:\(port)/")!
        let request = try AuthorizationRequest(
            authorizationEndpoint: authorizeEndpoint, clientID: "client-1", redirectURI: redirectURI, scopes: ["User.Read"])
        let listener = LoopbackRedirectListener(redirectURI: redirectURI, expectedState: request.state)
        let browser = ClosureBrowserLauncher { url in
            // Succeeds only if someone already listens on the redirect URI.
            (try? await performRedirect(for: url, query: "code=\(codeSecret)")) != nil
        }
        let flow = AuthorizationCodeFlow(client: OAuth2Client(transport: TokenEndpointTransport(tokenAnswer())), browser: browser)
        let opened = Mutex<Bool?>(nil)
        let token = try await flow.run(request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "c") { _, browserOpened in
            opened.withLock { $0 = browserOpened }
        }
        #expect(opened.withLock { $0 } == true)
        #expect(token.accessToken == accessTokenSecret)
    }

    @Test func requestWithAnotherRedirectURIIsRejectedBeforeTheBrowserOpens() async throws {
        let (listener, started) = try startedListenerAndRequest()
        var request = started
        request.redirectURI = URL(string: "http://localhost:1/")!  // not the bound port
        let browserCalls = Mutex(0)
        let flow = AuthorizationCodeFlow(
            client: OAuth2Client(transport: TokenEndpointTransport(tokenAnswer())),
            browser: ClosureBrowserLauncher { _ in browserCalls.withLock { $0 += 1 }; return true })
        let error = await thrown {
            try await flow.run(request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "c") { _, _ in }
        }
        #expect(error == .internal(.invalidRedirectURI, ""))
        #expect(browserCalls.withLock { $0 } == 0)
    }

    @Test func timeoutWhileWaitingForTheRedirect() async throws {
        let (listener, request) = try startedListenerAndRequest(timeout: 0.3)
        let flow = AuthorizationCodeFlow(
            client: OAuth2Client(transport: TokenEndpointTransport(tokenAnswer())),
            browser: ClosureBrowserLauncher { _ in true })  // the user never finishes
        let error = await thrown {
            try await flow.run(request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "corr-4") { _, _ in }
        }
        #expect(error == .internal(.timeout, ""))
        #expect(error?.correlationID == "corr-4")
    }

    @Test func cancelingTheSignInThrowsUserCanceledAndClosesTheListener() async throws {
        let (listener, request) = try startedListenerAndRequest()
        let urlShown = Signal()
        let flow = AuthorizationCodeFlow(
            client: OAuth2Client(transport: TokenEndpointTransport(tokenAnswer())),
            browser: ClosureBrowserLauncher { _ in true })
        // Learn when the flow is past the browser, then cancel it.
        let task = Task { () async -> MSALError? in
            await thrown {
                try await flow.run(request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "c") { _, _ in
                    urlShown.fire()
                }
            }
        }
        await urlShown.wait()
        // Had cancellation been ignored, the flow would end as .internal(.timeout) after 300 s.
        task.cancel()
        let error = await task.value
        #expect(error?.code == .userCanceled)
        #expect(try await portCloses(try #require(request.redirectURI.port)))
    }

    // MARK: - End to end against the local identity provider

    @Test(arguments: [LocalIdentityProvider.UserAction?.none, .cancel])
    func endToEndAgainstTheLocalIdentityProvider(action: LocalIdentityProvider.UserAction?) async throws {
        let provider = LocalIdentityProvider()
        try provider.start()
        defer { provider.stop() }
        if let action { provider.setNextUserAction(action) }
        var request = try AuthorizationRequest(
            authorizationEndpoint: provider.baseURL.appendingPathComponent("common/oauth2/v2.0/authorize"),
            clientID: LocalIdentityProvider.demoClientID, redirectURI: URL(string: "http://localhost/")!,
            scopes: ["user.read", "openid", "profile", "offline_access"], includeClientInfo: true)
        let listener = LoopbackRedirectListener(redirectURI: request.redirectURI, expectedState: request.state)
        request.redirectURI = try listener.start()
        let page = Mutex<String>("")
        // The "browser": GET the authorize URL and follow the provider's 302 to the listener.
        let browser = ClosureBrowserLauncher { url in
            guard let (status, body) = try? await loopbackGET(url) else { return false }
            page.withLock { $0 = "\(status) \(body)" }
            return true
        }
        let flow = AuthorizationCodeFlow(client: OAuth2Client(transport: URLSessionTransport()), browser: browser)
        let tokenEndpoint = provider.baseURL.appendingPathComponent("common/oauth2/v2.0/token")
        do {
            let token = try await flow.run(request: request, listener: listener, tokenEndpoint: tokenEndpoint, correlationID: "e2e") { _, _ in }
            #expect(action == nil)
            #expect(!token.accessToken.isEmpty)
            #expect(token.idToken != nil)
            #expect(page.withLock { $0 }.contains("You are signed in"))
        } catch {
            #expect(action == .cancel)
            #expect(error.code == .userCanceled)
            #expect(error.oauthError == "access_denied")
            #expect(page.withLock { $0 }.contains("access_denied"))
        }
    }

    // MARK: - Custom-scheme variant (the response is delivered by the facade)

    @Test func customSchemeResponseIsRedeemed() async throws {
        let request = try AuthorizationRequest(
            authorizationEndpoint: authorizeEndpoint, clientID: "client-1",
            redirectURI: URL(string: "msauth.com.example.app://auth")!, scopes: ["User.Read"])
        let events = Events()
        let transport = TokenEndpointTransport(tokenAnswer())
        let flow = AuthorizationCodeFlow(
            client: OAuth2Client(transport: transport),
            browser: ClosureBrowserLauncher { _ in events.append("browser"); return true })
        let state = request.state
        let token = try await flow.run(
            request: request,
            awaitingResponse: { () async throws(MSALError) -> AuthorizationResponse in
                events.append("await")
                let url = URL(string: "msauth.com.example.app://auth?code=\(codeSecret)&state=\(state)")!
                guard let response = AuthorizationResponse.parse(url: url, expectedState: state) else {
                    throw .internal(.unexpected, "state did not match")
                }
                return response
            },
            tokenEndpoint: tokenEndpoint, correlationID: "c"
        ) { _, opened in events.append("url opened=\(opened)") }
        #expect(token.accessToken == accessTokenSecret)
        #expect(events.all == ["browser", "url opened=true", "await"])
        #expect(transport.requests.map(formFields) == [request.tokenParameters(code: codeSecret)])
    }

    @Test func customSchemeWaiterErrorsArePassedOn() async throws {
        let request = try AuthorizationRequest(
            authorizationEndpoint: authorizeEndpoint, clientID: "client-1",
            redirectURI: URL(string: "msauth.com.example.app://auth")!, scopes: ["User.Read"])
        let transport = TokenEndpointTransport(tokenAnswer())
        let flow = AuthorizationCodeFlow(client: OAuth2Client(transport: transport), browser: ClosureBrowserLauncher { _ in true })
        let canceled = await thrown {
            try await flow.run(
                request: request,
                awaitingResponse: { () async throws(MSALError) -> AuthorizationResponse in
                    throw MSALError(.userCanceled, message: "the app stopped waiting")
                },
                tokenEndpoint: tokenEndpoint, correlationID: "corr-5"
            ) { _, _ in }
        }
        #expect(canceled?.code == .userCanceled)
        #expect(canceled?.correlationID == "corr-5")
        let denied = await thrown {
            try await flow.run(
                request: request,
                awaitingResponse: { () async throws(MSALError) -> AuthorizationResponse in
                    .error(error: "access_denied", description: nil, uri: nil, subError: nil)
                },
                tokenEndpoint: tokenEndpoint, correlationID: "c"
            ) { _, _ in }
        }
        #expect(denied?.code == .userCanceled)
        let noCode = await thrown {
            try await flow.run(
                request: request,
                awaitingResponse: { () async throws(MSALError) -> AuthorizationResponse in .code("") },
                tokenEndpoint: tokenEndpoint, correlationID: "c"
            ) { _, _ in }
        }
        #expect(noCode == MSALError(.serverError, internalCode: .invalidResponse, message: ""))
        #expect(transport.requests.isEmpty)
    }
}
