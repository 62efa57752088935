import BenchmarkSupport
import Foundation
import MSAL
import MSALCache
import MSALCore
import MSALNetwork
import MSALTestSupport

/// Token refresh against the local Entra-compatible provider on 127.0.0.1 (real HTTP through
/// Foundation's `URLSession`): one refresh end to end and the SDK's share of it, the loopback round
/// trip of a request that does nothing, and 1, 10, 100 and 1000 concurrent silent calls for one
/// account and scopes whose access token has expired.
struct RefreshBench {
    let smoke: Bool
    /// Every group of cases: `single` (`refresh.*`), `other-writer` (`refresh.after_other_writer.*`),
    /// `noop` (`http.round_trip.noop`), `concurrent` (`refresh.concurrent.*`).
    static let allGroups: Set<String> = ["single", "other-writer", "noop", "concurrent"]
    /// The groups of cases to run (`--only`); all by default.
    var groups = RefreshBench.allGroups

    init(smoke: Bool) { self.smoke = smoke }

    func run() async throws {
        let provider = LocalIdentityProvider()
        provider.deviceCodeInterval = 0
        try provider.start()
        defer { provider.stop() }
        let tenant = LocalIdentityProvider.demoTenantID
        let authority = try Authority(provider.authority(tenant: tenant), type: .aad)
        let store = InMemoryTokenCacheStore()
        let timing = TimingTransport(URLSessionTransport())
        var configuration = PublicClientApplicationConfiguration(
            clientID: LocalIdentityProvider.demoClientID, authority: authority, cacheStore: store)
        configuration.transport = timing
        configuration.sleep = { _ in }
        let application = try PublicClientApplication(configuration: configuration)
        let scopes = ["api://bench/Files.Read"]
        let signIn = try await application.acquireToken(with: DeviceCodeParameters(scopes: scopes)) { info in
            try provider.approveDeviceCode(userCode: info.userCode, as: LocalIdentityProvider.demoUser.username)
        }
        let parameters = SilentTokenParameters(scopes: scopes, account: signIn.account)
        let backend = Backend.inMemory.rawValue
        let tokens = try store.readAll().accessTokens.count

        /// Makes the cached access token expire a minute ago (written through the store, as
        /// another process would).
        func expire() throws {
            let contents = try store.readAll()
            let upserts = contents.accessTokens.values.map { entry -> CacheEntry in
                var expired = entry
                expired.expiresOn = Date(timeIntervalSinceNow: -60)
                expired.extendedExpiresOn = expired.expiresOn
                return .accessToken(expired)
            }
            try store.apply(TokenCacheChange(upserts: upserts))
        }

        let iterations = Iterations(warmup: 30, measured: 400).smoke(smoke)
        /// Measures silent calls that each refresh once, after `prepare`: end to end, the SDK's share
        /// (the time inside the transport, provider plus HTTP, subtracted) and the time in the transport.
        func measureRefreshes(_ name: String, prepare: () throws -> Void) async throws {
            var total = Samples(capacity: 500), share = Samples(capacity: 500), inTransport = Samples(capacity: 500)
            for index in 0..<(iterations.warmup + iterations.measured) {
                try prepare()
                _ = timing.take()
                let start = monotonicNanoseconds()
                let result = try await application.acquireTokenSilent(with: parameters)
                let elapsed = monotonicNanoseconds() - start
                let (transport, requests) = timing.take()
                try check(result.tokenSource == .identityProvider && requests == 1, "a refresh sent \(requests) requests")
                guard index >= iterations.warmup else { continue }
                total.append(elapsed)
                share.append(elapsed - transport)
                inTransport.append(transport)
            }
            Report.result(name: "\(name).end_to_end", backend: backend, n: tokens, samples: total)
            Report.result(name: "\(name).sdk_share", backend: backend, n: tokens, samples: share)
            Report.result(name: "\(name).in_transport", backend: backend, n: tokens, samples: inTransport)
        }

        // One refresh: the provider issues access tokens that expire within the SDK's 5-minute
        // buffer, so each silent call finds its token due and refreshes it (the stubbed
        // `silent.miss_refresh` cases do the same).
        provider.accessTokenLifetime = 250
        if groups.contains("single") {
            try expire()  // the sign-in's token
            try await measureRefreshes("refresh") {}
        }
        // The same after another writer (as another process would) made the token expire: the
        // call first reloads the cache it no longer holds current, then refreshes.
        provider.accessTokenLifetime = 3600
        if groups.contains("other-writer") {
            try await measureRefreshes("refresh.after_other_writer") { try expire() }
        }

        // The same loopback HTTP path with nothing to do: GET the (empty) JWK set.
        if groups.contains("noop") {
            let plain = URLSessionTransport()
            let keys = HTTPRequest(method: .get, url: provider.baseURL.appendingPathComponent("\(tenant)/discovery/v2.0/keys"))
            let roundTrip = try await measureAsync(iterations) { _ in
                let response = try await plain.send(keys)
                if response.statusCode != 200 { throw BenchmarkFailure("the keys endpoint answered \(response.statusCode)") }
            }
            Report.result(name: "http.round_trip.noop", backend: "loopback", n: 0, samples: roundTrip)
        }

        // Concurrent silent calls on an expired token: one refresh must reach the provider.
        for callers in [1, 10, 100, 1000] where groups.contains("concurrent") {
            let rounds = smoke ? 1 : (callers >= 1000 ? 12 : 25)
            let warmupRounds = smoke ? 0 : 2
            var latencies = Samples(capacity: rounds * callers)
            var slowest = Samples(capacity: rounds)
            var requestsPerRound: [Int] = []
            for round in 0..<(warmupRounds + rounds) {
                try expire()
                let before = provider.requestCount(endpoint: .token)
                let start = monotonicNanoseconds()
                let outcomes = await withTaskGroup(of: (UInt64, Bool).self) { group in
                    for _ in 0..<callers {
                        group.addTask {
                            let result = try? await application.acquireTokenSilent(with: parameters)
                            return (monotonicNanoseconds() - start, result != nil)
                        }
                    }
                    var outcomes: [(UInt64, Bool)] = []
                    for await outcome in group { outcomes.append(outcome) }
                    return outcomes
                }
                let requests = provider.requestCount(endpoint: .token) - before
                try check(outcomes.allSatisfy(\.1), "a concurrent silent call failed")
                guard round >= warmupRounds else { continue }
                for (latency, _) in outcomes { latencies.append(latency) }
                slowest.append(outcomes.map(\.0).max() ?? 0)
                requestsPerRound.append(requests)
            }
            if Set(requestsPerRound) != [1] {
                Report.note("refresh.concurrent.\(callers): refresh requests per round \(requestsPerRound) (expected 1)")
            }
            Report.result(
                name: "refresh.concurrent.\(callers)", backend: backend, n: tokens, samples: latencies,
                extra: [
                    // The most requests any round sent (1 when every round coalesced its callers),
                    // and the median over the rounds of each round's slowest caller.
                    ("refresh_requests", .integer(Int64(requestsPerRound.max() ?? 0))),
                    ("slowest_caller_ns", .unsigned(slowest.median)),
                ])
        }
    }
}
