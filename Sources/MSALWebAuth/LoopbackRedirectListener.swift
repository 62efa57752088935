public import Foundation
public import MSALCore
import Dispatch
import Synchronization

/// Receives the authorization response of interactive sign-in on a loopback redirect URI
/// (RFC 8252 §7.3 loopback interface redirection, §8.3 loopback redirect considerations).
///
/// A thin shell around ``LoopbackHTTPServer`` (the sockets, the request size and read-time
/// limits) and ``LoopbackRedirectExchange`` (what each request means, decided without I/O):
///
/// 1. ``start()`` binds 127.0.0.1 only — for a `127.0.0.1` and for a `localhost` redirect URI
///    alike, never a wildcard address (RFC 8252 §8.3); `::1` for a `[::1]` redirect URI — on the
///    port of the redirect URI, or a port the system chooses when it has none. It returns the
///    redirect URI with the bound port: put THAT in the authorization request.
/// 2. ``waitForResponse()`` returns the first request on the redirect path whose `state`
///    matches, as an ``AuthorizationResponse`` (a code, or the server's error). That request is
///    answered with a short page and the listener closes. Requests for other paths (404) and
///    on the redirect path with a missing or wrong `state` (400) are answered and ignored.
///
/// The listener stops by itself after `timeout` seconds counted from ``start()``, when the
/// waiting task is canceled, or on ``stop()``. Nothing it logs or throws contains the code or
/// the state. One listener serves one sign-in: create a new one for the next.
public final class LoopbackRedirectListener: Sendable {
    /// The redirect URI as configured (its port may be absent: the system chooses one).
    public let redirectURI: URL
    /// Seconds from ``start()`` until the listener gives up waiting (default 300).
    public let timeout: TimeInterval
    /// Seconds a connection may take to deliver its request before it is dropped (default 10).
    public let readTimeout: TimeInterval
    /// The largest request accepted, in bytes (default 64 KiB); a larger one is answered
    /// 413/414/431 and ignored.
    public let maxRequestBytes: Int

    private struct State {
        var exchange: LoopbackRedirectExchange
        var server: LoopbackHTTPServer?
        var boundURL: URL?
        var result: Result<AuthorizationResponse, MSALError>?
        var waiters: [CheckedContinuation<Result<AuthorizationResponse, MSALError>, Never>] = []
        var timer: DispatchWorkItem?
    }

    private let state: Mutex<State>

    /// Creates a listener; nothing is bound until ``start()``.
    /// - Parameters:
    ///   - redirectURI: an `http` URI on `127.0.0.1`, `localhost` or `[::1]`, with or without a
    ///     port, e.g. `http://localhost` or `http://127.0.0.1:8400/callback`. Checked by
    ///     ``start()``.
    ///   - expectedState: the `state` sent in the authorization request (RFC 6749 §4.1.1).
    ///   - timeout: seconds from ``start()`` until ``waitForResponse()`` throws
    ///     `.internal(.timeout)`; default 300 (5 minutes).
    ///   - readTimeout: seconds a connection may take to send its request; default 10.
    ///   - maxRequestBytes: the largest request accepted, in bytes; default 64 KiB.
    public init(
        redirectURI: URL,
        expectedState: String,
        timeout: TimeInterval = 300,
        readTimeout: TimeInterval = 10,
        maxRequestBytes: Int = 64 * 1024
    ) {
        self.redirectURI = redirectURI
        self.timeout = timeout
        self.readTimeout = readTimeout
        self.maxRequestBytes = maxRequestBytes
        let path = URLComponents(url: redirectURI, resolvingAgainstBaseURL: false)?.path ?? "/"
        self.state = Mutex(State(exchange: LoopbackRedirectExchange(redirectPath: path, expectedState: expectedState)))
    }

    deinit {
        let (server, timer) = state.withLock { ($0.server, $0.timer) }
        timer?.cancel()
        // In the background: stopping waits for connections in flight (an idle preconnect
        // socket of the browser may hold one for up to readTimeout).
        if let server { DispatchQueue.global().async { server.stop() } }
    }

    /// Binds the loopback address and starts listening; starts the timeout.
    ///
    /// Idempotent: calling it again returns the same URL.
    /// - Returns: the redirect URI with the bound port, e.g. `http://localhost:53127/` for
    ///   `http://localhost/`; send exactly this as `redirect_uri`.
    /// - Throws: ``MSALError`` `.internal(.invalidRedirectURI)` when the redirect URI is not
    ///   `http` on `127.0.0.1`, `localhost` or `[::1]`, has a fragment or an invalid port;
    ///   `.internal(.networkError)` when the port is already in use (the message says so) or a
    ///   socket call fails; `.internal(.invalidParameter)` when the listener has already finished.
    @discardableResult
    public func start() throws(MSALError) -> URL {
        let (host, port) = try Self.loopbackAddress(of: redirectURI)
        return try state.withLock { (state: inout State) throws(MSALError) -> URL in
            if let boundURL = state.boundURL, state.result == nil { return boundURL }
            guard state.result == nil else {
                throw .internal(.invalidParameter, "This loopback redirect listener has already finished; create a new one for the next sign-in.")
            }
            let server = LoopbackHTTPServer(
                host: host, port: port, maxRequestBytes: maxRequestBytes, readTimeout: readTimeout
            ) { [weak self] request in
                self?.handle(request) ?? .text("This sign-in is no longer waiting for a response.\n", status: 404)
            }
            let boundPort = try server.start()
            var components = URLComponents(url: redirectURI, resolvingAgainstBaseURL: false)
            components?.port = Int(boundPort)
            guard let boundURL = components?.url else {
                server.stop()
                throw .internal(.invalidRedirectURI, "Could not add the bound port \(boundPort) to the redirect URI.")
            }
            let timeout = self.timeout
            let timer = DispatchWorkItem { [weak self] in
                self?.finish(.failure(.internal(.timeout, "No sign-in response reached the redirect URI within \(secondsPhrase(timeout)).")))
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, timeout), execute: timer)
            state.server = server
            state.boundURL = boundURL
            state.timer = timer
            return boundURL
        }
    }

    /// Waits for the authorization response (RFC 6749 §4.1.2, §4.1.2.1).
    ///
    /// Returns as soon as the matching request arrived (at once if it already did). The
    /// listener is closed by then.
    /// - Returns: ``AuthorizationResponse/code(_:)`` or ``AuthorizationResponse/error(error:description:uri:subError:)``
    ///   as the authorization server sent it; map an error with ``AuthorizationResponse/error``.
    /// - Throws: ``MSALError`` `.internal(.timeout)` when no response came within ``timeout``
    ///   seconds of ``start()``; `.userCanceled` when the waiting task is canceled (the
    ///   listener stops) or ``stop()`` was called; `.internal(.invalidParameter)` when
    ///   ``start()`` was not called.
    public func waitForResponse() async throws(MSALError) -> AuthorizationResponse {
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<AuthorizationResponse, MSALError>, Never>) in
                let immediate: Result<AuthorizationResponse, MSALError>? = state.withLock { state in
                    if let result = state.result { return result }
                    guard state.boundURL != nil else {
                        return .failure(.internal(.invalidParameter, "Call start() on the loopback redirect listener before waiting for the response."))
                    }
                    state.waiters.append(continuation)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            finish(.failure(MSALError(.userCanceled, message: "The sign-in was canceled while waiting for the browser's redirect.")))
        }
        return try result.get()
    }

    /// Stops listening; a pending ``waitForResponse()`` throws `.userCanceled` (unless the
    /// response already came). Waits for connections in flight (each bounded by `readTimeout`).
    /// Idempotent.
    public func stop() {
        // Close the port synchronously first: finish() stops the server in the background, and a
        // second stop() racing with that one could return before the port is closed.
        let server = state.withLock { $0.server }
        server?.stop()
        finish(.failure(MSALError(.userCanceled, message: "The loopback redirect listener was stopped before a response arrived.")))
    }

    // MARK: - Internals

    /// Like ``stop()`` but never blocks: the server stops in the background (connections in
    /// flight, such as a browser's idle preconnect socket, end by themselves within
    /// `readTimeout`). Used by ``AuthorizationCodeFlow`` on its way out.
    func close() {
        finish(.failure(MSALError(.userCanceled, message: "The loopback redirect listener was stopped before a response arrived.")))
    }

    /// Runs on a connection thread of the server.
    private func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let (answer, outcome) = state.withLock { $0.exchange.receive(request) }
        if case .finished(let response) = outcome {
            // From the handler, stop() closes the listening socket without waiting for this
            // connection, whose answer is still sent.
            finish(.success(response))
        }
        return answer
    }

    /// Records the result once, wakes the waiters and stops the server (in the background when
    /// not called from the server's own handler, so cancellation returns at once).
    private func finish(_ result: Result<AuthorizationResponse, MSALError>) {
        let taken = state.withLock { state -> (waiters: [CheckedContinuation<Result<AuthorizationResponse, MSALError>, Never>], server: LoopbackHTTPServer?, timer: DispatchWorkItem?)? in
            guard state.result == nil else { return nil }
            state.result = result
            state.exchange.close()
            let taken = (state.waiters, state.server, state.timer)
            state.waiters = []
            state.timer = nil
            return taken
        }
        guard let taken else { return }
        taken.timer?.cancel()
        for waiter in taken.waiters { waiter.resume(returning: result) }
        if let server = taken.server {
            if case .success = result {
                server.stop()
            } else {
                DispatchQueue.global().async { server.stop() }
            }
        }
    }

    /// The address to bind for a loopback redirect URI and its port (0: the system chooses).
    private static func loopbackAddress(of url: URL) throws(MSALError) -> (host: String, port: UInt16) {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              components.scheme?.lowercased() == "http",
              let rawHost = components.host?.lowercased()
        else {
            throw .internal(.invalidRedirectURI, "The loopback redirect listener needs an http redirect URI on 127.0.0.1, localhost or [::1] (RFC 8252 §7.3), not '\(url.absoluteString)'.")
        }
        guard components.fragment == nil else {
            throw .internal(.invalidRedirectURI, "A redirect URI must not have a fragment (RFC 6749 §3.1.2): '\(url.absoluteString)'.")
        }
        let host: String
        switch rawHost {
        case "127.0.0.1", "localhost": host = "127.0.0.1"
        case "::1", "[::1]": host = "::1"
        default:
            throw .internal(.invalidRedirectURI, "The loopback redirect listener binds 127.0.0.1 or [::1] only (RFC 8252 §8.3); the redirect URI's host '\(rawHost)' is not one of 127.0.0.1, localhost, [::1].")
        }
        guard let port = components.port else { return (host, 0) }
        guard let value = UInt16(exactly: port) else {
            throw .internal(.invalidRedirectURI, "The redirect URI's port \(port) is not a TCP port (0-65535).")
        }
        return (host, value)
    }
}
