public import Foundation
#if canImport(FoundationNetworking)
internal import FoundationNetworking
#endif
public import MSALCore
internal import Synchronization

/// The default ``HTTPTransport``: Foundation's `URLSession` (libcurl on Linux), with an ephemeral
/// configuration that keeps no cookies, no credentials and no cache, and honours task cancellation.
///
/// Errors are mapped as ``HTTPTransport`` requires: a refused, unresolvable, reset or TLS-failed
/// connection gives `.internal(.networkError)` naming the host; no answer within ``timeout`` gives
/// `.internal(.timeout)`; cancelling the calling task gives `.userCanceled`. Redirects are followed
/// as `URLSession` does.
public final class URLSessionTransport: HTTPTransport {
    /// The most time, in seconds, a request may wait for data before it fails with `.timeout`
    /// (`URLSessionConfiguration.timeoutIntervalForRequest`; the whole exchange is also bounded
    /// by twice this value).
    public let timeout: TimeInterval
    private let session: URLSession

    /// Creates a transport with its own ephemeral `URLSession`.
    /// - Parameter timeout: seconds without progress before a request fails with
    ///   `.internal(.timeout)`; default 30.
    public init(timeout: TimeInterval = 30) {
        self.timeout = timeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.urlCredentialStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout * 2
        session = URLSession(configuration: configuration)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Sends `request` and returns the response, whatever its status.
    /// - Returns: the status, header fields (lowercased names) and body.
    /// - Throws: ``MSALError`` `.internal(.networkError)` naming the host when no connection could
    ///   be made or it broke, `.internal(.timeout)` when the server did not answer within
    ///   ``timeout`` seconds, `.userCanceled` when the calling task was cancelled.
    public func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse {
        let host = request.url.host ?? request.url.absoluteString
        if host.contains(":") {
            // swift-corelibs-foundation's URLSession answers every IPv6-literal URL with
            // NSURLErrorBadURL (-1000) before connecting; say so instead of a bare code.
            throw MSALError.internal(
                .networkError,
                "The request to [\(host)] cannot be sent: URLSession on Linux does not support IPv6 literal addresses. Use 127.0.0.1 or localhost instead of [\(host)].")
        }
        if Task.isCancelled {
            throw MSALError(.userCanceled, message: "The request to \(host) was canceled.")
        }
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.httpBody = request.body
        urlRequest.timeoutInterval = timeout
        urlRequest.httpShouldHandleCookies = false
        urlRequest.cachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }

        let outcome = await perform(urlRequest)
        switch outcome {
        case .success(let (data, response)):
            var headers: [String: String] = [:]
            for (name, value) in response.allHeaderFields {
                headers[String(describing: name).lowercased()] = String(describing: value)
            }
            return HTTPResponse(statusCode: response.statusCode, headers: headers, body: data)
        case .failure(let error):
            throw Self.map(error, host: host, timeout: timeout, canceled: Task.isCancelled)
        }
    }

    private enum Failure: Error {
        case urlError(URLError)
        case other(String)
    }

    /// Runs a data task, cancelling it when the calling task is cancelled. No semaphore: the
    /// completion handler resumes a continuation.
    private func perform(_ urlRequest: URLRequest) async -> Result<(Data, HTTPURLResponse), Failure> {
        let box = Mutex<URLSessionDataTask?>(nil)
        let canceled = Mutex(false)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<(Data, HTTPURLResponse), Failure>, Never>) in
                let task = session.dataTask(with: urlRequest) { data, response, error in
                    if let error {
                        if let urlError = error as? URLError {
                            continuation.resume(returning: .failure(.urlError(urlError)))
                        } else {
                            continuation.resume(returning: .failure(.other(error.localizedDescription)))
                        }
                    } else if let response = response as? HTTPURLResponse {
                        continuation.resume(returning: .success((data ?? Data(), response)))
                    } else {
                        continuation.resume(returning: .failure(.other("the response was not HTTP")))
                    }
                }
                box.withLock { $0 = task }
                task.resume()
                // A cancellation that arrived before the task existed.
                if canceled.withLock({ $0 }) { task.cancel() }
            }
        } onCancel: {
            canceled.withLock { $0 = true }
            box.withLock { $0 }?.cancel()
        }
    }

    private static func map(_ failure: Failure, host: String, timeout: TimeInterval, canceled: Bool) -> MSALError {
        if canceled {
            return MSALError(.userCanceled, message: "The request to \(host) was canceled.")
        }
        switch failure {
        case .other(let text):
            return .internal(.networkError, "The request to \(host) failed: \(text).")
        case .urlError(let error):
            switch error.code {
            case .timedOut:
                return .internal(.timeout, "\(host) did not answer within \(secondsPhrase(timeout)).")
            case .cancelled:
                return MSALError(.userCanceled, message: "The request to \(host) was canceled.")
            case .cannotConnectToHost:
                return .internal(.networkError, "Could not connect to \(host): the connection was refused (is the identity provider running?).")
            case .cannotFindHost, .dnsLookupFailed:
                return .internal(.networkError, "Could not resolve the host \(host).")
            case .notConnectedToInternet:
                return .internal(.networkError, "Could not reach \(host): the device is not connected to a network.")
            case .networkConnectionLost:
                return .internal(.networkError, "The connection to \(host) was lost before a complete answer.")
            case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
                 .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected:
                return .internal(.networkError, "The TLS connection to \(host) failed (URLError \(error.code.rawValue)).")
            default:
                return .internal(.networkError, "The request to \(host) failed (URLError \(error.code.rawValue)).")
            }
        }
    }
}
