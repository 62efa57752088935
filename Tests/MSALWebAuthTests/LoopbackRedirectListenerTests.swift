import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
import MSALCore
import MSALWebAuth
import Testing

/// A GET through URLSession (no cache, no cookies).
/// - Returns: the status and the body as text.
func loopbackGET(_ url: URL) async throws -> (status: Int, body: String) {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    configuration.connectionProxyDictionary = [:]
    let session = URLSession(configuration: configuration)
    defer { session.finishTasksAndInvalidate() }
    let (data, response) = try await session.data(from: url)
    let status = (response as? HTTPURLResponse)?.statusCode ?? -1
    return (status, String(decoding: data, as: UTF8.self))
}

/// The bound redirect URI with `query` appended (and `path` in place of the redirect path).
func loopbackRedirectURL(_ bound: URL, path: String? = nil, query: String) -> URL {
    var components = URLComponents(url: bound, resolvingAgainstBaseURL: false)!
    if let path { components.path = path }
    components.percentEncodedQuery = query
    return components.url!
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
func isListening(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

/// Waits (polling every 10 ms, generously bounded) until nothing listens on the port.
/// - Returns: `true` once the port is closed, `false` if it stayed open for 10 s.
func portCloses(_ port: Int) async throws -> Bool {
    for _ in 0..<1000 {
        if !isListening(port) { return true }
        try await Task.sleep(nanoseconds: 10_000_000)
    }
    return false
}

@Suite("LoopbackRedirectListener")
struct LoopbackRedirectListenerTests {
    @Test func codeWithMatchingStateIsDeliveredAndTheListenerCloses() async throws {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/callback")!, expectedState: "STATE-A")
        let bound = try listener.start()
        #expect(bound.host == "127.0.0.1")
        #expect(bound.path == "/callback")
        let port = try #require(bound.port)
        #expect(port != 0)
        #expect(try listener.start() == bound, "start() is idempotent")

        let waiter = Task { try await listener.waitForResponse() }
        let (status, body) = try await loopbackGET(loopbackRedirectURL(bound, query: "code=THE-CODE&state=STATE-A"))
        #expect(status == 200)
        #expect(body.contains("You are signed in; you can close this window"))
        #expect(!body.contains("THE-CODE"))
        #expect(try await waiter.value == .code("THE-CODE"))

        // Closed: the server stops listening as it answers, before the waiter returns.
        #expect(!isListening(port))
        // Waiting again returns the same answer at once.
        #expect(try await listener.waitForResponse() == .code("THE-CODE"))
    }

    @Test func localhostRedirectURIBinds127001AndKeepsTheHostName() async throws {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://localhost")!, expectedState: "S")
        let bound = try listener.start()
        defer { listener.stop() }
        #expect(bound.host == "localhost")
        let port = try #require(bound.port)
        // Reachable on 127.0.0.1 (what RawTCP connects to).
        let probe = RawTCP.exchange(port: UInt16(port), bytes: Array("GET /nothing HTTP/1.0\r\n\r\n".utf8))
        #expect(probe.response.hasPrefix("HTTP/1.1 404"))
    }

    @Test(arguments: ["http://localhost/", "http://127.0.0.1/"])
    func bindsTheLoopbackAddressNotTheWildcard(uri: String) async throws {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: uri)!, expectedState: "S")
        let port = try #require(try listener.start().port)
        defer { listener.stop() }
        // Another loopback address on the same port is free only if the listener did not take
        // the wildcard address (0.0.0.0), which would conflict with every address.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0002).bigEndian  // 127.0.0.2
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(bound == 0, "127.0.0.2:\(port) must be free: the listener binds 127.0.0.1 only")
        #expect(listen(fd, 1) == 0)
    }

    @Test func wrongOrMissingStateIs400AndTheListenerKeepsWaiting() async throws {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://localhost/")!, expectedState: "STATE-B")
        let bound = try listener.start()
        let waiter = Task { try await listener.waitForResponse() }
        let wrong = try await loopbackGET(loopbackRedirectURL(bound, query: "code=FORGED&state=ATTACKER"))
        #expect(wrong.status == 400)
        let missing = try await loopbackGET(loopbackRedirectURL(bound, query: "code=FORGED"))
        #expect(missing.status == 400)
        let right = try await loopbackGET(loopbackRedirectURL(bound, query: "code=REAL&state=STATE-B"))
        #expect(right.status == 200)
        #expect(try await waiter.value == .code("REAL"))
    }

    @Test func strayRequestToAnotherPathIs404AndTheListenerKeepsWaiting() async throws {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/cb")!, expectedState: "S")
        let bound = try listener.start()
        let waiter = Task { try await listener.waitForResponse() }
        #expect(try await loopbackGET(loopbackRedirectURL(bound, path: "/favicon.ico", query: "")).status == 404)
        #expect(try await loopbackGET(loopbackRedirectURL(bound, path: "/elsewhere", query: "code=C&state=S")).status == 404)
        #expect(try await loopbackGET(loopbackRedirectURL(bound, query: "code=C&state=S")).status == 200)
        #expect(try await waiter.value == .code("C"))
    }

    @Test func errorResponseIsAnsweredWithTheEscapedErrorAndDelivered() async throws {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/")!, expectedState: "S")
        let bound = try listener.start()
        let waiter = Task { try await listener.waitForResponse() }
        let (status, body) = try await loopbackGET(loopbackRedirectURL(
            bound, query: "error=access_denied&error_description=%3Cscript%3Ealert(1)%3C%2Fscript%3E+said+no&state=S"))
        #expect(status == 200)
        #expect(body.contains("access_denied"))
        #expect(body.contains("&lt;script&gt;alert(1)&lt;/script&gt; said no"))
        #expect(!body.contains("<script>"))
        let response = try await waiter.value
        #expect(response == .error(error: "access_denied", description: "<script>alert(1)</script> said no", uri: nil, subError: nil))
        #expect(response.error?.code == .userCanceled)
    }

    @Test func timesOutWhenNothingArrives() async throws {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/")!, expectedState: "S", timeout: 0.3)
        let bound = try listener.start()
        let started = Date()
        let error = await thrown { try await listener.waitForResponse() }
        #expect(error == .internal(.timeout, ""))
        #expect(error?.message.contains("0.3 seconds") == true)
        #expect(Date().timeIntervalSince(started) >= 0.25)
        // A late response is turned away (or finds the port closed).
        let late = RawTCP.exchange(port: UInt16(bound.port!), bytes: Array("GET /?code=C&state=S HTTP/1.0\r\n\r\n".utf8), timeout: 2)
        #expect(!late.response.hasPrefix("HTTP/1.1 200"))
    }

    @Test func cancelingTheWaitingTaskThrowsUserCanceledPromptly() async throws {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/")!, expectedState: "S")
        try listener.start()
        let waiter = Task { () async -> MSALError? in await thrown { try await listener.waitForResponse() } }
        // Let the waiter register (the result is the same either way: cancellation before or
        // during the wait both end in userCanceled).
        try await Task.sleep(nanoseconds: 50_000_000)
        // Had cancellation been ignored, the wait would end as .internal(.timeout) after 300 s.
        waiter.cancel()
        let error = await waiter.value
        #expect(error?.code == .userCanceled)
    }

    @Test func stopEndsAPendingWaitWithUserCanceled() async throws {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/")!, expectedState: "S")
        let bound = try listener.start()
        let waiter = Task { () async -> MSALError? in await thrown { try await listener.waitForResponse() } }
        listener.stop()
        #expect(await waiter.value?.code == .userCanceled)
        #expect(!isListening(bound.port!), "stop() closes the port before it returns")
        #expect(await thrown { try listener.start() } == .internal(.invalidParameter, ""))
    }

    @Test func takenPortIsAClearError() async throws {
        let first = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/")!, expectedState: "S")
        let port = try #require(try first.start().port)
        defer { first.stop() }
        for host in ["127.0.0.1", "localhost"] {
            let second = LoopbackRedirectListener(redirectURI: URL(string: "http://\(host):\(port)/")!, expectedState: "S")
            let error = await thrown { try second.start() }
            #expect(error == .internal(.networkError, ""))
            #expect(error?.message.contains("\(port)") == true)
            #expect(error?.message.contains("already in use") == true)
        }
    }

    @Test func fixedPortFromTheRedirectURIIsUsed() async throws {
        // Find a free port, release it, then ask for it explicitly.
        let probe = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/")!, expectedState: "S")
        let port = try #require(try probe.start().port)
        probe.stop()
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://localhost:\(port)/cb")!, expectedState: "S")
        let bound = try listener.start()
        defer { listener.stop() }
        #expect(bound.absoluteString == "http://localhost:\(port)/cb")
    }

    @Test func oversizedRequestIsRejectedAndTheListenerKeepsWaiting() async throws {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/")!, expectedState: "S")
        let bound = try listener.start()
        let waiter = Task { try await listener.waitForResponse() }
        let huge = "GET /?code=C&state=S&pad=" + String(repeating: "a", count: 1 << 20) + " HTTP/1.1\r\nHost: x\r\n\r\n"
        let rejected = RawTCP.exchange(port: UInt16(bound.port!), bytes: Array(huge.utf8))
        let status = rejected.response.prefix(12)
        #expect(["HTTP/1.1 413", "HTTP/1.1 414", "HTTP/1.1 431"].contains(status), "got \(status)")
        #expect(try await loopbackGET(loopbackRedirectURL(bound, query: "code=C&state=S")).status == 200)
        #expect(try await waiter.value == .code("C"))
    }

    @Test func silentConnectionIsDroppedAfterTheReadTimeoutAndTheListenerKeepsWaiting() async throws {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/")!, expectedState: "S", readTimeout: 0.3)
        let bound = try listener.start()
        let waiter = Task { try await listener.waitForResponse() }
        let silent = RawTCP.exchange(port: UInt16(bound.port!), bytes: [], timeout: 10)
        let closedAfter = try #require(silent.closedAfter, "the server must close a silent connection")
        #expect(closedAfter >= 0.25)
        #expect(silent.response.isEmpty)
        #expect(try await loopbackGET(loopbackRedirectURL(bound, query: "code=C&state=S")).status == 200)
        #expect(try await waiter.value == .code("C"))
    }

    @Test(arguments: ["https://127.0.0.1/", "http://example.com/", "http://0.0.0.0/", "myapp://auth", "http://127.0.0.1/#frag"])
    func nonLoopbackRedirectURIIsRejected(uri: String) async {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: uri)!, expectedState: "S")
        #expect(await thrown { try listener.start() } == .internal(.invalidRedirectURI, ""))
    }

    @Test func waitingBeforeStartIsAnError() async {
        let listener = LoopbackRedirectListener(redirectURI: URL(string: "http://127.0.0.1/")!, expectedState: "S")
        #expect(await thrown { try await listener.waitForResponse() } == .internal(.invalidParameter, ""))
    }
}
