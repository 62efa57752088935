import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
import Testing
import MSALCore
import MSALWebAuth
import Synchronization

/// A blocking raw-TCP client for the cases URLSession cannot produce (malformed bytes, silence).
/// Only ever run off the cooperative pool's critical path: each call is short and bounded.
enum RawTCP {
    /// Connects to 127.0.0.1:port, sends `bytes` (unless empty), optionally half-closes, then
    /// reads until the server closes or `timeout` seconds pass.
    /// - Returns: the bytes received and the seconds it took until the server closed (or nil).
    static func exchange(port: UInt16, bytes: [UInt8], halfClose: Bool = false, timeout: TimeInterval = 5) -> (response: String, closedAfter: TimeInterval?) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return ("", nil) }
        let start = Date()
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { break }  // The server may close early (413/414); keep what it said.
            offset += sent
        }
        if halfClose { shutdown(fd, Int32(SHUT_WR)) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while Date().timeIntervalSince(start) < timeout {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) >= 0 else { break }
            if pfd.revents == 0 { continue }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 {
                return (String(decoding: received, as: UTF8.self), Date().timeIntervalSince(start))
            }
            received.append(contentsOf: chunk[0..<count])
        }
        return (String(decoding: received, as: UTF8.self), nil)
    }
}

@Suite("LoopbackHTTPServer")
struct HTTPServerTests {
    @Test func roundTripThroughURLSession() async throws {
        let server = LoopbackHTTPServer { request in
            .json([
                "method": .string(request.method),
                "path": .string(request.path),
                "q": .string(request.queryItems["q"] ?? "-"),
                "form": .string(request.formParameters["name"] ?? "-"),
                "header": .string(request.headers["x-test"] ?? "-"),
            ], status: 201)
        }
        let port = try server.start()
        defer { server.stop() }
        #expect(port != 0)
        #expect(server.port == port)

        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/hello%20world?q=a+b")!)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("yes", forHTTPHeaderField: "X-Test")
        request.httpBody = Data("name=J%C3%BCrgen+X".utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 201)
        #expect(http.value(forHTTPHeaderField: "Connection")?.lowercased() == "close")
        #expect(http.value(forHTTPHeaderField: "Content-Type") == "application/json; charset=utf-8")
        let object = try JSONDecoder().decode([String: String].self, from: data)
        #expect(object == ["method": "POST", "path": "/hello world", "q": "a b", "form": "Jürgen X", "header": "yes"])
    }

    @Test func manyConcurrentRequests() async throws {
        let server = LoopbackHTTPServer { request in .text(request.queryItems["i"] ?? "") }
        let port = try server.start()
        defer { server.stop() }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<32 {
                group.addTask {
                    let url = URL(string: "http://127.0.0.1:\(port)/?i=\(i)")!
                    let (data, _) = try await URLSession.shared.data(from: url)
                    return String(decoding: data, as: UTF8.self) == "\(i)"
                }
            }
            var all = 0
            for try await ok in group where ok { all += 1 }
            #expect(all == 32)
        }
    }

    @Test func aTakenPortIsAClearError() throws {
        let first = LoopbackHTTPServer { _ in .empty() }
        let port = try first.start()
        defer { first.stop() }
        let second = LoopbackHTTPServer(port: port) { _ in .empty() }
        #expect {
            try second.start()
        } throws: { error in
            guard let error = error as? MSALError else { return false }
            return error == .internal(.networkError, "") && error.message.contains("already in use")
                && error.message.contains("\(port)")
        }
    }

    @Test func nonLoopbackHostIsRejected() {
        let server = LoopbackHTTPServer(host: "0.0.0.0") { _ in .empty() }
        #expect(throws: MSALError.internal(.invalidParameter, "")) { try server.start() }
    }

    @Test func stopIsIdempotentAndClosesTheListener() async throws {
        let server = LoopbackHTTPServer { _ in .text("ok") }
        let port = try server.start()
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/")!)
        #expect(String(decoding: data, as: UTF8.self) == "ok")
        server.stop()
        server.stop()
        #expect(server.port == 0)
        #expect(throws: MSALError.internal(.invalidParameter, "")) { try server.start() }
        // Nobody listens any more: the connection is refused.
        let result = RawTCP.exchange(port: port, bytes: Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), timeout: 1)
        #expect(!result.response.hasPrefix("HTTP/1.1 200"))
    }

    @Test func malformedRequestGets400() throws {
        let server = LoopbackHTTPServer { _ in .text("handler must not run") }
        let port = try server.start()
        defer { server.stop() }
        let result = RawTCP.exchange(port: port, bytes: Array("GET / HTTP/1.1\r\nHost x\r\n\r\n".utf8))
        #expect(result.response.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(result.response.contains("Connection: close"))
        #expect(!result.response.contains("handler must not run"))
        #expect(result.closedAfter != nil)
    }

    @Test func aOneMegabyteRequestLineIsRejectedAndClosed() throws {
        let server = LoopbackHTTPServer { _ in .text("handler must not run") }
        let port = try server.start()
        defer { server.stop() }
        let line = "GET /" + String(repeating: "x", count: 1 << 20) + " HTTP/1.1\r\nHost: x\r\n\r\n"
        let result = RawTCP.exchange(port: port, bytes: Array(line.utf8))
        #expect(result.response.hasPrefix("HTTP/1.1 414 "))
        #expect(result.closedAfter != nil)
    }

    @Test func anOversizedBodyIs413() throws {
        let server = LoopbackHTTPServer(maxRequestBytes: 4096) { _ in .text("handler must not run") }
        let port = try server.start()
        defer { server.stop() }
        let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
        let result = RawTCP.exchange(port: port, bytes: Array(head.utf8) + [UInt8](repeating: 65, count: 100_000))
        #expect(result.response.hasPrefix("HTTP/1.1 413 "))
        #expect(result.closedAfter != nil)
    }

    @Test func aSilentClientIsDroppedAfterTheReadTimeout() throws {
        let server = LoopbackHTTPServer(readTimeout: 0.3) { _ in .text("handler must not run") }
        let port = try server.start()
        defer { server.stop() }
        let result = RawTCP.exchange(port: port, bytes: [], timeout: 5)
        let closedAfter = try #require(result.closedAfter)
        #expect(closedAfter >= 0.25)
        #expect(closedAfter < 3)
        #expect(result.response.isEmpty)
    }

    @Test func aPartialRequestGets408AfterTheReadTimeout() throws {
        let server = LoopbackHTTPServer(readTimeout: 0.3) { _ in .text("handler must not run") }
        let port = try server.start()
        defer { server.stop() }
        let result = RawTCP.exchange(port: port, bytes: Array("GET / HTTP/1.1\r\nHo".utf8), timeout: 5)
        #expect(result.response.hasPrefix("HTTP/1.1 408 "))
        #expect(result.closedAfter != nil)
    }

    @Test func aClientThatHalfClosesMidRequestGets400() throws {
        let server = LoopbackHTTPServer { _ in .text("handler must not run") }
        let port = try server.start()
        defer { server.stop() }
        let result = RawTCP.exchange(port: port, bytes: Array("GET / HTTP/1.1\r\nHost: x\r\n".utf8), halfClose: true)
        #expect(result.response.hasPrefix("HTTP/1.1 400 "))
    }

    @Test func headGetsNoBody() throws {
        let server = LoopbackHTTPServer { _ in .text("hello") }
        let port = try server.start()
        defer { server.stop() }
        let result = RawTCP.exchange(port: port, bytes: Array("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(result.response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(result.response.hasSuffix("Content-Length: 5\r\nConnection: close\r\n\r\n"))
    }
}

@Suite("LoopbackHTTPServer stop from a handler")
struct HTTPServerStopFromHandlerTests {
    final class Box: Sendable {
        let server = Mutex<LoopbackHTTPServer?>(nil)
    }

    // The limit catches a hang (stop() once waited for the next client). Alone the test takes
    // milliseconds; in CI's whole run on two cores it waited 37 to 95 s to be resumed while the
    // keyring suites, side by side, held both cooperative threads in D-Bus calls. They now run one
    // after another (KeyringTests is serialized) and it waits about 20 s; the limit keeps room for
    // a busy machine.
    @Test(.timeLimit(.minutes(5))) func aHandlerCanStopItsServerAndStillAnswer() async throws {
        let box = Box()
        let server = LoopbackHTTPServer { _ in
            box.server.withLock { $0 }?.stop()
            return .text("last answer")
        }
        box.server.withLock { $0 = server }
        let port = try server.start()
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/callback?code=x")!)
        #expect(String(decoding: data, as: UTF8.self) == "last answer")
        #expect(server.port == 0)
        box.server.withLock { $0 = nil }
    }
}
