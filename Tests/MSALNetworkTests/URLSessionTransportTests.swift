import Foundation
#if canImport(Glibc)
import Glibc
#endif
import MSALCore
@testable import MSALNetwork
import Synchronization
import Testing

/// A TCP socket on 127.0.0.1 with a kernel-chosen port, for playing a provider that is down,
/// silent, or answers once. Closed on deinit.
final class LoopbackSocket: @unchecked Sendable {
    let fd: Int32
    let port: Int

    /// Binds a socket; listens only when `listen` is true (a bound socket that does not listen
    /// refuses connections, and keeps its port from being reused meanwhile).
    init(listen: Bool) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
        if listen { guard Glibc.listen(fd, 16) == 0 else { close(fd); throw POSIXError(.EIO) } }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        // accept() gives up after 5 s so a broken test cannot hang.
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/token")! }

    /// Accepts one connection on a thread, reads the request (headers and a Content-Length
    /// body), writes `reply`, closes, and hands the raw request to `received`.
    func serveOnce(reply: String, received: @escaping @Sendable (String) -> Void) {
        let fd = fd
        Thread.detachNewThread {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { received(""); return }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(client, &buffer, buffer.count, 0)
                if count <= 0 { break }
                bytes.append(contentsOf: buffer[0..<count])
                let text = String(decoding: bytes, as: UTF8.self)
                if let end = text.range(of: "\r\n\r\n") {
                    let head = text[..<end.lowerBound].lowercased()
                    let length = head.split(separator: "\r\n")
                        .first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                    if text.utf8.count - text[..<end.upperBound].utf8.count >= length { break }
                }
            }
            let replyBytes = Array(reply.utf8)
            _ = replyBytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(client)
            received(String(decoding: bytes, as: UTF8.self))
        }
    }
}

@Suite("URLSessionTransport against loopback sockets")
struct URLSessionTransportTests {
    // A refused connection must fail as networkError at once; had it hung, it would end as
    // .timeout after the transport's 10 s instead, so the code itself tells the two apart
    // (no wall-clock assertion: speed is for benchmarks, not unit tests).
    @Test("a provider that is down: networkError naming the host, not a timeout")
    func providerDown() async throws {
        let socket = try LoopbackSocket(listen: false)
        let transport = URLSessionTransport(timeout: 10)
        let error = try #require(await capture {
            try await transport.send(HTTPRequest(method: .get, url: socket.url))
        })
        #expect(error == .internal(.networkError, ""))
        #expect(error.message.contains("127.0.0.1"))
    }

    @Test("a provider that accepts but never answers: timeout after the configured seconds")
    func silentProvider() async throws {
        let socket = try LoopbackSocket(listen: true)
        let transport = URLSessionTransport(timeout: 1)
        let started = ContinuousClock.now
        let error = try #require(await capture {
            try await transport.send(.formPost(url: socket.url, parameters: ["a": "b"]))
        })
        let elapsed = ContinuousClock.now - started
        #expect(error == .internal(.timeout, ""))
        #expect(error.message.contains("127.0.0.1"))
        #expect(elapsed >= .milliseconds(900))
    }

    @Test("cancelling the task stops a hanging request with userCanceled")
    func cancellation() async throws {
        let socket = try LoopbackSocket(listen: true)
        let transport = URLSessionTransport(timeout: 30)
        let task = Task { () async -> MSALError? in
            await capture { try await transport.send(HTTPRequest(method: .get, url: socket.url)) }
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        task.cancel()
        let error = try #require(await task.value)
        #expect(error.code == .userCanceled)
    }

    @Test("a task cancelled before sending never connects")
    func cancelledBeforeSend() async throws {
        let socket = try LoopbackSocket(listen: false)
        let transport = URLSessionTransport()
        let task = Task { () async -> MSALError? in
            while !Task.isCancelled { await Task.yield() }
            return await capture { try await transport.send(HTTPRequest(method: .get, url: socket.url)) }
        }
        task.cancel()
        #expect(await task.value?.code == .userCanceled)
    }

    @Test("a real exchange: method, headers and body go out; status, lowercased headers and body come back")
    func realExchange() async throws {
        let socket = try LoopbackSocket(listen: true)
        let body = #"{"error":"invalid_grant"}"#
        let reply = "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nClient-Request-Id: corr-9\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        socket.serveOnce(reply: reply) { continuation.yield($0); continuation.finish() }

        let transport = URLSessionTransport(timeout: 5)
        let request = HTTPRequest.formPost(
            url: socket.url, parameters: ["grant_type": "refresh_token", "scope": "a b"],
            headers: OAuth2Client.standardHeaders(correlationID: "corr-9"))
        let response = try await transport.send(request)
        #expect(response.statusCode == 400)
        #expect(response.header("content-type") == "application/json")
        #expect(response.headers["client-request-id"] == "corr-9")
        #expect(String(decoding: response.body, as: UTF8.self) == body)

        var iterator = stream.makeAsyncIterator()
        let raw = try #require(await iterator.next())
        let lower = raw.lowercased()
        #expect(raw.hasPrefix("POST /token HTTP/1.1\r\n"))
        #expect(lower.contains("\r\nclient-request-id: corr-9\r\n"))
        #expect(lower.contains("\r\nx-client-sku: msal.swift.linux\r\n"))
        #expect(lower.contains("\r\ncontent-type: application/x-www-form-urlencoded; charset=utf-8\r\n"))
        #expect(!lower.contains("\r\ncookie:"))
        #expect(raw.hasSuffix("\r\n\r\ngrant_type=refresh_token&scope=a+b"))
    }
}
