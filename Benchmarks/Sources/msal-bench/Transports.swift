import BenchmarkSupport
import Foundation
import MSALCache
import MSALCore
import MSALNetwork
import MSALTestSupport
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

/// The network stubbed in process, as MSAL Python's own benchmarks stub `http_client`: answers
/// Entra's discovery document and the token endpoint for the accounts of a ``CacheShape`` with a
/// prepared response (no sockets). A refresh gets a new access token valid for
/// `accessTokenLifetime` seconds (by default 250: inside the 5-minute expiration buffer, so the
/// next lookup refreshes again and every iteration is a miss that refreshes), the same refresh
/// token, the account's ID token for the tenant, and its `client_info`.
final class StubEntraTransport: HTTPTransport {
    let shape: CacheShape
    let clock: any WallClock
    let accessTokenLifetime: Int
    /// Refresh token secret → account index.
    private let accounts: [String: Int]
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
        let segments = request.url.path.split(separator: "/").map(String.init)
        guard let tenantID = segments.first, let tenant = shape.tenants.firstIndex(of: tenantID) else {
            return HTTPResponse(statusCode: 404)
        }
        if request.url.path.hasSuffix("/.well-known/openid-configuration") {
            let base = "https://\(CacheShape.environment)/\(tenantID)"
            let document: [String: JSONValue] = [
                "issuer": .string(CacheShape.issuer(tenant: tenantID)),
                "authorization_endpoint": .string("\(base)/oauth2/v2.0/authorize"),
                "token_endpoint": .string("\(base)/oauth2/v2.0/token"),
                "device_authorization_endpoint": .string("\(base)/oauth2/v2.0/devicecode"),
            ]
            return HTTPResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: Self.encode(document))
        }
        guard request.url.path.hasSuffix("/oauth2/v2.0/token"), let body = request.body else { return HTTPResponse(statusCode: 404) }
        tokenRequests.add(1, ordering: .relaxed)
        let form = Self.formFields(body)
        guard form["grant_type"] == "refresh_token", let refreshToken = form["refresh_token"], let account = accounts[refreshToken] else {
            return HTTPResponse(
                statusCode: 400, headers: ["Content-Type": "application/json"],
                body: Self.encode(["error": .string("invalid_grant"), "error_description": .string("unknown refresh token")]))
        }
        let key = account * 64 + tenant
        let idToken = idTokens.withLock { cache in
            if let token = cache[key] { return token }
            let token = shape.idTokenJWT(account: account, tenant: tenant, issuedAt: clock.now())
            cache[key] = token
            return token
        }
        let clientInfo = Base64URL.encode(Self.encode([
            "uid": .string(shape.accountObjectIDs[account]), "utid": .string(shape.tenants[0]),
        ]))
        let response: [String: JSONValue] = [
            "token_type": .string("Bearer"),
            "scope": .string(form["scope"] ?? ""),
            "expires_in": .number(Double(accessTokenLifetime)),
            "ext_expires_in": .number(Double(accessTokenLifetime)),
            "access_token": .string("stub-access-token-\(tokenRequests.load(ordering: .relaxed))"),
            "refresh_token": .string(refreshToken),
            "id_token": .string(idToken),
            "client_info": .string(clientInfo),
        ]
        return HTTPResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: Self.encode(response))
    }

    static func encode(_ object: [String: JSONValue]) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(object)) ?? Data("{}".utf8)
    }

    /// Decodes an `application/x-www-form-urlencoded` body.
    static func formFields(_ body: Data) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String {
                (String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding) ?? String(part)
            }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }
}
