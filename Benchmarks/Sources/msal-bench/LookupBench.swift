import BenchmarkSupport
import Foundation
import MSAL
import MSALCache
import MSALCore
import MSALTestSupport

/// Current and peak RSS, for progress notes.
func memory() -> String { "rss \(currentRSSBytes() >> 20) MiB, peak \(peakRSSBytes() >> 20) MiB" }

/// The options of `msal-bench lookup`.
struct LookupOptions {
    var backend: Backend = .inMemory
    var n = 10
    var tenants = 4
    var scopeSets = 10
    var secretLength = 64
    /// Prefixed to every case name (e.g. `partition` for the 1000-scope-set partition).
    var label: String?
    var smoke = false
    /// Which groups of cases run.
    var facade = true
    var raw = true
    var cold = true
    var missRefresh = true
    /// A wait added inside the stubbed transport of the miss-refresh cases (``StubWait``): time
    /// passing between the request and the response, as on a real network.
    var stubWait: StubWait?
}

/// Cache lookups on one backend at one size, in this process (so its peak RSS is this size's):
/// the facade's `acquireTokenSilent` hits (exact and subset scopes), the cold start (open the store
/// and serve the first hit), the raw `TokenCache` lookups (hits and misses), and a miss that
/// refreshes with the network stubbed in process.
struct LookupBench {
    let options: LookupOptions

    /// `silent.hit.exact`'s calls made and timed on the main actor.
    @MainActor
    static func mainActorHits(
        application: PublicClientApplication, accounts: [Account], authorities: [Authority], lookups: [Lookup],
        scopes: [[String]], budget: UInt64, count: Int, warmup: Int, smoke: Bool
    ) async throws -> Samples {
        try await measureAdaptive(budget: budget, minimum: 200, maximum: count, warmup: warmup, smoke: smoke) { index in
            let lookup = lookups[index % lookups.count]
            let result = try await application.acquireTokenSilent(with: SilentTokenParameters(
                scopes: scopes[lookup.scopeSet], account: accounts[lookup.account], authority: authorities[lookup.tenant]))
            if result.tokenSource != .cache { throw BenchmarkFailure("main_actor.silent.hit.exact did not come from the cache") }
        }
    }

    func run() async throws {
        let options = self.options
        let backend = options.backend
        let shape = CacheShape(
            n: options.n, tenantsPerAccount: options.tenants, scopeSetsPerTenant: options.scopeSets,
            secretLength: options.secretLength)
        let prefix = options.label.map { "\($0)." } ?? ""
        let now = Date()
        let location = BackendLocation(backend: backend, directory: try ScratchPath(prefix: "msal-bench-\(backend.rawValue)"))
        defer {
            // A throwaway keyring goes with its session: removing 1,226 items one by one first
            // would take gnome-keyring over a minute (it rewrites its file for each).
            if !(backend == .keyring && BackendLocation.keyringIsThrowaway) { try? location.clear() }
            location.directory.remove()
        }
        try location.clear()

        // The cache, written to the backend; the generated contents are dropped before measuring
        // (the in-memory store keeps them: they are its cache). The in-memory store is filled 100
        // accounts at a time, as token responses fill a cache, so the harness never holds a second
        // copy of the whole cache beside it; a persistent store is written in one change.
        let store: any TokenCacheStore
        var refreshTokenOwners: [String: Int] = [:]
        do {
            let expiresOn = now.addingTimeInterval(86_400)
            let start = monotonicNanoseconds()
            var written = 0
            if backend == .inMemory {
                let memoryStore = InMemoryTokenCacheStore()
                for first in stride(from: 0, to: shape.accountCount, by: 100) {
                    let batch = shape.contents(accounts: first..<min(first + 100, shape.accountCount), now: now, expiresOn: expiresOn)
                    refreshTokenOwners.merge(StubEntraTransport.refreshTokenOwners(shape: shape, contents: batch)) { $1 }
                    var upserts: [CacheEntry] = []
                    for kind in CacheEntryKind.allCases { upserts += batch.entries(of: kind).map(\.entry) }
                    try memoryStore.apply(TokenCacheChange(upserts: upserts))
                    written += batch.count
                }
                store = memoryStore
            } else {
                let contents = shape.contents(now: now, expiresOn: expiresOn)
                refreshTokenOwners = StubEntraTransport.refreshTokenOwners(shape: shape, contents: contents)
                store = try location.populate(contents)
                written = contents.count
            }
            Report.note("\(backend.rawValue) n=\(options.n): \(written) entries written in \((monotonicNanoseconds() - start) / 1_000_000) ms; \(memory())")
        }
        // The generated contents were the harness's copy (each string its own allocation); the
        // store now holds the cache. Peaks from here on are the library's.
        resetPeakRSS()
        Report.note("contents dropped: \(memory())")

        let count = options.smoke ? 1 : 20_000
        let lookups = Lookup.random(count, shape: shape, seed: shape.seed ^ 0x100)
        let authorities = try shape.tenants.map { try Authority("https://\(CacheShape.environment)/\($0)") }
        // Hits: up to 20 000 measured calls or about 1.5 s, after 2 000 warm-up calls.
        let hitBudget: UInt64 = 1_500_000_000
        let hitWarmup = min(2_000, count)

        // Accounts, as an app gets them.
        var configuration = PublicClientApplicationConfiguration(clientID: CacheShape.clientID, authority: authorities[0], cacheStore: store)
        configuration.transport = NoNetworkTransport()
        let application = try PublicClientApplication(configuration: configuration)
        let found = try application.allAccounts()
        let byIdentifier = Dictionary(uniqueKeysWithValues: found.map { ($0.identifier, $0) })
        let accounts = try (0..<shape.accountCount).map { index in
            guard let account = byIdentifier[shape.homeAccountID(index)] else {
                throw BenchmarkFailure("account \(index) is not in the cache (allAccounts found \(found.count))")
            }
            return account
        }
        Report.note("application and accounts ready: \(memory())")
        try check(accounts.allSatisfy { $0.tenantProfiles.count == shape.tenantsPerAccount }, "every account has \(shape.tenantsPerAccount) tenant profiles")

        if options.facade {
            // The parameters are made per call, as an app makes them, from scope arrays made once
            // (so the harness holds no array per lookup: peak RSS is the library's).
            let exactScopes = (0..<shape.scopeSetsPerTenant).map { CacheShape.scopes(ofSet: $0) }
            let subsetScopes = exactScopes.map { set in set.map { [$0] } }
            for kind in ["exact", "subset"] {
                let samples = try await measureAdaptive(
                    budget: hitBudget, minimum: 200, maximum: count, warmup: hitWarmup, smoke: options.smoke
                ) { index in
                    let lookup = lookups[index % lookups.count]
                    let scopes = kind == "exact" ? exactScopes[lookup.scopeSet] : subsetScopes[lookup.scopeSet][lookup.subsetScope]
                    let result = try await application.acquireTokenSilent(with: SilentTokenParameters(
                        scopes: scopes, account: accounts[lookup.account], authority: authorities[lookup.tenant]))
                    if result.tokenSource != .cache { throw BenchmarkFailure("silent.hit.\(kind) did not come from the cache") }
                    if index < hitWarmup {
                        // The whole answer, checked outside the measured calls: the token of the
                        // lookup's tenant, its ID token claims, the account with every tenant profile.
                        try check(
                            result.tenantID == shape.tenants[lookup.tenant]
                                && result.idTokenClaims?.tenantID == shape.tenants[lookup.tenant]
                                && result.account.tenantProfiles.count == shape.tenantsPerAccount
                                && result.account.tenantProfiles.allSatisfy { $0.claims != nil },
                            "silent.hit.\(kind) answered without the account's profiles or ID token claims")
                    }
                }
                Report.result(name: "\(prefix)silent.hit.\(kind)", backend: backend.rawValue, n: options.n, samples: samples)
            }
            if backend == .inMemory && options.label == nil {
                // The exact hits again from the main actor, where a UI's code and a command-line
                // tool's top-level code call from: answered there, or two thread hops per call.
                let samples = try await Self.mainActorHits(
                    application: application, accounts: accounts, authorities: authorities, lookups: lookups,
                    scopes: exactScopes, budget: hitBudget, count: count, warmup: hitWarmup, smoke: options.smoke)
                Report.result(name: "main_actor.silent.hit.exact", backend: backend.rawValue, n: options.n, samples: samples)
            }
        }

        if options.cold && backend.isPersistent {
            // A new store instance and a new application each time, as a new process has: open,
            // read (decrypt, parse), index, and serve the first hit.
            // The application is released after the clock stops: tearing down the previous cache
            // is not part of the next start.
            var opened: [PublicClientApplication] = []
            let budget: UInt64 = options.n >= 100_000 ? 6_000_000_000 : 2_000_000_000
            let samples = try await measureAdaptive(budget: budget, minimum: 3, maximum: 200, smoke: options.smoke) { index in
                let lookup = lookups[index % lookups.count]
                var configuration = PublicClientApplicationConfiguration(
                    clientID: CacheShape.clientID, authority: authorities[0], cacheStore: try location.openStore())
                configuration.transport = NoNetworkTransport()
                let application = try PublicClientApplication(configuration: configuration)
                let result = try await application.acquireTokenSilent(with: SilentTokenParameters(
                    scopes: lookup.exactScopes, account: accounts[lookup.account], authority: authorities[lookup.tenant]))
                if result.tokenSource != .cache { throw BenchmarkFailure("cold_start.first_hit did not come from the cache") }
                opened.append(application)
            } between: {
                opened.removeAll()
            }
            Report.result(name: "\(prefix)cold_start.first_hit", backend: backend.rawValue, n: options.n, samples: samples)
        }

        if options.raw {
            // The index under the facade, on its own instance over the same store.
            let cache = TokenCache(store: store)
            let homes = (0..<shape.accountCount).map { shape.homeAccountID($0) }
            let environment = CacheShape.environment, clientID = CacheShape.clientID
            for (kind, scopes, hit) in [
                ("hit.exact", \Lookup.exactScopes, true), ("hit.subset", \Lookup.subsetScopes, true), ("miss", \Lookup.missingScopes, false),
            ] {
                let sets = lookups.map { ScopeSet($0[keyPath: scopes]) }
                let samples = try await measureAdaptive(
                    budget: hitBudget, minimum: 200, maximum: count, warmup: hitWarmup, smoke: options.smoke
                ) { index in
                    let lookup = lookups[index % lookups.count]
                    let found = try cache.accessToken(
                        homeAccountID: homes[lookup.account], environment: environment, realm: shape.tenants[lookup.tenant],
                        clientID: clientID, scopes: sets[index % sets.count])
                    if (found != nil) != hit { throw BenchmarkFailure("tokencache.\(kind) \(hit ? "missed" : "hit")") }
                }
                Report.result(name: "\(prefix)tokencache.\(kind)", backend: backend.rawValue, n: options.n, samples: samples)
            }
        }

        if options.missRefresh {
            // Two days later every cached access token has expired: each call finds the token,
            // redeems the refresh token at the stubbed endpoint, and writes the answer (a token
            // that expires within the 5-minute buffer, so the next call refreshes again).
            let clock = ManualWallClock(now.addingTimeInterval(2 * 86_400))
            let stub = StubEntraTransport(shape: shape, refreshTokenOwners: refreshTokenOwners, clock: clock)
            stub.prepareIDTokens()
            let timing = TimingTransport(options.stubWait.map { WaitingTransport(stub, wait: $0) } ?? stub)
            var configuration = PublicClientApplicationConfiguration(clientID: CacheShape.clientID, authority: authorities[0], cacheStore: store)
            configuration.transport = timing
            configuration.clock = clock
            let application = try PublicClientApplication(configuration: configuration)
            // The accounts as this application lists them, as an app passes the accounts of the
            // instance it calls: an instance keeps the accounts it assembled, and a refresh updates
            // the kept account instead of assembling it from the cache again.
            let listed = Dictionary(uniqueKeysWithValues: try application.allAccounts().map { ($0.identifier, $0) })
            let refreshAccounts = try accounts.map { account in
                guard let own = listed[account.identifier] else { throw BenchmarkFailure("account \(account.identifier) is not listed") }
                return own
            }
            let exactScopes = (0..<shape.scopeSetsPerTenant).map { CacheShape.scopes(ofSet: $0) }
            // In memory and in SQLite a refresh costs microseconds to a millisecond; the file and
            // keyring backends rewrite the whole file or many items (up to seconds at 100k).
            let cheap = backend == .inMemory || backend == .sqlite
            // Discovery documents (one per tenant) are fetched once, outside the measurement, where
            // a refresh is cheap. Where it costs seconds, the four refreshes this takes are skipped:
            // a tenant's first measured call then also fetches its document, from the stub, inside
            // the transport time that is subtracted (microseconds against seconds).
            if cheap {
                for tenant in 0..<shape.tenantsPerAccount {
                    guard let lookup = lookups.first(where: { $0.tenant == tenant }) else { continue }
                    _ = try await application.acquireTokenSilent(with: SilentTokenParameters(
                        scopes: lookup.exactScopes, account: refreshAccounts[lookup.account], authority: authorities[tenant]))
                }
            }
            var sdkShare = Samples(capacity: 1_000)
            let budget: UInt64 = cheap ? 1_500_000_000 : 3_000_000_000
            _ = timing.take()
            let samples = try await measureAdaptive(budget: budget, minimum: 3, maximum: 5_000, warmup: cheap ? 20 : 1, smoke: options.smoke) { index in
                let lookup = lookups[index % lookups.count]
                let start = monotonicNanoseconds()
                let tokenRequestsBefore = stub.tokenRequestCount
                let result = try await application.acquireTokenSilent(with: SilentTokenParameters(
                    scopes: exactScopes[lookup.scopeSet], account: refreshAccounts[lookup.account], authority: authorities[lookup.tenant]))
                let total = monotonicNanoseconds() - start
                let (inTransport, _) = timing.take()
                let requests = stub.tokenRequestCount - tokenRequestsBefore
                if result.tokenSource != .identityProvider || requests != 1 {
                    throw BenchmarkFailure("silent.miss_refresh: expected one refresh request, got \(requests) (\(result.tokenSource))")
                }
                sdkShare.append(total - inTransport)
            }
            // The warm-up calls are in sdkShare too: keep the measured ones only.
            let measured = Array(sdkShare.values.suffix(samples.values.count))
            var share = Samples(capacity: measured.count)
            for value in measured { share.append(value) }
            Report.result(name: "\(prefix)silent.miss_refresh", backend: backend.rawValue, n: options.n, samples: samples)
            Report.result(name: "\(prefix)silent.miss_refresh.sdk_share", backend: backend.rawValue, n: options.n, samples: share)
        }
    }
}
