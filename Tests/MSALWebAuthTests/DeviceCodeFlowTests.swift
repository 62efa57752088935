import Foundation
import MSALCore
import MSALNetwork
import MSALWebAuth
import Synchronization
import Testing

/// A scripted provider: the device authorization endpoint answers `deviceAnswer`, the token
/// endpoint answers `tokenAnswers` in order (the last one repeats). Records every step in `events`.
private final class DeviceCodeScriptedTransport: HTTPTransport, Sendable {
    struct State {
        var events: [String] = []
        var requests: [HTTPRequest] = []
        var tokenAnswers: [HTTPResponse]
    }

    let state: Mutex<State>
    let deviceAnswer: HTTPResponse
    let clock: ManualWallClock

    init(clock: ManualWallClock, deviceAnswer: HTTPResponse, tokenAnswers: [HTTPResponse]) {
        self.clock = clock
        self.deviceAnswer = deviceAnswer
        self.state = Mutex(State(tokenAnswers: tokenAnswers))
    }

    var events: [String] { state.withLock { $0.events } }
    var requests: [HTTPRequest] { state.withLock { $0.requests } }
    var tokenRequests: [HTTPRequest] { requests.filter { $0.url.path.hasSuffix("/token") } }

    func record(_ event: String) { state.withLock { $0.events.append(event) } }

    func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse {
        let elapsed = Int(clock.now().timeIntervalSince1970 - 1_700_000_000)
        return state.withLock { state in
            state.requests.append(request)
            if request.url.path.hasSuffix("/devicecode") {
                state.events.append("device@\(elapsed)")
                return deviceAnswer
            }
            state.events.append("token@\(elapsed)")
            return state.tokenAnswers.count > 1 ? state.tokenAnswers.removeFirst() : state.tokenAnswers[0]
        }
    }
}

private func json(_ status: Int, _ body: String, headers: [String: String] = [:]) -> HTTPResponse {
    HTTPResponse(statusCode: status, headers: headers.merging(["content-type": "application/json"]) { a, _ in a }, body: Data(body.utf8))
}

private let deviceCodeSecret = "DEVICE-CODE-SECRET-42"
private let accessTokenSecret = "ACCESS-TOKEN-SECRET-42"

private func deviceAnswer(expiresIn: Int = 900, interval: Int? = 5) -> HTTPResponse {
    let intervalField = interval.map { #","interval":\#($0)"# } ?? ""
    return json(200, #"{"device_code":"\#(deviceCodeSecret)","user_code":"WDJB-MJHT","verification_uri":"https://example.com/device","expires_in":\#(expiresIn)\#(intervalField),"message":"Enter WDJB-MJHT"}"#)
}

private func oauthError(_ error: String, status: Int = 400, extra: String = "") -> HTTPResponse {
    json(status, #"{"error":"\#(error)","error_description":"\#(error) described"\#(extra)}"#)
}

private let tokenAnswer = json(200, #"{"access_token":"\#(accessTokenSecret)","token_type":"Bearer","expires_in":3600,"refresh_token":"RT"}"#)

/// A value behind a lock, capturable by `@Sendable` closures.
private final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
    var value: Value { mutex.withLock { $0 } }
}

/// A flow with a manual clock and a sleep that records the delay and moves the clock instead of waiting.
private final class Harness: Sendable {
    let clock = ManualWallClock()
    let sleeps = Locked<[TimeInterval]>([])
    let lines = Locked<[String]>([])
    let transport: DeviceCodeScriptedTransport

    init(device: HTTPResponse = deviceAnswer(), tokens: [HTTPResponse]) {
        transport = DeviceCodeScriptedTransport(clock: clock, deviceAnswer: device, tokenAnswers: tokens)
    }

    var recordedSleeps: [TimeInterval] { sleeps.value }

    func flow(sleep: (@Sendable (TimeInterval) async throws -> Void)? = nil) -> DeviceCodeFlow {
        let clock = clock
        let sleeps = sleeps
        let lines = lines
        let recording: @Sendable (TimeInterval) async throws -> Void = { seconds in
            sleeps.withLock { $0.append(seconds) }
            clock.advance(by: seconds)
        }
        let logger = Logger(level: .debug) { _, line in lines.withLock { $0.append(line) } }
        return DeviceCodeFlow(client: OAuth2Client(transport: transport, logger: logger), clock: clock, sleep: sleep ?? recording, logger: logger)
    }

    func run(
        _ flow: DeviceCodeFlow? = nil,
        onUserCode: @escaping @Sendable (DeviceAuthorizationResponse) async throws -> Void = { _ in }
    ) async throws(MSALError) -> TokenResponse {
        let transport = transport
        return try await (flow ?? self.flow()).run(
            deviceAuthorizationEndpoint: URL(string: "https://login.example.com/t/oauth2/v2.0/devicecode")!,
            tokenEndpoint: URL(string: "https://login.example.com/t/oauth2/v2.0/token")!,
            clientID: "client-1", scopes: ["openid", "User.Read"], extraParameters: ["client_info": "1"],
            correlationID: "corr-1",
            onUserCode: { response in
                transport.record("userCode:\(response.userCode)")
                try await onUserCode(response)
            }
        )
    }

    /// The thrown ``MSALError``, or `nil` (recording an issue) when the flow succeeded.
    func failure(onUserCode: @escaping @Sendable (DeviceAuthorizationResponse) async throws -> Void = { _ in }) async -> MSALError? {
        do {
            _ = try await run(onUserCode: onUserCode)
            Issue.record("the flow succeeded")
            return nil
        } catch {
            return error
        }
    }
}

@Suite("DeviceCodeFlow with a scripted provider, a manual clock and no real sleeping")
struct DeviceCodeFlowTests {
    @Test("shows the code before polling, obeys pending and slow_down, returns the tokens")
    func happyPath() async throws {
        let harness = Harness(tokens: [
            oauthError("authorization_pending"), oauthError("slow_down"), oauthError("authorization_pending"), tokenAnswer,
        ])
        let shown = Locked<DeviceAuthorizationResponse?>(nil)
        let token = try await harness.run { response in shown.withLock { $0 = response } }
        #expect(token.accessToken == accessTokenSecret)
        #expect(harness.recordedSleeps == [5, 5, 10, 10])
        #expect(harness.transport.events == ["device@0", "userCode:WDJB-MJHT", "token@5", "token@10", "token@20", "token@30"])
        let response = try #require(shown.withLock { $0 })
        #expect(response.verificationURI.absoluteString == "https://example.com/device")
        #expect(response.message == "Enter WDJB-MJHT")

        let deviceRequest = try #require(harness.transport.requests.first)
        #expect(deviceRequest.header("client-request-id") == "corr-1")
        #expect(String(decoding: deviceRequest.body ?? Data(), as: UTF8.self) == "client_id=client-1&client_info=1&scope=openid+User.Read")
        for request in harness.transport.tokenRequests {
            #expect(request.header("client-request-id") == "corr-1")
            let body = String(decoding: request.body ?? Data(), as: UTF8.self)
            #expect(body == "client_id=client-1&client_info=1&device_code=\(deviceCodeSecret)&grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code")
        }
        let lines = harness.lines.withLock { $0 }
        #expect(!lines.isEmpty)
        #expect(lines.allSatisfy { !$0.contains(deviceCodeSecret) && !$0.contains(accessTokenSecret) })
    }

    @Test("default interval 5 s when the server sends none")
    func defaultInterval() async throws {
        let harness = Harness(device: deviceAnswer(interval: nil), tokens: [oauthError("authorization_pending"), tokenAnswer])
        _ = try await harness.run()
        #expect(harness.recordedSleeps == [5, 5])
    }

    @Test("interval 0 polls without waiting")
    func zeroInterval() async throws {
        let harness = Harness(device: deviceAnswer(interval: 0), tokens: [oauthError("authorization_pending"), oauthError("authorization_pending"), tokenAnswer])
        _ = try await harness.run()
        #expect(harness.recordedSleeps == [0, 0, 0])
        #expect(harness.transport.tokenRequests.count == 3)
    }

    @Test("expired_token from the server: deviceCodeExpired with the server's OAuth fields")
    func serverExpired() async throws {
        let harness = Harness(tokens: [
            oauthError("authorization_pending"),
            oauthError("expired_token", extra: #","error_codes":[70020],"correlation_id":"server-corr""#),
        ])
        let error = try #require(await harness.failure())
        #expect(error == .internal(.deviceCodeExpired, ""))
        #expect(error.oauthError == "expired_token")
        #expect(error.oauthErrorDescription == "expired_token described")
        #expect(error.errorCodes == [70020])
        #expect(error.correlationID == "server-corr")
        #expect(error.httpStatusCode == 400)
        #expect(!error.description.contains(deviceCodeSecret))
    }

    @Test("the code expires before the next poll: fails without polling again")
    func clientSideExpiry() async throws {
        let harness = Harness(device: deviceAnswer(expiresIn: 12, interval: 5), tokens: [oauthError("authorization_pending")])
        let error = try #require(await harness.failure())
        #expect(error == .internal(.deviceCodeExpired, ""))
        #expect(error.oauthError == nil)
        #expect(error.correlationID == "corr-1")
        #expect(harness.transport.tokenRequests.count == 2)
        #expect(harness.recordedSleeps == [5, 5])
    }

    @Test("time the app spends showing the code counts against the expiry")
    func slowOnUserCode() async throws {
        let harness = Harness(device: deviceAnswer(expiresIn: 12, interval: 5), tokens: [tokenAnswer])
        let clock = harness.clock
        let error = try #require(await harness.failure { _ in clock.advance(by: 10) })
        #expect(error == .internal(.deviceCodeExpired, ""))
        #expect(harness.transport.tokenRequests.isEmpty)
    }

    @Test("the user declines: userCanceled", arguments: ["access_denied", "authorization_declined"])
    func declined(oauth: String) async throws {
        let harness = Harness(tokens: [oauthError("authorization_pending"), oauthError(oauth)])
        let error = try #require(await harness.failure())
        #expect(error.code == .userCanceled)
        #expect(error.oauthError == oauth)
        #expect(error.httpStatusCode == 400)
    }

    @Test("errors outside the device grant keep the server's mapping")
    func otherServerErrors() async throws {
        let harness = Harness(tokens: [oauthError("invalid_grant", extra: #","suberror":"consent_required","error_codes":[65001]"#)])
        let error = try #require(await harness.failure())
        #expect(error.code == .interactionRequired)
        #expect(error.oauthError == "invalid_grant")
        #expect(error.subError == "consent_required")
        #expect(error.errorCodes == [65001])

        let empty = Harness(tokens: [HTTPResponse(statusCode: 400)])
        let emptyError = try #require(await empty.failure())
        #expect(emptyError.code == .serverError)
        #expect(emptyError.internalCode == .invalidResponse)
        #expect(emptyError.httpStatusCode == 400)
        #expect(empty.transport.tokenRequests.count == 1)
    }

    @Test("a failing device authorization request never calls onUserCode")
    func deviceAuthorizationFails() async throws {
        let harness = Harness(device: oauthError("invalid_client", status: 401), tokens: [tokenAnswer])
        let called = Locked(false)
        let error = try #require(await harness.failure { _ in called.withLock { $0 = true } })
        #expect(error.code == .serverError)
        #expect(error.oauthError == "invalid_client")
        #expect(!called.withLock { $0 })
        #expect(harness.transport.tokenRequests.isEmpty)
    }

    @Test("onUserCode throwing stops the flow with userCanceled; an MSALError passes through")
    func onUserCodeThrows() async throws {
        struct AppStopped: Error {}
        let harness = Harness(tokens: [tokenAnswer])
        let error = try #require(await harness.failure { _ in throw AppStopped() })
        #expect(error.code == .userCanceled)
        #expect(harness.transport.tokenRequests.isEmpty)

        let custom = try #require(await Harness(tokens: [tokenAnswer]).failure { _ in throw MSALError.internal(.invalidParameter, "no display") })
        #expect(custom == .internal(.invalidParameter, ""))
    }

    @Test("cancelling the task while it waits to poll gives userCanceled, promptly")
    func cancellation() async throws {
        let harness = Harness(tokens: [oauthError("authorization_pending")])
        let (shown, continuation) = AsyncStream.makeStream(of: Void.self)
        // A sleep that only ends by cancellation.
        let flow = harness.flow { _ in try await Task.sleep(nanoseconds: 3_600_000_000_000) }
        let task = Task { () async -> MSALError? in
            do throws(MSALError) {
                _ = try await harness.run(flow) { _ in continuation.yield() }
                return nil
            } catch {
                return error
            }
        }
        var iterator = shown.makeAsyncIterator()
        _ = await iterator.next()
        task.cancel()
        let error = try #require(await task.value)
        #expect(error.code == .userCanceled)
        #expect(error.correlationID == "corr-1")
        #expect(harness.transport.tokenRequests.isEmpty)
    }
}
