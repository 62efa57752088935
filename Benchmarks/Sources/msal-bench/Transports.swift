import BenchmarkSupport
import Foundation
import MSALCache
import MSALCore
import MSALNetwork
import MSALTestSupport
import Dispatch
import Synchronization

/// Wraps a transport and adds up the time spent inside it: the provider's handling plus the HTTP
/// round trip (everything below swift-msal's `HTTPTransport` seam). The SDK's share of a call is
/// the call's latency minus this time.
final class TimingTransport: HTTPTransport {
    let inner: any HTTPTransport
    private let spent = Atomic<UInt64>(0)
    private let count = Atomic<Int>(0)

    init(_ inner: any HTTPTransport) { self.inner = inner }

    func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse {
        let start = monotonicNanoseconds()
        defer {
            spent.add(monotonicNanoseconds() - start, ordering: .relaxed)
            count.add(1, ordering: .relaxed)
        }
        return try await inner.send(request)
    }

    /// Nanoseconds spent inside the transport and the number of requests since the last call; resets both.
    func take() -> (nanoseconds: UInt64, requests: Int) {
        (spent.exchange(0, ordering: .relaxed), count.exchange(0, ordering: .relaxed))
    }
}

/// A transport for the cache-hit benchmarks: any request is a failure of the benchmark (a hit must
/// not touch the network).
struct NoNetworkTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse {
        throw .internal(.networkError, "msal-bench: a cache hit sent a request to \(request.url.host ?? "?")")
    }
}

/// The network stubbed in process, as MSAL Python's own tests stub `http_client`: answers Entra's
/// discovery document and the token endpoint for the accounts of a ``CacheShape`` (no sockets; the
/// response is written into a string, and the ID token is made once per account and tenant: the
/// stub's cost, and the CPU-cache space it takes from the SDK, should be close to nothing, as MSAL
/// Python's stub's is). A refresh gets an access token
/// valid for `accessTokenLifetime` seconds (by default 250: inside the 5-minute expiration buffer,
/// so the next lookup refreshes again and every iteration is a miss that refreshes), the same
/// refresh token, the account's ID token for the tenant and its `client_info`, and the requested
/// scopes as granted.
final class StubEntraTransport: HTTPTransport {
    let shape: CacheShape
    let clock: any WallClock
    let accessTokenLifetime: Int
    /// Refresh token secret → account index.
    private let accounts: [String: Int]
    /// ID tokens by account and tenant (`account × tenants + tenant`), made on first use or by
    /// ``prepareIDTokens()``: one per tenant profile of the cache.
    private let idTokens = Mutex<[Int: String]>([:])
    private let tokenRequests = Atomic<Int>(0)

    init(shape: CacheShape, refreshTokenOwners: [String: Int], clock: any WallClock, accessTokenLifetime: Int = 250) {
        self.shape = shape
        self.clock = clock
        self.accessTokenLifetime = accessTokenLifetime
        self.accounts = refreshTokenOwners
    }

    /// Refresh token secret → account index, for the cache `contents` of `shape`.
    static func refreshTokenOwners(shape: CacheShape, contents: TokenCacheContents) -> [String: Int] {
        var owners: [String: Int] = [:]
        let byHome = Dictionary(uniqueKeysWithValues: (0..<shape.accountCount).map { (shape.homeAccountID($0), $0) })
        for entry in contents.refreshTokens.values {
            if let index = byHome[entry.homeAccountID] { owners[entry.secret] = index }
        }
        return owners
    }

    /// Token requests answered so far.
    var tokenRequestCount: Int { tokenRequests.load(ordering: .relaxed) }

    func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse {
        let path = request.url.path
        guard let tenantID = path.split(separator: "/").first.map(String.init), let tenant = shape.tenants.firstIndex(of: tenantID) else {
            return HTTPResponse(statusCode: 404)
        }
        if path.hasSuffix("/.well-known/openid-configuration") {
            let base = "https://\(CacheShape.environment)/\(tenantID)"
            let document: [String: JSONValue] = [
                "issuer": .string(CacheShape.issuer(tenant: tenantID)),
                "authorization_endpoint": .string("\(base)/oauth2/v2.0/authorize"),
                "token_endpoint": .string("\(base)/oauth2/v2.0/token"),
                "device_authorization_endpoint": .string("\(base)/oauth2/v2.0/devicecode"),
            ]
            return HTTPResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: Self.encode(document))
        }
        guard path.hasSuffix("/oauth2/v2.0/token"), let body = request.body else { return HTTPResponse(statusCode: 404) }
        tokenRequests.add(1, ordering: .relaxed)
        guard let refreshToken = Self.formField("refresh_token", in: body), let account = accounts[refreshToken] else {
            return HTTPResponse(
                statusCode: 400, headers: ["Content-Type": "application/json"],
                body: Self.encode(["error": .string("invalid_grant"), "error_description": .string("unknown refresh token")]))
        }
        let scope = Self.formField("scope", in: body) ?? ""
        // Entra echoes the granted scopes, the OpenID Connect ones included.
        let granted = scope.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? scope
        let idToken = idTokens.withLock { kept in
            let slot = account * shape.tenantsPerAccount + tenant
            if let jwt = kept[slot] { return jwt }
            let jwt = shape.idTokenJWT(account: account, tenant: tenant, issuedAt: clock.now())
            kept[slot] = jwt
            return jwt
        }
        let response = Self.tokenResponse(
            scope: granted, lifetime: accessTokenLifetime, accessToken: "stub-access-token-\(account)-\(tenant)",
            refreshToken: refreshToken, idToken: idToken, clientInfo: clientInfo(account))
        return HTTPResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: response)
    }

    /// Makes the ID token of every account and tenant now, so that no request in a measurement
    /// encodes one (at 100k tokens: 10,000 tokens, about 7 MB).
    func prepareIDTokens() {
        let now = clock.now()
        idTokens.withLock { kept in
            for account in 0..<shape.accountCount {
                for tenant in 0..<shape.tenantsPerAccount where kept[account * shape.tenantsPerAccount + tenant] == nil {
                    kept[account * shape.tenantsPerAccount + tenant] = shape.idTokenJWT(account: account, tenant: tenant, issuedAt: now)
                }
            }
        }
    }

    /// The `client_info` of an account: base64url JSON with its `uid` and home tenant `utid`.
    private func clientInfo(_ account: Int) -> String {
        Base64URL.encode(Data(#"{"uid":"\#(shape.accountObjectIDs[account])","utid":"\#(shape.tenants[0])"}"#.utf8))
    }

    /// A token response, written directly: every value is base64url, a GUID, a number or a scope
    /// list without characters JSON escapes, so no encoder (whose cost would evict the SDK's data
    /// from the CPU caches between the measured halves of a refresh) is needed.
    static func tokenResponse(scope: String, lifetime: Int, accessToken: String, refreshToken: String, idToken: String, clientInfo: String) -> Data {
        precondition(!scope.utf8.contains { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }, "the stub writes scopes unescaped: no quote, backslash or control character")
        return Data("""
            {"access_token":"\(accessToken)","client_info":"\(clientInfo)","expires_in":\(lifetime),"ext_expires_in":\(lifetime),\
            "id_token":"\(idToken)","refresh_token":"\(refreshToken)","scope":"\(scope)","token_type":"Bearer"}
            """.utf8)
    }

    /// The value of one field of an `application/x-www-form-urlencoded` body, for values that need
    /// no decoding (the stub's refresh tokens are base64url).
    static func formField(_ name: String, in body: Data) -> String? {
        let bytes = [UInt8](body)
        let prefix = Array((name + "=").utf8)
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
            if bytes[start..<end].starts(with: prefix) {
                return String(decoding: bytes[(start + prefix.count)..<end], as: UTF8.self)
            }
            start = end + 1
        }
        return nil
    }

    static func encode(_ object: [String: JSONValue]) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(object)) ?? Data("{}".utf8)
    }
}

/// How ``WaitingTransport`` lets time pass before it answers (`msal-bench lookup --stub-wait`).
enum StubWait: Equatable {
    /// The calling thread busy-waits this many microseconds: time passes, the thread stays on its core.
    case spin(microseconds: Int)
    /// The calling task suspends; a Dispatch thread sleeps this many microseconds and resumes it,
    /// as URLSession's completion handler resumes a task when the response arrives.
    case suspend(microseconds: Int)

    /// Parses `spin:N` or `suspend:N` (N in microseconds, 0...1,000,000); `nil` for anything else.
    init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let microseconds = Int(parts[1]), (0...1_000_000).contains(microseconds) else { return nil }
        switch parts[0] {
        case "spin": self = .spin(microseconds: microseconds)
        case "suspend": self = .suspend(microseconds: microseconds)
        default: return nil
        }
    }
}

/// Answers through another transport after a wait (``StubWait``). With the stubbed provider it
/// separates what waiting for a network costs the SDK's work after it (caches and cores gone cold
/// while the thread waited or slept) from the work itself: the wait is inside the transport, so it
/// is subtracted from the SDK's share like a real provider's time.
struct WaitingTransport: HTTPTransport {
    let inner: any HTTPTransport
    let wait: StubWait

    init(_ inner: any HTTPTransport, wait: StubWait) {
        self.inner = inner
        self.wait = wait
    }

    func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse {
        switch wait {
        case .spin(let microseconds):
            let end = monotonicNanoseconds() + UInt64(microseconds) * 1_000
            while monotonicNanoseconds() < end {}
        case .suspend(let microseconds):
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    if microseconds > 0 { usleep(UInt32(microseconds)) }
                    continuation.resume()
                }
            }
        }
        return try await inner.send(request)
    }
}
