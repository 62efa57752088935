import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MSALCore
import Testing

/// Refuses every redirect, so the identity provider's `302` itself comes back to the test, as the
/// browser would see it.
final class RefuseRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}

/// Runs `body` and returns the ``MSALError`` it threw, or `nil` when it did not throw
/// (another error type is recorded as a test issue).
func thrown<T>(_ body: () async throws -> T) async -> MSALError? {
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
