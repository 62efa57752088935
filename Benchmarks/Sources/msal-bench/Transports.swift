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

/// The network stubbed in process, as MSAL Python's own tests stub `http_client`: answers Entra's
/// discovery document and the token endpoint for the accounts of a ``CacheShape`` with a prepared
/// response (no sockets, and after the first request for an account and tenant no encoding either:
/// the stub's cost should be close to nothing, as MSAL Python's is). A refresh gets an access token
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
    /// Prepared token responses by account, tenant and requested scopes.
    private let responses = Mutex<[String: Data]>([:])
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
        let key = "\(account)|\(tenant)|\(scope)"
        let response = responses.withLock { prepared in
            if let data = prepared[key] { return data }
            // Entra echoes the granted scopes, the OpenID Connect ones included.
            let granted = scope.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? scope
            let clientInfo = Base64URL.encode(Self.encode([
                "uid": .string(shape.accountObjectIDs[account]), "utid": .string(shape.tenants[0]),
            ]))
            let data = Self.encode([
                "token_type": .string("Bearer"),
                "scope": .string(granted),
                "expires_in": .number(Double(accessTokenLifetime)),
                "ext_expires_in": .number(Double(accessTokenLifetime)),
                "access_token": .string("stub-access-token-\(account)-\(tenant)"),
                "refresh_token": .string(refreshToken),
                "id_token": .string(shape.idTokenJWT(account: account, tenant: tenant, issuedAt: clock.now())),
                "client_info": .string(clientInfo),
            ])
            prepared[key] = data
            return data
        }
        return HTTPResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: response)
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
