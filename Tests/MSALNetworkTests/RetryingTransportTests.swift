import Foundation
import MSALCore
import MSALNetwork
import Synchronization
import Testing

/// Records the pauses instead of sleeping.
final class SleepRecorder: Sendable {
    private let pauses = Mutex<[TimeInterval]>([])
    var recorded: [TimeInterval] { pauses.withLock { $0 } }
    var sleep: @Sendable (TimeInterval) async throws -> Void {
        { [self] seconds in pauses.withLock { $0.append(seconds) } }
    }
}

@Suite("RetryingTransport")
struct RetryingTransportTests {
    let request = HTTPRequest.formPost(url: URL(string: "https://login.example.com/t/oauth2/v2.0/token")!, parameters: ["grant_type": "refresh_token"])

    /// A transport answering from a list, one per request; the last answer repeats.
    func scripted(_ answers: [Result<HTTPResponse, MSALError>]) -> FakeTransport {
        let index = Mutex(0)
        return FakeTransport { _ throws(MSALError) in
            let i = index.withLock { i in defer { i += 1 }; return min(i, answers.count - 1) }
            return try answers[i].get()
        }
    }

    @Test("503 is retried once after 1 s, then the second 503 is returned")
    func retriesOnceThenGivesUp() async throws {
        let base = scripted([.success(HTTPResponse(statusCode: 503))])
        let sleeper = SleepRecorder()
        let response = try await RetryingTransport(base, sleep: sleeper.sleep).send(request)
        #expect(response.statusCode == 503)
        #expect(base.requests.count == 2)
        #expect(sleeper.recorded == [1])
        #expect(base.requests.allSatisfy { $0.body == request.body })
    }

    @Test("a 500 followed by a 200 gives the 200")
    func recovers() async throws {
        let base = scripted([.success(HTTPResponse(statusCode: 500)), .success(.json(200, "{}"))])
        let response = try await RetryingTransport(base, sleep: SleepRecorder().sleep).send(request)
        #expect(response.statusCode == 200)
        #expect(base.requests.count == 2)
    }

    @Test("never after a 4xx (429 included), a 2xx, or a 5xx with Retry-After", arguments: [
        HTTPResponse(statusCode: 400), HTTPResponse(statusCode: 401), HTTPResponse(statusCode: 429),
        HTTPResponse(statusCode: 429, headers: ["Retry-After": "5"]), HTTPResponse(statusCode: 200),
        HTTPResponse(statusCode: 503, headers: ["Retry-After": "30"]),
    ])
    func noRetry(response: HTTPResponse) async throws {
        let base = scripted([.success(response)])
        let sleeper = SleepRecorder()
        let answer = try await RetryingTransport(base, sleep: sleeper.sleep).send(request)
        #expect(answer.statusCode == response.statusCode)
        #expect(base.requests.count == 1)
        #expect(sleeper.recorded.isEmpty)
    }

    @Test("a network error or a timeout is retried once; the second error is thrown", arguments: [
        MSALError.internal(.networkError, "Refused."), MSALError.internal(.timeout, "Slow."),
    ])
    func transportErrors(error: MSALError) async throws {
        let base = scripted([.failure(error)])
        let thrown = await capture { try await RetryingTransport(base, sleep: SleepRecorder().sleep).send(request) }
        #expect(thrown == error)
        #expect(base.requests.count == 2)

        let recovering = scripted([.failure(error), .success(.json(200, "{}"))])
        #expect(try await RetryingTransport(recovering, sleep: SleepRecorder().sleep).send(request).statusCode == 200)
    }

    @Test("network errors are not retried when the policy says so; cancellation never is")
    func policyOptions() async throws {
        let refused = scripted([.failure(.internal(.networkError, "Refused."))])
        let policy = RetryPolicy(retriesNetworkErrors: false)
        _ = await capture { try await RetryingTransport(refused, policy: policy, sleep: SleepRecorder().sleep).send(request) }
        #expect(refused.requests.count == 1)

        let canceled = scripted([.failure(MSALError(.userCanceled, message: "Canceled."))])
        _ = await capture { try await RetryingTransport(canceled, sleep: SleepRecorder().sleep).send(request) }
        #expect(canceled.requests.count == 1)

        let none = scripted([.success(HTTPResponse(statusCode: 503))])
        _ = try await RetryingTransport(none, policy: .none, sleep: SleepRecorder().sleep).send(request)
        #expect(none.requests.count == 1)
    }

    @Test("maxRetries and delay are honoured")
    func custom() async throws {
        let base = scripted([.success(HTTPResponse(statusCode: 502))])
        let sleeper = SleepRecorder()
        _ = try await RetryingTransport(base, policy: RetryPolicy(maxRetries: 3, delay: 0.25), sleep: sleeper.sleep).send(request)
        #expect(base.requests.count == 4)
        #expect(sleeper.recorded == [0.25, 0.25, 0.25])
    }

    @Test("a cancelled pause throws userCanceled and sends nothing more")
    func cancelledPause() async throws {
        let base = scripted([.success(HTTPResponse(statusCode: 503))])
        let transport = RetryingTransport(base, sleep: { _ in throw CancellationError() })
        let error = await capture { try await transport.send(request) }
        #expect(error == MSALError(.userCanceled, message: ""))
        #expect(base.requests.count == 1)
    }
}
