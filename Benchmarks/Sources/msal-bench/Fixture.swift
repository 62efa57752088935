import BenchmarkSupport
import Foundation
import MSALCache
import MSALCore

/// Writes the cache of a size as MSAL's JSON (through `JSONFileTokenCacheStore`, the file MSAL
/// Python reads as its own cache) plus `bench.json`: the shape's identifiers and the lookups the
/// Swift cases made, so MSAL Python runs the same lookups on the same contents.
struct Fixture {
    let n: Int
    let directory: String
    let lookups: Int

    func run() throws {
        let shape = CacheShape(n: n)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let cachePath = (directory as NSString).appendingPathComponent("msal_cache.json")
        try? FileManager.default.removeItem(atPath: cachePath)
        let now = Date()
        let contents = shape.contents(now: now, expiresOn: now.addingTimeInterval(86_400))
        let store = try JSONFileTokenCacheStore(path: cachePath)
        var upserts: [CacheEntry] = []
        for kind in CacheEntryKind.allCases {
            for (_, entry) in contents.entries(of: kind) { upserts.append(entry) }
        }
        try store.apply(TokenCacheChange(upserts: upserts))
        let chosen = Lookup.random(lookups, shape: shape, seed: shape.seed ^ 0x100)
        let description: [String: Any] = [
            "n": n,
            "client_id": CacheShape.clientID,
            "environment": CacheShape.environment,
            "tenants": shape.tenants,
            "home_account_ids": (0..<shape.accountCount).map { shape.homeAccountID($0) },
            "account_object_ids": shape.accountObjectIDs,
            "scope_sets": (0..<shape.scopeSetsPerTenant).map { CacheShape.scopes(ofSet: $0) },
            "lookups": chosen.map { [$0.account, $0.tenant, $0.scopeSet, $0.subsetScope] },
        ]
        let data = try JSONSerialization.data(withJSONObject: description, options: [.sortedKeys])
        try data.write(to: URL(fileURLWithPath: (directory as NSString).appendingPathComponent("bench.json")))
    }
}
