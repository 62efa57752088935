import Foundation
import MSALCore
@testable import MSALNetwork
import Synchronization
import Testing

/// An ``HTTPTransport`` that records requests and answers from a closure; no I/O.
final class FakeTransport: HTTPTransport {
    private let recorded = Mutex<[HTTPRequest]>([])
    private let handler: @Sendable (HTTPRequest) async throws(MSALError) -> HTTPResponse

    init(_ handler: @escaping @Sendable (HTTPRequest) async throws(MSALError) -> HTTPResponse) {
        self.handler = handler
    }

    /// Always answers `response`.
    convenience init(answer response: HTTPResponse) {
        self.init { _ throws(MSALError) in response }
    }

    var requests: [HTTPRequest] { recorded.withLock { $0 } }

    func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse {
        recorded.withLock { $0.append(request) }
        return try await handler(request)
    }
}

extension HTTPResponse {
    /// A JSON answer.
    static func json(_ status: Int, _ body: String, headers: [String: String] = [:]) -> HTTPResponse {
        var headers = headers
        headers["Content-Type"] = "application/json; charset=utf-8"
        return HTTPResponse(statusCode: status, headers: headers, body: Data(body.utf8))
    }
}

extension HTTPRequest {
    /// The form body decoded into its fields.
    var formFields: [String: String] {
        FormEncoding.decode(String(decoding: body ?? Data(), as: UTF8.self)) ?? [:]
    }
}

/// Runs `body` and returns the ``MSALError`` it threw, or `nil` when it did not throw
/// (another error type is recorded as a test issue).
func capture<T>(_ body: () async throws -> T) async -> MSALError? {
    do {
        _ = try await body()
        return nil
    } catch let error as MSALError {
        return error
    } catch {
        Issue.record("expected an MSALError, got \(error)")
        return nil
    }
}
