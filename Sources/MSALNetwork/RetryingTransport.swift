public import Foundation
public import MSALCore

/// When and how often a request is sent again after a transient failure.
///
/// The defaults are MSAL.NET's for requests to the identity provider (`DefaultRetryPolicy` for
/// `RequestType.STS`: `DefaultStsMaxRetries = 1`, `DefaultStsRetryDelayMs = 1000`, and
/// `HttpRetryConditions.Sts`): one more attempt, one second later, after
/// - any 5xx answer (501 included, as MSAL.NET's `500...599`) that has no `Retry-After` header
///   (a server that says when to come back is left to ``ThrottlingState``, not hammered);
/// - a timeout (`.internal(.timeout)`; MSAL.NET retries its `TaskCanceledException`);
/// - a connection that could not be made (`.internal(.networkError)`). MSAL.NET does not retry
///   this one; swift-msal does by default because such a request never reached the server, so
///   sending it again cannot redeem a code twice. Set ``retriesNetworkErrors`` to `false` for
///   MSAL.NET's exact behaviour.
///
/// Never after a 4xx (429 included: that is throttling's job), a 2xx or 3xx, or `.userCanceled`.
public struct RetryPolicy: Sendable {
    /// How many times a request is sent again at most; 0 disables retrying. Default 1.
    public var maxRetries: Int
    /// The pause before each retry, in seconds. Default 1.
    public var delay: TimeInterval
    /// Whether `.internal(.networkError)` is retried. Default `true`.
    public var retriesNetworkErrors: Bool

    /// Creates a policy.
    public init(maxRetries: Int = 1, delay: TimeInterval = 1, retriesNetworkErrors: Bool = true) {
        self.maxRetries = max(0, maxRetries)
        self.delay = max(0, delay)
        self.retriesNetworkErrors = retriesNetworkErrors
    }

    /// MSAL.NET's policy for the token and authorize endpoints: one retry after one second.
    public static let `default` = RetryPolicy()

    /// A policy that never retries.
    public static let none = RetryPolicy(maxRetries: 0)

    /// Whether a response is worth one more attempt.
    /// - Returns: `true` for a 5xx without a `Retry-After` header.
    public func shouldRetry(_ response: HTTPResponse) -> Bool {
        (500...599).contains(response.statusCode) && response.header("Retry-After") == nil
    }

    /// Whether a transport error is worth one more attempt.
    /// - Returns: `true` for `.internal(.timeout)`, and for `.internal(.networkError)` when
    ///   ``retriesNetworkErrors`` is set.
    public func shouldRetry(_ error: MSALError) -> Bool {
        guard error.code == .internal else { return false }
        switch error.internalCode {
        case .timeout: return true
        case .networkError: return retriesNetworkErrors
        default: return false
        }
    }
}

/// An ``HTTPTransport`` that sends a request again after a transient failure, as ``RetryPolicy``
/// says, around another transport.
///
/// The pause is an injected function, so tests do not sleep. When the calling task is cancelled
/// during the pause, it throws `.userCanceled` and sends nothing more. After the last attempt the
/// last response is returned, or the last error thrown. Every attempt sends the same request,
/// `client-request-id` included, as MSAL.NET's retry does.
public struct RetryingTransport: HTTPTransport {
    /// The transport each attempt goes through.
    public let base: any HTTPTransport
    /// When to retry.
    public let policy: RetryPolicy
    /// Where retries are logged (debug level: the status or error code and the attempt number).
    public let logger: Logger
    private let sleep: @Sendable (TimeInterval) async throws -> Void

    /// Wraps a transport.
    /// - Parameters:
    ///   - base: sends each attempt.
    ///   - policy: when to retry; default ``RetryPolicy/default``.
    ///   - logger: receives one debug line per retry; default ``Logger/none``.
    ///   - sleep: pauses for the given seconds and throws when the task is cancelled; default
    ///     `Task.sleep`.
    public init(
        _ base: any HTTPTransport,
        policy: RetryPolicy = .default,
        logger: Logger = .none,
        sleep: @escaping @Sendable (TimeInterval) async throws -> Void = { seconds in
            try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
        }
    ) {
        self.base = base
        self.policy = policy
        self.logger = logger
        self.sleep = sleep
    }

    /// Sends `request`, again after a transient failure.
    /// - Returns: the first response that is not worth retrying, or the last one.
    /// - Throws: the last transport error; `.userCanceled` when the task is cancelled while waiting.
    public func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse {
        var attempt = 0
        while true {
            let reason: String
            do {
                let response = try await base.send(request)
                guard attempt < policy.maxRetries, policy.shouldRetry(response) else { return response }
                reason = "HTTP \(response.statusCode)"
            } catch {
                guard attempt < policy.maxRetries, policy.shouldRetry(error) else { throw error }
                reason = error.codeString
            }
            attempt += 1
            logger.debug("\(request.method) \(request.url.host ?? "") failed with \(reason); retry \(attempt) of \(policy.maxRetries) in \(policy.delay) s")
            do {
                try await sleep(policy.delay)
            } catch {
                throw MSALError(.userCanceled, message: "The request was canceled while waiting to retry it.")
            }
            if Task.isCancelled {
                throw MSALError(.userCanceled, message: "The request was canceled while waiting to retry it.")
            }
        }
    }
}
