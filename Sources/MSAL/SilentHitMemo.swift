import Foundation
import MSALCore
internal import Synchronization

/// The answers of silent requests served from the cache, kept for the cache revision they were
/// read at (``TokenCache/revision()``), so a request that repeats while the cache has not changed
/// (the common case: an app asks for the same scopes for the same account again and again) is
/// answered without validating its scopes, resolving its authority, and looking up the token and
/// the account again. Expiry is still decided on every call with the application's clock, and a
/// change of the cache in any process (a new revision) makes every kept answer stale.
///
/// The key is the request as the app gave it (scopes in its order and case, the account's
/// identifier, the authority), so only a request already answered in full by the ordinary path is
/// ever answered from here.
///
/// A table of ``slotCount`` slots, a request's slot chosen by its hash: a lookup is one hash and
/// one comparison. An answer is kept when its request comes the second time (its hash was seen in
/// the slot before) or replaces its own stale answer, so a stream of requests that seldom repeat
/// (a server acting for many users) writes a hash per call instead of keeping every answer. When
/// fewer than one in ``minimumHitShare`` of ``evaluationWindow`` lookups find an answer, the table
/// is bypassed (no hash, no lock) for about the next ``bypassLength`` requests (counted without a
/// locked instruction, so calls at the same moment may count once), then tried again; each
/// further window in a row that finds too few doubles the bypass, up to ``longestBypass`` requests.
/// The first window of the table, and the first after a bypass, also count the answers kept in it
/// (requests that came the second time): nothing could be kept while the table was bypassed, so a
/// stream that repeats would otherwise be judged before it could find anything.
final class SilentHitMemo: Sendable {
    /// What identifies a silent request for this memo.
    struct Key: Hashable, Sendable {
        let scopes: [String]
        let accountIdentifier: String
        let authority: Authority
        /// `scopes.hashValue` and `accountIdentifier.hashValue`, computed once per scope array and
        /// per account by their owners (``PublicClientApplication/requestScopes(for:)``,
        /// ``Account/identifierHashValue``) rather than on every call.
        let scopesHash: Int
        let accountIdentifierHash: Int

        /// A key whose hashes are computed here.
        init(scopes: [String], accountIdentifier: String, authority: Authority) {
            self.init(scopes: scopes, scopesHash: scopes.hashValue, accountIdentifier: accountIdentifier,
                      accountIdentifierHash: accountIdentifier.hashValue, authority: authority)
        }

        /// A key with the hashes of its scopes and identifier given (they must be their `hashValue`s).
        init(scopes: [String], scopesHash: Int, accountIdentifier: String, accountIdentifierHash: Int, authority: Authority) {
            self.scopes = scopes
            self.scopesHash = scopesHash
            self.accountIdentifier = accountIdentifier
            self.accountIdentifierHash = accountIdentifierHash
            self.authority = authority
        }

        /// Equal when the scopes have the same bytes (a scope only canonically equivalent to a kept
        /// one, such as a Kelvin sign for a `K`, is a request of its own, which validation refuses)
        /// and the identifier and the authority are equal (the hashes follow from them).
        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.scopes.hasSameUTF8(as: rhs.scopes) && lhs.accountIdentifier == rhs.accountIdentifier && lhs.authority == rhs.authority
        }

        /// Hashes the scopes', the identifier's and the authority's tenant's hashes (equal keys have
        /// equal hashes: `==` compares every field, the authority's whole URL included).
        func hash(into hasher: inout Hasher) {
            hasher.combine(scopesHash)
            hasher.combine(accountIdentifierHash)
            hasher.combine(authority.tenant?.segment)
        }
    }

    /// A request's key, hash and slot, found once per call and used both to look up and to keep.
    struct Probe: Sendable {
        let key: Key
        let hash: Int
        let slotIndex: Int

        init(_ key: Key) {
            self.key = key
            hash = key.hashValue
            slotIndex = hash & (SilentHitMemo.slotCount - 1)
        }
    }

    /// A kept answer and the access token's expiry, to decide each call anew.
    struct Hit: Sendable {
        let result: AuthenticationResult
        let expiresOn: Date
        let refreshOn: Date?
    }

    /// One kept answer, with the cache revision it was read at.
    private final class Slot: Sendable {
        let key: Key
        let hit: Hit
        let revision: UInt64

        init(key: Key, hit: Hit, revision: UInt64) {
            self.key = key
            self.hit = hit
            self.revision = revision
        }
    }

    private struct Table {
        var slots: [Slot?] = []
        /// The hash of the last request of each slot that was not kept.
        var seen: [Int] = []
        /// Lookups since the last evaluation, and how many of them found an answer.
        var lookups = 0
        var found = 0
        /// Windows in a row that found too few answers.
        var failedWindows = 0
        /// Whether this window is the table's first, or the first after a bypass (it also counts
        /// answers kept).
        var warming = true
    }

    /// Slots of the table (a power of two).
    static let slotCount = 4_096
    /// Lookups between two evaluations of the share of lookups that find an answer.
    static let evaluationWindow = 2_048
    /// Below one lookup in this many finding an answer, the table is bypassed for a while: its
    /// break-even, measured on the benchmarks' caches of 10k and 100k tokens. A lookup that finds
    /// nothing and the offer after it cost about 0.4 µs; a found answer saves 0.6–0.9 µs (what the
    /// ordinary path costs beyond a kept answer), so the table pays for itself from about one
    /// lookup in three.
    static let minimumHitShare = 3
    /// Requests that bypass the table after an evaluation found it of little use.
    static let bypassLength = 8_192
    /// The longest bypass: ``bypassLength`` doubled by each failed window in a row, twice at most,
    /// so a stream that starts to repeat is served again within 32,768 requests.
    static let longestBypass = 8_192 * 4

    /// Empty until the first answer is offered.
    private let table = Mutex(Table())
    /// Requests left that bypass the table.
    private let bypassed = Atomic<Int>(0)

    /// Whether this request should look up and offer answers: `false` while the table is bypassed.
    func isInUse() -> Bool {
        let left = bypassed.load(ordering: .relaxed)
        guard left > 0 else { return true }
        // A load and a store, not an atomic decrement (a locked instruction on every bypassed
        // call): callers at the same moment may count as one request, or a new bypass set
        // meanwhile may be cut short; either only moves when the table is tried again.
        bypassed.store(left - 1, ordering: .relaxed)
        return false
    }

    /// The answer kept for the probe's request and the cache revision it was read at, or `nil`.
    func hit(for probe: Probe) -> (hit: Hit, revision: UInt64)? {
        let index = probe.slotIndex
        return table.withLock { table -> (hit: Hit, revision: UInt64)? in
            table.lookups += 1
            if table.lookups >= Self.evaluationWindow {
                if table.found * Self.minimumHitShare < table.lookups {
                    bypassed.store(min(Self.bypassLength << min(table.failedWindows, 2), Self.longestBypass), ordering: .relaxed)
                    table.failedWindows += 1
                    table.warming = true
                } else {
                    table.failedWindows = 0
                    table.warming = false
                }
                table.lookups = 0
                table.found = 0
            }
            guard index < table.slots.count, let slot = table.slots[index], slot.key == probe.key else { return nil }
            table.found += 1
            return (slot.hit, slot.revision)
        }
    }

    /// Drops every kept answer (their tokens are no longer held here). The table starts over as a
    /// new one: its next window counts the answers it keeps again.
    func removeAll() {
        let dropped = table.withLock { table -> [Slot?] in
            defer {
                table.slots = []
                table.lookups = 0
                table.found = 0
                table.failedWindows = 0
                table.warming = true
            }
            return table.slots
        }
        withExtendedLifetime(dropped) {}
    }

    /// Offers `hit`, read at cache revision `revision`, for the probe's request: kept in its slot
    /// when the request comes the second time or its slot holds its stale answer, unless the slot
    /// holds an answer read at a newer revision.
    func keep(_ hit: Hit, for probe: Probe, revision: UInt64) {
        let index = probe.slotIndex
        // The replaced answer is released after the lock.
        let replaced: Slot? = table.withLock { table -> Slot? in
            if table.slots.isEmpty {
                table.slots = [Slot?](repeating: nil, count: Self.slotCount)
                table.seen = [Int](repeating: 0, count: Self.slotCount)
            }
            let current = table.slots[index]
            if let current, current.revision > revision { return nil }
            guard current?.key == probe.key || table.seen[index] == probe.hash else {
                table.seen[index] = probe.hash
                return nil
            }
            if table.warming && current?.key != probe.key { table.found += 1 }
            table.slots[index] = Slot(key: probe.key, hit: hit, revision: revision)
            return current
        }
        withExtendedLifetime(replaced) {}
    }
}
