import Foundation
@testable import MSALCache
import MSALCore
import Testing

/// A change made with its upserts' keys (as `TokenCache.save` makes one) behaves as one without them.
@Suite("TokenCacheChange: kept upsert keys")
struct TokenCacheChangeTests {
    let entries: [CacheEntry] = [
        .accessToken(Sample.accessToken(target: "User.Read", secret: "AT-1")),
        .refreshToken(Sample.refreshToken(secret: "RT-1")),
        .account(Sample.account()),
    ]

    @Test("The kept keys are the entries' keys, and equality and hashing ignore them")
    func keptKeysAreInvisible() {
        let keyed = TokenCacheChange(keyedUpserts: entries.map { ($0.key, $0) }, removals: [])
        let plain = TokenCacheChange(upserts: entries)
        #expect(keyed == plain)
        #expect(Set([keyed, plain]).count == 1)
        #expect(keyed.keyedUpserts.map(\.key) == entries.map(\.key))
        #expect(keyed.keyedUpserts.map(\.entry) == entries)
        #expect(plain.keyedUpserts.map(\.key) == entries.map(\.key))
    }

    @Test("Changing the upserts drops the kept keys: each entry is stored under its own key")
    func changedUpsertsDropKeptKeys() {
        // Keys that are not the entries' own: only a change that kept them would use them.
        var change = TokenCacheChange(keyedUpserts: entries.map { ("kept-\($0.kind.rawValue)", $0) }, removals: [])
        #expect(change.keyedUpserts.map(\.key).allSatisfy { $0.hasPrefix("kept-") })
        change.upserts[0] = .accessToken(Sample.accessToken(target: "Mail.Read", secret: "AT-2"))
        #expect(change.keyedUpserts.map(\.key) == change.upserts.map(\.key))

        var contents = TokenCacheContents()
        contents.apply(change)
        #expect(Set(contents.accessTokens.keys) == [change.upserts[0].key])
    }
}
