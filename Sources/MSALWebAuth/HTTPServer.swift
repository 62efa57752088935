public import Foundation
public import MSALCore
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A minimal HTTP/1.1 server bound to a loopback address: one request per connection, then
/// `Connection: close`.
///
/// Used for the loopback redirect listener of interactive sign-in (RFC 8252 §7.3, §8.3: a native
/// app listens on the loopback interface only) and by the local identity provider in
/// `MSALTestSupport`. It is a thin shell around POSIX sockets: an accept loop on its own thread,
/// one thread per connection, the bytes given to the pure ``HTTPRequestParser``.
///
/// - A request that is malformed is answered 400 (or 501/505, see ``HTTPRequestParser``).
/// - A request larger than `maxRequestBytes` is answered 413 (414/431 for an oversized head) and
///   the connection closed.
/// - A client that sends nothing within `readTimeout` is dropped without an answer; one that sent
///   part of a request is answered 408.
public final class LoopbackHTTPServer: Sendable {
    private enum State {
        case idle
        case running(listener: Int32, wakeRead: Int32, wakeWrite: Int32, port: UInt16)
        case stopping(port: UInt16)
        case stopped
    }

    private let host: String
    private let requestedPort: UInt16
    private let limits: HTTPRequestParser.Limits
    private let readTimeout: TimeInterval
    private let handler: @Sendable (HTTPServerRequest) -> HTTPServerResponse
    private let state = Mutex<State>(.idle)
    private let acceptLoop = DispatchGroup()
    private let connections = DispatchGroup()
    /// Entered while the listening socket is open; every stop() waits on it, so a second, racing
    /// stop() also returns only once the port is closed.
    private let listening = DispatchGroup()
    /// Marks this server's connection threads, so ``stop()`` called from a handler does not wait
    /// for itself.
    private static let threadKey = "swift-msal.LoopbackHTTPServer"
    private var identity: String { "\(ObjectIdentifier(self).hashValue)" }

    /// Creates a server; nothing is bound until ``start()``.
    ///
    /// - Parameters:
    ///   - host: a loopback address: `127.0.0.1` (or any `127.x.x.x`), `localhost` (bound as
    ///     `127.0.0.1`) or `::1`.
    ///   - port: the TCP port; 0 lets the system choose one (read it from ``start()`` or ``port``).
    ///   - maxRequestBytes: the largest request accepted, head and body, in bytes (default 1 MiB).
    ///     The head alone may take at most 64 KiB or this, whichever is smaller.
    ///   - readTimeout: seconds a connection may take to deliver its whole request (default 10).
    ///   - handler: called once per well-formed request, on that connection's thread; it may
    ///     block briefly, and may call ``stop()``.
    public init(
        host: String = "127.0.0.1",
        port: UInt16 = 0,
        maxRequestBytes: Int = 1 << 20,
        readTimeout: TimeInterval = 10,
        handler: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse
    ) {
        self.host = host
        self.requestedPort = port
        self.limits = HTTPRequestParser.Limits(maxHeaderBytes: 64 * 1024, maxRequestBytes: maxRequestBytes)
        self.readTimeout = max(0.01, readTimeout)
        self.handler = handler
    }

    deinit {
        stop()
    }

    /// The bound port, or 0 before ``start()`` and after ``stop()``.
    public var port: UInt16 {
        state.withLock { state in
            switch state {
            case .running(_, _, _, let port), .stopping(let port): port
            case .idle, .stopped: 0
            }
        }
    }

    /// Binds the loopback address, starts listening and accepting connections.
    ///
    /// Calling it again while running returns the bound port. A stopped server cannot be started
    /// again: create a new one.
    /// - Returns: the bound port (the system's choice when created with port 0).
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when the host is not a loopback
    ///   address or the server was stopped; `.internal(.networkError)` when the port is already in
    ///   use (the message says so) or a socket call fails.
    @discardableResult
    public func start() throws(MSALError) -> UInt16 {
        try state.withLock { (state: inout State) throws(MSALError) -> UInt16 in
            switch state {
            case .running(_, _, _, let port): return port
            case .stopping, .stopped:
                throw .internal(.invalidParameter, "This LoopbackHTTPServer was stopped; create a new one to listen again.")
            case .idle: break
            }
            let listener = try LoopbackHTTPServer.bindListener(host: host, port: requestedPort)
            var pipeFDs: [Int32] = [0, 0]
            guard pipe(&pipeFDs) == 0 else {
                let code = errno
                close(listener)
                throw .internal(.networkError, "Could not create the server's wake-up pipe: \(String(cString: strerror(code))).")
            }
            // Close-on-exec, as the listening socket: a browser or tool the app spawns must not
            // inherit the server's descriptors (Glibc's module does not export pipe2).
            for end in pipeFDs { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            let port: UInt16
            do throws(MSALError) {
                port = try LoopbackHTTPServer.boundPort(of: listener)
            } catch {
                close(listener); close(pipeFDs[0]); close(pipeFDs[1])
                throw error
            }
            state = .running(listener: listener, wakeRead: pipeFDs[0], wakeWrite: pipeFDs[1], port: port)
            listening.enter()
            acceptLoop.enter()
            let wakeRead = pipeFDs[0]
            let thread = Thread { [self] in
                self.runAcceptLoop(listener: listener, wakeRead: wakeRead)
                self.acceptLoop.leave()
            }
            thread.name = "LoopbackHTTPServer accept :\(port)"
            thread.start()
            return port
        }
    }

    /// Stops listening, then waits for the connections in flight to finish (each is bounded by
    /// the read timeout and its handler). Idempotent; safe to call from any thread. Called from a
    /// handler of this server (a redirect listener that got its answer), it does not wait for
    /// the connections: the handler's own response is still sent.
    public func stop() {
        let toClose: (listener: Int32, wakeRead: Int32, wakeWrite: Int32)? = state.withLock { state in
            switch state {
            case .running(let listener, let wakeRead, let wakeWrite, let port):
                state = .stopping(port: port)
                return (listener, wakeRead, wakeWrite)
            case .idle:
                state = .stopped
                return nil
            case .stopping, .stopped:
                return nil
            }
        }
        if let toClose {
            var byte: UInt8 = 1
            _ = write(toClose.wakeWrite, &byte, 1)
        }
        acceptLoop.wait()
        if let toClose {
            // The accept loop has ended: nothing uses these descriptors any more.
            close(toClose.listener)
            close(toClose.wakeRead)
            close(toClose.wakeWrite)
            listening.leave()
        }
        listening.wait()
        if Thread.current.threadDictionary[LoopbackHTTPServer.threadKey] as? String != identity {
            connections.wait()
        }
        if toClose != nil {
            state.withLock { $0 = .stopped }
        }
    }

    // MARK: - Sockets

    private static func bindListener(host: String, port: UInt16) throws(MSALError) -> Int32 {
        let lowerHost = host.lowercased()
        let isIPv6 = lowerHost == "::1" || lowerHost == "[::1]"
        var ipv4 = in_addr()
        if !isIPv6 {
            let address = lowerHost == "localhost" ? "127.0.0.1" : lowerHost
            guard inet_pton(AF_INET, address, &ipv4) == 1, UInt32(bigEndian: ipv4.s_addr) >> 24 == 127 else {
                throw .internal(.invalidParameter, "The HTTP server binds loopback addresses only (127.0.0.1, localhost, ::1), not '\(host)'.")
            }
        }
        #if canImport(Glibc)
        let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
        let streamType = SOCK_STREAM
        #endif
        let fd = socket(isIPv6 ? AF_INET6 : AF_INET, streamType, 0)
        guard fd >= 0 else {
            throw .internal(.networkError, "Could not create a socket: \(String(cString: strerror(errno))).")
        }
        var reuse: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        // Non-blocking: a connection reset between poll() and accept() must make accept() fail, not
        // block the accept loop (and with it stop(), which waits for the loop) until the next client.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let bindResult: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = in6addr_loopback
            bindResult = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr = ipv4
            bindResult = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        if bindResult != 0 {
            let code = errno
            close(fd)
            if code == EADDRINUSE {
                throw .internal(.networkError, "Port \(port) on \(host) is already in use; choose another port, or leave the port out so the system chooses one.")
            }
            throw .internal(.networkError, "Could not bind \(host):\(port): \(String(cString: strerror(code))).")
        }
        guard listen(fd, 128) == 0 else {
            let code = errno
            close(fd)
            throw .internal(.networkError, "Could not listen on \(host):\(port): \(String(cString: strerror(code))).")
        }
        return fd
    }

    private static func boundPort(of fd: Int32) throws(MSALError) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else {
            throw .internal(.networkError, "Could not read the bound port: \(String(cString: strerror(errno))).")
        }
        if Int32(storage.ss_family) == AF_INET6 {
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    private func runAcceptLoop(listener: Int32, wakeRead: Int32) {
        var fds = [
            pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents & Int16(POLLIN) != 0 else {
                if fds[0].revents != 0 { return }  // POLLERR / POLLNVAL: the listener is gone.
                continue
            }
            let client = accept(listener, nil, nil)  // no connection left (EAGAIN): poll again
            if client < 0 {
                let code = errno
                if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    usleep(10_000)  // Out of descriptors: let connections finish, then retry.
                }
                continue
            }
            #if canImport(Glibc)
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            #endif
            connections.enter()
            let thread = Thread { [self] in
                Thread.current.threadDictionary[LoopbackHTTPServer.threadKey] = self.identity
                self.serve(client)
                close(client)
                self.connections.leave()
            }
            thread.name = "LoopbackHTTPServer connection"
            thread.start()
        }
    }

    // MARK: - One connection

    private func serve(_ fd: Int32) {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(readTimeout * 1_000_000_000)
        setTimeout(fd, option: SO_RCVTIMEO, seconds: readTimeout)
        setTimeout(fd, option: SO_SNDTIMEO, seconds: readTimeout)

        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else {
                answerTimeout(fd, received: buffer.count)
                return
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let waitMilliseconds = Int32(min(UInt64(Int32.max), (deadline - now + 999_999) / 1_000_000))
            let ready = poll(&pfd, 1, waitMilliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if ready == 0 { continue }  // The deadline check above answers.
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK {
                    answerTimeout(fd, received: buffer.count)
                }
                return
            }
            let endOfInput = count == 0
            if endOfInput && buffer.isEmpty { return }  // Connected and left without a word.
            buffer.append(contentsOf: chunk[0..<count])
            switch HTTPRequestParser.parse(buffer, limits: limits, endOfInput: endOfInput) {
            case .incomplete:
                continue
            case .complete(let request, _):
                let response = handler(request)
                send(response.serialized(includeBody: request.method != "HEAD"), on: fd)
                shutdown(fd, Int32(SHUT_WR))
                return
            case .failure(let failure):
                send(HTTPServerResponse.text(failure.reason + "\n", status: failure.status).serialized(), on: fd)
                lingeringClose(fd)
                return
            }
        }
    }

    private func answerTimeout(_ fd: Int32, received: Int) {
        guard received > 0 else { return }
        let response = HTTPServerResponse.text("The request was not received within \(secondsPhrase(readTimeout)).\n", status: 408)
        send(response.serialized(), on: fd)
        lingeringClose(fd)
    }

    /// Sends all bytes; gives up on error (the peer left). `MSG_NOSIGNAL`: no SIGPIPE.
    private func send(_ data: Data, on fd: Int32) {
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            guard var pointer = raw.baseAddress else { return }
            var remaining = raw.count
            while remaining > 0 {
                #if canImport(Glibc)
                let sent = Glibc.send(fd, pointer, remaining, Int32(MSG_NOSIGNAL))
                #else
                let sent = Darwin.send(fd, pointer, remaining, 0)
                #endif
                if sent < 0 {
                    if errno == EINTR { continue }
                    return
                }
                remaining -= sent
                pointer += sent
            }
        }
    }

    /// After an error answer the client may still be sending; closing with unread bytes would
    /// reset the connection and could destroy the answer before the client reads it
    /// (RFC 9112 §9.6). So: half-close, then discard input for a short while.
    private func lingeringClose(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_WR))
        setTimeout(fd, option: SO_RCVTIMEO, seconds: 0.2)
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        var drained = 0
        let deadline = DispatchTime.now().uptimeNanoseconds + 1_000_000_000
        while drained < 4 << 20, DispatchTime.now().uptimeNanoseconds < deadline {
            let count = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return }
            drained += count
        }
    }

    private func setTimeout(_ fd: Int32, option: Int32, seconds: TimeInterval) {
        var value = timeval()
        value.tv_sec = Int(seconds)
        value.tv_usec = suseconds_t(max(0, min(999_999, (seconds - Double(Int(seconds))) * 1_000_000)))
        setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
    }
}
