import Foundation
public import MSALCore
internal import Synchronization

/// The in-memory index over a ``TokenCacheStore``: answers a silent lookup in O(1) whatever the size
/// of the cache, and turns one token response into one atomic store change.
///
/// Lookups go through dictionaries keyed by lowercased (home account ID, environment, realm,
/// client ID); the scope match (requested ⊆ cached, case-insensitive) runs only among that key's few
/// access tokens. Before each call the cache compares the store's ``TokenCacheStore/changeStamp()``
/// with the stamp it loaded and reloads everything when another process (or another `TokenCache` on
/// the same store) changed it.
///
/// All identifiers (home account ID, environment, realm, client ID) and scopes compare
/// case-insensitively, as MSAL for iOS/macOS does. The cache does not look at expiry: the caller
/// decides with its clock whether a returned access token is still good.
///
/// Thread-safe: one lock serializes calls; the store is called under it.
public final class TokenCache: Sendable {
    private let store: any TokenCacheStore
    /// ``store`` when it is an ``InMemoryTokenCacheStore``: the index and the store then keep one
    /// copy of the entries (see ``commit(_:_:)``).
    private let inMemoryStore: InMemoryTokenCacheStore?
    private let logger: Logger
    private let state: Mutex<State>
    /// This instance's number, unique in the process: the ``AccountTokenPartitions/cache`` of the
    /// partitions it hands out.
    private let number = TokenCache.numbers.add(1, ordering: .relaxed).newValue
    private static let numbers = Atomic<UInt64>(0)

    private struct State {
        /// `nil` until loaded, and after a change whose effect on the store is not known exactly.
        var index: CacheIndex?
        var stamp: UInt64 = 0
        /// Values derived from ``index`` (`derivedValue(for:_:)`), dropped whenever it changes.
        var derived: [DerivedValueKey: any AnyObject & Sendable] = [:]
        /// Counts the changes of ``index``, so a derived value built without the lock is kept only
        /// when nothing changed meanwhile.
        var revision: UInt64 = 0

        /// The partitions handed out at ``revision`` (``TokenCache/tokenPartitions(homeAccountID:environment:checkingStore:)``),
        /// released when the index changes. Held strongly (a weak reference would make every
        /// retain of them, on every hit, go through a side table); those no account holds any
        /// more are dropped when there are many.
        var handedOut: [AccountTokenPartitions] = []

        /// Values derived from the entries of one (home account, environment) (an assembled
        /// account), by home and key: unlike ``derived``, kept across changes that do not touch
        /// the home's entries. A value is put here only at the revision it describes, and dropped
        /// (not only marked stale, so that nothing of a removed account stays in memory) by the
        /// first change that touches its home, or by any change not known exactly: what is here
        /// describes the current state.
        var homeDerived: [HomeEnvironment: [DerivedValueKey: any AnyObject & Sendable]] = [:]

        /// Records that ``index`` changed in ways not known exactly (loaded, or dropped): derived
        /// values no longer hold, those of every home included.
        mutating func indexChanged() {
            revision &+= 1
            if !derived.isEmpty { derived.removeAll() }
            if !homeDerived.isEmpty { homeDerived.removeAll() }
            releaseHandedOutPartitions()
        }

        /// Records that a change touching only the entries of `homes` was applied to ``index``:
        /// derived values no longer hold, except those of other homes in ``homeDerived``.
        mutating func indexChanged(touching homes: [HomeEnvironment]) {
            revision &+= 1
            if !derived.isEmpty { derived.removeAll() }
            if !homeDerived.isEmpty {
                for home in homes { homeDerived[home] = nil }
            }
            releaseHandedOutPartitions()
        }

        /// Empties the partitions handed out, which the next change makes stale anyway: accounts
        /// an app still holds then keep no token of the cache (a removed account's included), and
        /// the index's own partitions are no longer shared when the change is applied to them.
        mutating func releaseHandedOutPartitions() {
            guard !handedOut.isEmpty else { return }
            for handed in handedOut { handed.release() }
            handedOut.removeAll()
        }

        /// Keeps `partitions` among those handed out; past ``handedOutLimit`` first drops the ones
        /// only this list still holds (no account does: nothing to release).
        mutating func handOut(_ partitions: AccountTokenPartitions) {
            if handedOut.count >= TokenCache.handedOutLimit {
                var kept = 0
                for index in handedOut.indices where !isKnownUniquelyReferenced(&handedOut[index]) {
                    handedOut.swapAt(kept, index)
                    kept += 1
                }
                handedOut.removeLast(handedOut.count - kept)
            }
            handedOut.append(partitions)
        }
    }

    /// The most derived values kept; past it they are all dropped and built again as needed.
    static let derivedValueLimit = 4_096
    /// Handed-out partitions past which those no account holds are dropped from the list.
    static let handedOutLimit = 8_192

    /// Creates a cache over `store`. Nothing is read until the first call.
    /// - Parameters:
    ///   - store: where entries live.
    ///   - logger: receives debug lines about reloads (counts only; never a secret or an identifier).
    public init(store: any TokenCacheStore, logger: Logger = .none) {
        self.store = store
        self.inMemoryStore = store as? InMemoryTokenCacheStore
        self.logger = logger
        self.state = Mutex(State())
    }

    // MARK: Lookups

    /// Finds a cached access token for an account, tenant and client whose scopes include every
    /// requested scope (case-insensitive; an empty request matches any token of that key).
    ///
    /// When several match, the one that expires last is returned. Expiry is not checked.
    /// - Returns: the entry, or `nil` when none matches.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func accessToken(
        homeAccountID: String, environment: String, realm: String, clientID: String, scopes: ScopeSet
    ) throws(MSALError) -> AccessTokenEntry? {
        try accessTokenAndRevision(homeAccountID: homeAccountID, environment: environment, realm: realm, clientID: clientID, scopes: scopes)?.entry
    }

    /// ``accessToken(homeAccountID:environment:realm:clientID:scopes:)``, with the ``revision()`` of
    /// the state it was found in (what else was read at that revision describes the same state).
    /// - Returns: the entry and the revision, or `nil` when no token matches.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func accessTokenAndRevision(
        homeAccountID: String, environment: String, realm: String, clientID: String, scopes: ScopeSet
    ) throws(MSALError) -> (entry: AccessTokenEntry, revision: UInt64)? {
        try withState { state in
            let id = CredentialID(homeAccountID: homeAccountID, environment: environment, realm: realm, clientID: clientID)
            return state.index!.bestAccessToken(in: id, including: scopes).map { ($0, state.revision) }
        }
    }

    /// ``accessTokenAndRevision(homeAccountID:environment:realm:clientID:scopes:)`` for scopes a
    /// caller asks for again and again: the numbers the index gives `scopes` are kept in it, so a
    /// repeated lookup does not number them again.
    /// - Returns: the entry and the revision, or `nil` when no token matches.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    /// - Parameter checkingStore: `false` skips the store's change stamp (the caller just checked it,
    ///   ``revisionWithoutWaiting()``).
    package func accessTokenAndRevision(
        homeAccountID: String, environment: String, realm: String, clientID: String, scopes: RequestScopes,
        checkingStore: Bool = true
    ) throws(MSALError) -> (entry: AccessTokenEntry, revision: UInt64)? {
        try withState(checkingStore: checkingStore) { state in
            let id = CredentialID(homeAccountID: homeAccountID, environment: environment, realm: realm, clientID: clientID)
            return state.index!.bestAccessToken(in: id, including: scopes).map { ($0, state.revision) }
        }
    }

    /// The access token partitions of a home account in an environment, as the index holds them
    /// now, with the ``revision()`` of that state: what an account assembled from this state keeps,
    /// so that its lookups go straight to its tokens (``accessTokenAndRevision(in:realm:clientID:scopes:)``).
    /// - Parameter checkingStore: `false` skips the store's change stamp when an index is loaded
    ///   (the caller just checked it); the partitions are then those of the state the index has.
    /// - Returns: the partitions (none when the account has no access token). They share the index's
    ///   tokens until the cache's next change, which releases them before it is applied (so the
    ///   index never copies a partition because an account holds it).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    package func tokenPartitions(homeAccountID: String, environment: String, checkingStore: Bool = true) throws(MSALError) -> AccountTokenPartitions {
        /// Carries the new object out of the lock (it is not `Sendable`; nothing else holds it yet).
        struct HandedOut: @unchecked Sendable { let partitions: AccountTokenPartitions }
        return try withState(checkingStore: checkingStore) { state in
            let home = HomeEnvironment(homeAccountID: homeAccountID, environment: environment)
            var partitions: [AccountTokenPartitions.Partition] = []
            for id in state.index!.byHomeEnvironment[home]?.partitions ?? [] {
                guard let tokens = state.index!.accessTokens[id] else { continue }
                partitions.append(AccountTokenPartitions.Partition(realm: id.realm, clientID: id.clientID, tokens: tokens))
            }
            let handedOut = AccountTokenPartitions.make(cache: number, revision: state.revision, partitions: partitions)
            state.handOut(handedOut)
            return HandedOut(partitions: handedOut)
        }.partitions
    }

    /// ``accessTokenAndRevision(homeAccountID:environment:realm:clientID:scopes:)-(_,_,_,_,RequestScopes)``
    /// for the account and environment whose `partitions` are given: read from them, without
    /// finding the partition in the index, when this cache is still at the state they were taken
    /// from (after checking the store).
    /// - Returns: the token and revision, ``PartitionLookup/notFound``, or ``PartitionLookup/stale``
    ///   when the cache changed since, or `partitions` come from another cache (then look it up).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    /// - Parameter checkingStore: `false` skips the store's change stamp (the caller just checked it,
    ///   ``revisionWithoutWaiting()``).
    package func accessTokenAndRevision(
        in partitions: AccountTokenPartitions, realm: String, clientID: String, scopes: RequestScopes,
        checkingStore: Bool = true
    ) throws(MSALError) -> PartitionLookup {
        guard partitions.cache == number else { return .stale }
        return try withState(checkingStore: checkingStore) { state in
            // At the same revision the partitions were not released (that happens at a change).
            guard state.revision == partitions.revision, !partitions.isReleased else { return .stale }
            // Read by name, not through a copy of the scope table (which would retain each of its tables).
            guard let wanted = scopes.numbers(in: state.index!.scopeTable.numberingName) ?? state.index!.scopeTable.numberedAndKept(scopes)
            else { return .notFound }  // a scope no token holds
            let revision = state.revision
            return partitions.withLockedPartitions { kept -> PartitionLookup in
                // The partitions' realm and client ID are lowercase: compared without lowercasing
                // the request's, in place (a partition copied out would be retained).
                for position in kept.indices where kept[position].realm.isLowercased(of: realm) {
                    guard kept[position].clientID.isLowercased(of: clientID) else { continue }
                    guard let entry = kept[position].tokens.best(including: wanted) else { return .notFound }
                    return .found(entry, revision: revision)
                }
                return .notFound
            }
        }
    }

    /// Finds the refresh token of an account for a client ID (also a family refresh token issued to
    /// that client). When there are several (MSAL Python keeps one per target), the newest by
    /// `last_modification_time` is returned, as MSAL Python tries them.
    /// - Returns: the entry, or `nil`.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func refreshToken(homeAccountID: String, environment: String, clientID: String) throws(MSALError) -> RefreshTokenEntry? {
        try refreshTokens(homeAccountID: homeAccountID, environment: environment, clientID: clientID).first
    }

    /// All refresh tokens of an account for a client ID, newest first (by `last_modification_time`,
    /// then by key).
    /// - Returns: the entries; empty when there is none.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func refreshTokens(homeAccountID: String, environment: String, clientID: String) throws(MSALError) -> [RefreshTokenEntry] {
        try withIndex { index in
            let id = ClientID(homeAccountID: homeAccountID, environment: environment, clientOrFamilyID: clientID)
            return index.newestFirst(index.refreshTokensByClient[id] ?? [])
        }
    }

    /// The refresh tokens to try for an account and client, in order, read in one step (one store
    /// check): the newest family refresh token (FOCI, family `familyID`) first when the client is in
    /// that family or its membership is unknown (no app metadata in this environment), then the
    /// client's own newest one, each once. Source: MSAL for iOS/macOS `MSIDDefaultTokenCacheAccessor`
    /// family lookup.
    /// - Returns: zero, one or two entries.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func refreshTokenCandidates(
        homeAccountID: String, environment: String, clientID: String, familyID: String = "1"
    ) throws(MSALError) -> [RefreshTokenEntry] {
        try withIndex { index in
            let metadata = index.appMetadataEntry(clientID: clientID, environment: environment)
            var candidates: [(key: String, entry: RefreshTokenEntry)] = []
            if metadata == nil || metadata?.familyID == familyID, let family = index.newestFirstKeyed(
                index.refreshTokensByFamily[ClientID(homeAccountID: homeAccountID, environment: environment, clientOrFamilyID: familyID)] ?? []).first {
                candidates.append(family)
            }
            if let own = index.newestFirstKeyed(
                index.refreshTokensByClient[ClientID(homeAccountID: homeAccountID, environment: environment, clientOrFamilyID: clientID)] ?? []).first,
               !candidates.contains(where: { $0.key == own.key }) {
                candidates.append(own)
            }
            return candidates.map(\.entry)
        }
    }

    /// Finds a family refresh token (FOCI) of an account: one whose `family_id` is `familyID`,
    /// whatever client it was issued to. The newest first, as ``refreshToken(homeAccountID:environment:clientID:)``.
    /// - Returns: the entry, or `nil`.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func familyRefreshToken(homeAccountID: String, environment: String, familyID: String) throws(MSALError) -> RefreshTokenEntry? {
        try withIndex { index in
            let id = ClientID(homeAccountID: homeAccountID, environment: environment, clientOrFamilyID: familyID)
            return index.newestFirst(index.refreshTokensByFamily[id] ?? []).first
        }
    }

    /// Finds the ID token of an account in a tenant for a client ID.
    /// - Returns: the entry, or `nil`.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func idToken(homeAccountID: String, environment: String, realm: String, clientID: String) throws(MSALError) -> IDTokenEntry? {
        try withIndex { index in
            index.idToken(in: CredentialID(homeAccountID: homeAccountID, environment: environment, realm: realm, clientID: clientID))
        }
    }

    /// Every account entry (one per account, environment and tenant), sorted by home account ID,
    /// environment and realm (lowercased).
    /// - Returns: the entries.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func accounts() throws(MSALError) -> [AccountEntry] {
        try withIndex { index in
            index.contents.accounts.values.sorted { $0.sortKey < $1.sortKey }
        }
    }

    /// The account entries (tenant profiles) of one home account, in one environment or in all
    /// (`environment == nil`), sorted by environment and realm.
    /// - Returns: the entries; empty when the account is not cached.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func accountEntries(homeAccountID: String, environment: String?) throws(MSALError) -> [AccountEntry] {
        try withIndex { index in index.accountEntries(homeAccountID: homeAccountID, environment: environment) }
    }

    /// The tenant profiles of one home account in one environment for a client ID: each account
    /// entry (one per realm) with the ID token issued to `clientID` in that realm, if any, read in
    /// one step (one store check). The same as ``accountEntries(homeAccountID:environment:)`` followed
    /// by ``idToken(homeAccountID:environment:realm:clientID:)`` per entry.
    /// - Returns: the profiles, sorted by environment and realm (lowercased); empty when the account
    ///   is not cached.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func tenantProfiles(
        homeAccountID: String, environment: String, clientID: String
    ) throws(MSALError) -> [(account: AccountEntry, idToken: IDTokenEntry?)] {
        try withIndex { index in
            let home = homeAccountID.lowercasedIfNeeded(), client = clientID.lowercasedIfNeeded()
            return index.sortedAccountEntries(homeAccountID: home, environment: environment).map { keyed in
                // The identifiers are lowercase already: the ID token's key needs no second pass over them.
                let id = CredentialID(lowercasedHomeAccountID: home, environment: keyed.environment, realm: keyed.realm, clientID: client)
                return (keyed.entry, index.idToken(in: id))
            }
        }
    }

    /// The app metadata of a client ID in an environment (tells whether the app is in a token family).
    /// - Returns: the entry, or `nil`.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func appMetadata(clientID: String, environment: String) throws(MSALError) -> AppMetadataEntry? {
        try withIndex { index in index.appMetadataEntry(clientID: clientID, environment: environment) }
    }

    /// A value computed from the cache's entries (such as an account assembled from its tenant
    /// profiles), kept until the cache changes: the first call for `key` runs `build`, later calls
    /// return its result as long as no change was loaded or saved in between (in any process: the
    /// store's change stamp is checked first, as for every lookup). `build` may call this cache.
    ///
    /// - Parameters:
    ///   - key: names the value; callers choose keys that cannot collide (e.g. a prefix per kind).
    ///   - build: computes the value from this cache's lookups.
    /// - Returns: the kept or the new value.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read; what `build`
    ///   throws (nothing is kept then).
    public func derivedValue<Value: Sendable>(for key: String, _ build: () throws(MSALError) -> Value) throws(MSALError) -> Value {
        try derivedValue(for: DerivedValueKey(kind: key), build)
    }

    /// The same as the string-keyed `derivedValue(for:_:)`, with a structured key, which costs no string building
    /// per call (a value derived per account, looked up on every cache hit).
    /// - Parameters:
    ///   - key: names the value; values of different types must not share a key.
    ///   - checkingStore: `false` skips asking the store whether it changed (when the caller has
    ///     just made a lookup that asked): the value is then that of the state the cache last saw.
    ///   - build: computes the value from this cache's lookups.
    /// - Returns: the kept or the new value.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read; what `build`
    ///   throws (nothing is kept then).
    ///
    /// Inlined into the caller, so the box's type is known where it is cast (generic code here
    /// would look the box's type up in the runtime's metadata tables on every call).
    @inlinable
    public func derivedValue<Value: Sendable>(
        for key: DerivedValueKey, checkingStore: Bool = true, _ build: () throws(MSALError) -> Value
    ) throws(MSALError) -> Value {
        let (kept, revision) = try derivedObject(for: key, checkingStore: checkingStore)
        if let box = kept as? DerivedValueBox<Value> { return box.value }
        let value = try build()
        keepDerivedObject(DerivedValueBox(value), for: key, revision: revision)
        return value
    }

    /// The object kept for `key` (by ``keepDerivedObject(_:for:revision:)``), if any, and the
    /// current revision, the store checked first unless `checkingStore` is `false`: the untyped core
    /// of ``derivedValue(for:checkingStore:_:)``.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    @usableFromInline
    package func derivedObject(for key: DerivedValueKey, checkingStore: Bool) throws(MSALError) -> (object: (any AnyObject & Sendable)?, revision: UInt64) {
        try withState(checkingStore: checkingStore) { state in (state.derived[key], state.revision) }
    }

    /// A number that changes whenever what this cache holds changes: on every load, on every save
    /// or removal through it, and when another process or another `TokenCache` changed the store
    /// (the store's ``TokenCacheStore/changeStamp()`` is checked first, as for every lookup). Answers
    /// computed from lookups made while it was `r` still hold while it is `r`. It only grows, and is
    /// specific to this instance.
    /// - Returns: the current revision.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func revision() throws(MSALError) -> UInt64 {
        try withState { state in state.revision }
    }

    /// A value derived from the entries of one home account in one environment (its account
    /// entries, ID tokens and access tokens; such as the assembled account), kept by
    /// ``keepHomeDerivedValue(_:for:homeAccountID:environment:revision:)``: returned as long as no
    /// change touched those entries since it was derived, even when the cache changed otherwise
    /// (a refresh of another account). Neither builds it nor asks the store whether it changed.
    /// - Parameters:
    ///   - key: names the value.
    ///   - homeAccountID: the home account it was kept for (compared without case).
    ///   - environment: the environment it was kept for (compared without case).
    /// - Returns: the value, with the current ``revision()`` (at which it still holds); `nil` when
    ///   none of type `Value` is kept for `key`, or the home's entries changed since (a load of
    ///   the store counts as a change of every home).
    @inlinable
    package func keptHomeDerivedValue<Value: Sendable>(
        for key: DerivedValueKey, homeAccountID: String, environment: String, as type: Value.Type = Value.self
    ) -> (value: Value, revision: UInt64)? {
        guard let (object, revision) = keptHomeDerivedObject(for: key, homeAccountID: homeAccountID, environment: environment),
              let box = object as? DerivedValueBox<Value> else { return nil }
        return (box.value, revision)
    }

    /// The object kept for `key` and the home account (by
    /// ``keepHomeDerivedObject(_:for:homeAccountID:environment:revision:)``) with the current
    /// revision, while no change touched the home's entries: the untyped core of
    /// ``keptHomeDerivedValue(for:homeAccountID:environment:as:)``.
    @usableFromInline
    package func keptHomeDerivedObject(
        for key: DerivedValueKey, homeAccountID: String, environment: String
    ) -> (object: any AnyObject & Sendable, revision: UInt64)? {
        let home = HomeEnvironment(homeAccountID: homeAccountID, environment: environment)
        return state.withLock { state in
            guard state.index != nil, let object = state.homeDerived[home]?[key] else { return nil }
            return (object, state.revision)
        }
    }

    /// Keeps `value`, derived from the entries of the home account `homeAccountID` in `environment`
    /// at `revision`, for ``derivedValue(for:checkingStore:_:)`` (until the next change) and for
    /// ``keptHomeDerivedValue(for:homeAccountID:environment:as:)`` (until a change touches those entries), when the cache is
    /// still at `revision`; otherwise does nothing.
    /// - Parameters:
    ///   - value: the value `derivedValue` would build at `revision`.
    ///   - key: names the value; values of different types must not share a key.
    ///   - homeAccountID: the home account whose entries `value` comes from (compared without case).
    ///   - environment: their environment (compared without case).
    ///   - revision: the revision `value` describes.
    @inlinable
    package func keepHomeDerivedValue<Value: Sendable>(
        _ value: Value, for key: DerivedValueKey, homeAccountID: String, environment: String, revision: UInt64
    ) {
        // Boxed before the lock.
        keepHomeDerivedObject(DerivedValueBox(value), for: key, homeAccountID: homeAccountID, environment: environment, revision: revision)
    }

    /// Keeps `box` as ``keepHomeDerivedValue(_:for:homeAccountID:environment:revision:)`` keeps a
    /// value: its untyped core.
    @usableFromInline
    package func keepHomeDerivedObject(
        _ box: any AnyObject & Sendable, for key: DerivedValueKey, homeAccountID: String, environment: String, revision: UInt64
    ) {
        let home = HomeEnvironment(homeAccountID: homeAccountID, environment: environment)
        state.withLock { state in
            guard state.revision == revision, state.index != nil else { return }
            if state.derived.count >= Self.derivedValueLimit { state.derived.removeAll() }
            state.derived[key] = box
            if state.homeDerived.count >= Self.derivedValueLimit, state.homeDerived[home] == nil { state.homeDerived.removeAll() }
            state.homeDerived[home, default: [:]][key] = box
        }
    }

    /// Keeps `value` for `key` (as ``derivedValue(for:checkingStore:_:)`` would have built it) when
    /// the cache is still at `revision`; otherwise does nothing.
    /// - Parameters:
    ///   - value: the value `derivedValue` would build at `revision`.
    ///   - key: names the value.
    ///   - revision: the revision `value` describes.
    @inlinable
    package func keepDerivedValue<Value: Sendable>(_ value: Value, for key: DerivedValueKey, revision: UInt64) {
        keepDerivedObject(DerivedValueBox(value), for: key, revision: revision)  // boxed before the lock
    }

    /// Keeps `box` as ``keepDerivedValue(_:for:revision:)`` keeps a value: its untyped core.
    @usableFromInline
    package func keepDerivedObject(_ box: any AnyObject & Sendable, for key: DerivedValueKey, revision: UInt64) {
        state.withLock { state in
            guard state.revision == revision, state.index != nil else { return }
            if state.derived.count >= Self.derivedValueLimit { state.derived.removeAll() }
            state.derived[key] = box
        }
    }

    /// The ``revision()`` when a lookup now would wait for nothing: no other task holds the cache's
    /// lock (a write holds it for as long as its store takes), and the index is loaded at the
    /// store's current change stamp (no reload to read). A caller that must not wait on its
    /// executor (a silent request from the main actor) looks up right after, without checking the
    /// store again (`checkingStore: false`); a write that starts in between is waited for.
    /// - Returns: the revision, or `nil` when the lock is held, no index is loaded, the store
    ///   changed since the index was loaded, or its change stamp cannot be read.
    package func revisionWithoutWaiting() -> UInt64? {
        state.withLockIfAvailable { state -> UInt64? in
            guard state.index != nil, let stamp = try? store.changeStamp(), stamp == state.stamp else { return nil }
            return state.revision
        } ?? nil
    }

    /// ``revision()`` as last seen, without asking the store whether it changed since (no file
    /// `stat`, no SQLite call). Read before lookups, it is a revision no later than the state they
    /// see: an answer computed from them and kept under it is found again only if nothing changed.
    /// - Returns: the revision of the last load, save or removal through this cache.
    public func lastSeenRevision() -> UInt64 {
        state.withLock { state in state.revision }
    }

    /// A copy of everything the store holds, as last loaded (reloaded first if the store changed).
    /// - Returns: the contents.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func contents() throws(MSALError) -> TokenCacheContents {
        try withIndex { $0.contents }
    }

    // MARK: Changes

    /// Saves what one token response produced, in one atomic store change.
    ///
    /// - An access token replaces every cached access token for the same (home account ID,
    ///   environment, realm, client ID) whose scopes intersect its scopes (MSAL behaviour: a new
    ///   grant supersedes older tokens for any of its scopes).
    /// - A refresh token replaces the account's other refresh tokens for the same client ID and, for
    ///   a family refresh token, those of the same family (as MSAL for iOS/macOS keeps one).
    /// - An ID token, account or app metadata entry replaces the entry with the same identity, also
    ///   one stored under another MSAL's key. An account entry without `account_source` keeps the
    ///   replaced entry's (a refresh does not say how the account signed in).
    /// - `nil` parameters leave existing entries alone.
    /// - An app metadata entry equal to the one stored under its key is not written again (every
    ///   refresh brings the same one). Tokens and account entries are always written, so a save that
    ///   races another writer's removal (a sign-out in another process) leaves all of them present,
    ///   never a refresh token without its account.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read or written; then
    ///   nothing was saved.
    public func save(
        accessToken: AccessTokenEntry?,
        refreshToken: RefreshTokenEntry?,
        idToken: IDTokenEntry?,
        account: AccountEntry?,
        appMetadata: AppMetadataEntry?
    ) throws(MSALError) {
        try save(accessToken: accessToken, accessTokenScopes: nil, refreshToken: refreshToken, idToken: idToken, account: account, appMetadata: appMetadata)
    }

    /// ``save(accessToken:refreshToken:idToken:account:appMetadata:)`` with the access token's scopes
    /// already parsed (`ScopeSet(spaceDelimited: accessToken.target)`, which a token response's
    /// handler has), so they are not parsed again.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read or written; then
    ///   nothing was saved.
    /// - Returns: what the save did to this cache's state (``SaveOutcome``).
    @discardableResult
    package func save(
        accessToken: AccessTokenEntry?,
        accessTokenScopes: ScopeSet?,
        refreshToken: RefreshTokenEntry?,
        idToken: IDTokenEntry?,
        account: AccountEntry?,
        appMetadata: AppMetadataEntry?
    ) throws(MSALError) -> SaveOutcome {
        try withState { state throws(MSALError) -> SaveOutcome in
            if let inMemoryStore, let accessToken,
               let outcome = replaceInPlace(
                   accessToken: accessToken, scopes: accessTokenScopes ?? accessToken.scopes, refreshToken: refreshToken,
                   idToken: idToken, account: account, appMetadata: appMetadata, in: inMemoryStore, &state) {
                return outcome
            }
            // The change is planned on a copy of the index in a scope of its own, released before
            // the change is applied to the index in place: alive then, it would make the index
            // copy every table the change touches (the whole cache, on every refresh).
            let change: TokenCacheChange
            let before = state.revision
            var accountUnchanged = account == nil
            do {
                guard let index = state.index else { return SaveOutcome(revisions: nil, accountUnchanged: false, replacedInPlace: false) }
                var upserts: [(key: String, entry: CacheEntry)] = []
                var removals = Set<CacheEntryRemoval>()
                if let accessToken {
                    let newKey = accessToken.key
                    for key in index.accessTokenKeys(in: CredentialID(accessToken), intersectingOrEmpty: accessTokenScopes ?? accessToken.scopes, except: accessToken) {
                        removals.insert(CacheEntryRemoval(kind: .accessToken, key: key))
                    }
                    upserts.append((newKey, .accessToken(accessToken)))
                }
                if let refreshToken {
                    var keys = index.refreshTokensByClient[ClientID(
                        homeAccountID: refreshToken.homeAccountID, environment: refreshToken.environment,
                        clientOrFamilyID: refreshToken.clientID)] ?? []
                    if let familyID = refreshToken.familyID {
                        keys.formUnion(index.refreshTokensByFamily[ClientID(
                            homeAccountID: refreshToken.homeAccountID, environment: refreshToken.environment,
                            clientOrFamilyID: familyID)] ?? [])
                    }
                    let newKey = refreshToken.key
                    for key in keys where key != newKey {
                        removals.insert(CacheEntryRemoval(kind: .refreshToken, key: key))
                    }
                    upserts.append((newKey, .refreshToken(refreshToken)))
                }
                if let idToken {
                    let newKey = idToken.key
                    for key in index.idTokens[CredentialID(idToken)] ?? [] where key != newKey {
                        removals.insert(CacheEntryRemoval(kind: .idToken, key: key))
                    }
                    upserts.append((newKey, .idToken(idToken)))
                }
                if var account {
                    let environment = account.environment.lowercasedIfNeeded(), realm = account.realm.lowercasedIfNeeded()
                    let newKey = account.key
                    var replacedSource: String?
                    for key in index.accountsByHome[account.homeAccountID.lowercasedIfNeeded()] ?? [] {
                        guard let old = index.contents.accounts[key],
                              old.environment.lowercasedIfNeeded() == environment, old.realm.lowercasedIfNeeded() == realm else { continue }
                        // The entry under the new key first, else any entry it replaces.
                        if key == newKey || replacedSource == nil, let source = old.accountSource { replacedSource = source }
                        if key != newKey { removals.insert(CacheEntryRemoval(kind: .account, key: key)) }
                    }
                    if account.accountSource == nil { account.accountSource = replacedSource }
                    // Written even when unchanged: a concurrent writer may have removed it.
                    accountUnchanged = !removals.contains { $0.kind == .account }
                        && index.contents.accounts[newKey].map { $0.hasSameUTF8(as: account) } == true
                    upserts.append((newKey, .account(account)))
                }
                if let appMetadata {
                    let id = ClientID(homeAccountID: "", environment: appMetadata.environment, clientOrFamilyID: appMetadata.clientID)
                    let newKey = appMetadata.key
                    for key in index.appMetadata[id] ?? [] where key != newKey {
                        removals.insert(CacheEntryRemoval(kind: .appMetadata, key: key))
                    }
                    // Left out when unchanged: its absence after a race is harmless (membership unknown
                    // means the family refresh token is tried first, as before the first answer).
                    if index.contents.appMetadata[newKey] != appMetadata { upserts.append((newKey, .appMetadata(appMetadata))) }
                }
                change = TokenCacheChange(
                    keyedUpserts: upserts,
                    removals: removals.sorted { ($0.kind.rawValue, $0.key) < ($1.kind.rawValue, $1.key) })
            }
            let applied = try commit(change, &state)
            return SaveOutcome(revisions: applied ? (before, state.revision) : nil, accountUnchanged: accountUnchanged, replacedInPlace: false)
        }
    }

    /// The save of what a refresh usually brings, done without planning a change: new tokens for
    /// entries the index holds with the same identifiers, and an account entry and app metadata
    /// equal to the stored ones. It stores exactly what the planned change would (the same entries
    /// under the same keys, identifiers shared with the entries they replace), touching the three
    /// entries in place: no key is hashed into the index's tables, no identifier into the
    /// store's interner, and no change is built.
    /// - Returns: `nil`, having changed nothing, when the save would do anything else (remove an
    ///   entry, file one under a new key, write a changed account or app metadata), when the
    ///   index is not loaded, or when another cache changed `store` since it was loaded.
    private func replaceInPlace(
        accessToken: AccessTokenEntry, scopes: ScopeSet, refreshToken: RefreshTokenEntry?, idToken: IDTokenEntry?,
        account: AccountEntry?, appMetadata: AppMetadataEntry?, in store: InMemoryTokenCacheStore, _ state: inout State
    ) -> SaveOutcome? {
        let replacement: InPlaceReplacement
        do {
            // A copy released before the index changes (see `save`).
            guard let index = state.index, let found = index.inPlaceReplacement(
                accessToken: accessToken, scopes: scopes, refreshToken: refreshToken, idToken: idToken,
                account: account, appMetadata: appMetadata) else { return nil }
            replacement = found
        }
        let before = state.revision
        state.releaseHandedOutPartitions()
        guard let stamps = store.replaceInPlace(sharingWith: &state.index!, loadedAt: state.stamp, writesOverUnreadable: { unreadable in
            // The keys the planned change would write: the three tokens' and the account's.
            func holds(_ kind: CacheEntryKind, _ key: String?) -> Bool { key.map { unreadable[kind.rawValue]?[$0] != nil } ?? false }
            return holds(.accessToken, accessToken.key) || holds(.refreshToken, replacement.refreshTokenKey)
                || holds(.idToken, replacement.idTokenKey) || holds(.account, replacement.accountKey)
        }, {
            $0.apply(replacement, accessToken: accessToken, refreshToken: refreshToken, idToken: idToken)
        }) else { return nil }
        var homes = [HomeEnvironment(homeAccountID: accessToken.homeAccountID, environment: accessToken.environment)]
        func touch(_ homeAccountID: String, _ environment: String) {
            let home = HomeEnvironment(homeAccountID: homeAccountID, environment: environment)
            if homes.last != home { homes.append(home) }
        }
        if let refreshToken { touch(refreshToken.homeAccountID, refreshToken.environment) }
        if let idToken { touch(idToken.homeAccountID, idToken.environment) }
        state.stamp = stamps.after
        state.indexChanged(touching: homes)
        logger.debug("Token cache replaced \(1 + (refreshToken == nil ? 0 : 1) + (idToken == nil ? 0 : 1)) entries in place.")
        return SaveOutcome(revisions: (before, state.revision), accountUnchanged: true, replacedInPlace: true)
    }

    /// Removes an account for one client ID: every credential (access, refresh and ID tokens) of that
    /// home account in that environment issued to `clientID`, and the account's entries for all
    /// realms in that environment, unless credentials of other client IDs remain for it (then the
    /// account entries stay, as MSAL for iOS/macOS keeps an account other apps still use).
    ///
    /// Removing an account that is not cached does nothing.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read or written; then
    ///   nothing was removed.
    public func removeAccount(homeAccountID: String, environment: String, clientID: String) throws(MSALError) {
        try withState { state throws(MSALError) in
            // Planned on a copy released before the change is applied (see `save`).
            var removals: [CacheEntryRemoval] = []
            do {
                guard let index = state.index else { return }
                let home = index.byHomeEnvironment[HomeEnvironment(homeAccountID: homeAccountID, environment: environment)] ?? HomeEntries()
                let client = clientID.lowercased()
                var accountRemovals: [CacheEntryRemoval] = []
                var otherClientsRemain = false
                for ref in home.others {
                    guard let entry = index.contents.entry(kind: ref.kind, key: ref.key) else { continue }
                    if ref.kind == .account {
                        accountRemovals.append(ref)
                    } else if entry.clientID.lowercased() == client {
                        removals.append(ref)
                    } else {
                        otherClientsRemain = true
                    }
                }
                for id in home.partitions {
                    for token in index.accessTokens[id]?.tokens ?? [] {
                        if token.entry.clientID.lowercased() == client {
                            removals.append(CacheEntryRemoval(kind: .accessToken, key: token.key))
                        } else {
                            otherClientsRemain = true
                        }
                    }
                }
                if !otherClientsRemain { removals += accountRemovals }
                removals.sort { ($0.kind.rawValue, $0.key) < ($1.kind.rawValue, $1.key) }
            }
            try commit(TokenCacheChange(removals: removals), &state)
        }
    }

    /// Removes entries by section and stored key, in one atomic change. Missing entries are ignored.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be written; then nothing
    ///   was removed.
    public func remove(_ removals: [CacheEntryRemoval]) throws(MSALError) {
        try withState { state throws(MSALError) in
            _ = try commit(TokenCacheChange(removals: removals), &state)
        }
    }

    // MARK: Internals

    /// Runs `body` under the lock with an up-to-date state.
    /// - Parameter checkingStore: `false` skips the store's change stamp when an index is loaded
    ///   (the caller just checked it through another call).
    @inline(__always)
    private func withState<T: Sendable>(
        checkingStore: Bool = true, _ body: (inout State) throws(MSALError) -> T
    ) throws(MSALError) -> T {
        try state.withLock { (state: inout State) throws(MSALError) -> T in
            if checkingStore || state.index == nil { try loadIfStale(&state) }
            return try body(&state)
        }
    }

    /// Loads the index from the store when there is none or the store's change stamp moved since
    /// it was loaded. Kept out of ``withState(checkingStore:_:)``, which is inlined into every
    /// lookup: `body` is then called from one place, and what it captures is not copied for two.
    @inline(never)
    private func loadIfStale(_ state: inout State) throws(MSALError) {
        let stamp = try store.changeStamp()
        guard state.index == nil || state.stamp != stamp else { return }
        let contents = try store.readAll()
        state.index = CacheIndex(contents)
        state.stamp = stamp
        state.indexChanged()
        logger.debug("Token cache loaded \(contents.count) entries from its store.")
    }

    /// Runs `body` under the lock with an up-to-date index.
    private func withIndex<T: Sendable>(_ body: (CacheIndex) -> T) throws(MSALError) -> T {
        try withState { state in body(state.index!) }
    }

    /// Applies `change` to the store, then to the index if nobody else changed the store meanwhile.
    /// - Returns: whether the index holds exactly its state before plus `change` (`true` for an
    ///   empty change); `false` when it was dropped, to be loaded again.
    @discardableResult
    private func commit(_ change: TokenCacheChange, _ state: inout State) throws(MSALError) -> Bool {
        guard !change.isEmpty else { return true }
        var homes: [HomeEnvironment] = []
        let stamps: AppliedChangeStamps
        let applied: Bool
        if let inMemoryStore, state.index != nil {
            // One copy of the entries for the store and the index, changed once.
            state.releaseHandedOutPartitions()
            (stamps, applied) = inMemoryStore.apply(change, sharingWith: &state.index!, loadedAt: state.stamp, touching: &homes)
        } else {
            do throws(MSALError) {
                stamps = try store.applyReportingStamps(change)
            } catch {
                state.index = nil
                state.indexChanged()
                throw error
            }
            state.releaseHandedOutPartitions()
            applied = stamps.before == state.stamp && state.index != nil
            if applied { state.index!.apply(change, touching: &homes) }
        }
        if applied {
            state.stamp = stamps.after
            state.indexChanged(touching: homes)
        } else {
            state.index = nil
            state.indexChanged()
        }
        logger.debug("Token cache stored \(change.upserts.count) entries and removed \(change.removals.count).")
        return applied
    }
}

/// What ``TokenCache/save(accessToken:accessTokenScopes:refreshToken:idToken:account:appMetadata:)``
/// did, for a caller that keeps values derived from the cache's state (an account): with
/// ``revisions`` and ``accountUnchanged`` it may update such a value instead of deriving it again.
package struct SaveOutcome: Sendable {
    /// The ``TokenCache/revision()`` the change was planned and applied on, and the one it made:
    /// the state at `after` is exactly the state at `before` plus the change (equal revisions when
    /// nothing changed). `nil` when the cache had no state to apply it to, or another writer
    /// changed the store meanwhile (the state is then loaded again).
    package let revisions: (before: UInt64, after: UInt64)?
    /// Whether no account entry was given, or the one given (with its `account_source` filled from
    /// the entry it replaces) was already stored under its key, byte for byte and without
    /// additional fields, the only entry of its realm: the accounts' entries are then the same as
    /// before the save.
    package let accountUnchanged: Bool
    /// Whether the save only replaced stored tokens in place (what a refresh usually writes): no
    /// entry was removed or filed under a new key, and the account entry and app metadata given
    /// were already stored as they are.
    package let replacedInPlace: Bool
}

/// Names a value kept by `TokenCache.derivedValue(for:_:)`: a kind and up to
/// two identifiers (such as a home account ID and an environment), compared exactly.
public struct DerivedValueKey: Hashable, Sendable {
    /// What the value is (e.g. `account`).
    public let kind: String
    /// The first identifier, or empty.
    public let first: String
    /// The second identifier, or empty.
    public let second: String

    /// Creates a key.
    public init(kind: String, _ first: String = "", _ second: String = "") {
        self.kind = kind
        self.first = first
        self.second = second
    }
}

/// A derived value in a class, so it is told apart by a class cast (cheaper than casting an existential).
@usableFromInline
package final class DerivedValueBox<Value: Sendable>: Sendable {
    @usableFromInline let value: Value

    @usableFromInline init(_ value: Value) { self.value = value }
}

// MARK: - Index

/// (home account ID, environment, realm, client ID), lowercased.
struct CredentialID: Hashable {
    let homeAccountID: String, environment: String, realm: String, clientID: String

    init(homeAccountID: String, environment: String, realm: String, clientID: String) {
        self.homeAccountID = homeAccountID.lowercasedIfNeeded()
        self.environment = environment.lowercasedIfNeeded()
        self.realm = realm.lowercasedIfNeeded()
        self.clientID = clientID.lowercasedIfNeeded()
    }

    /// An ID from identifiers that are lowercase already (not checked).
    init(lowercasedHomeAccountID homeAccountID: String, environment: String, realm: String, clientID: String) {
        self.homeAccountID = homeAccountID
        self.environment = environment
        self.realm = realm
        self.clientID = clientID
    }

    init(_ entry: AccessTokenEntry) {
        self.init(homeAccountID: entry.homeAccountID, environment: entry.environment, realm: entry.realm, clientID: entry.clientID)
    }

    init(_ entry: IDTokenEntry) {
        self.init(homeAccountID: entry.homeAccountID, environment: entry.environment, realm: entry.realm, clientID: entry.clientID)
    }

    /// Hashes all but the environment: an account's tokens are cached under one or a few aliases of
    /// its cloud, so the environment would add bytes to hash on every lookup and tell few IDs
    /// apart. Equality still compares all four.
    func hash(into hasher: inout Hasher) {
        hasher.combine(homeAccountID)
        hasher.combine(realm)
        hasher.combine(clientID)
    }
}

/// Where ``CacheIndex/inPlaceReplacement(accessToken:scopes:refreshToken:idToken:account:appMetadata:)``
/// found the entries a save replaces.
struct InPlaceReplacement {
    /// The access token's partition, and the position of the token it replaces there.
    let partition: CredentialID
    let accessTokenPosition: Int
    /// The stored keys of the refresh token and ID token replaced (`nil` when none is saved).
    let refreshTokenKey: String?
    let idTokenKey: String?
    /// The stored key of the account entry the save gives unchanged (`nil` when it gives none).
    let accountKey: String?
}

extension AccessTokenEntry {
    /// Whether the identifiers that file the entry (home account ID, environment, realm, client
    /// ID, target) have the same bytes (what a replacement in place requires: a canonically
    /// equivalent identifier in other bytes is written as given, by the planned change).
    func hasSameIdentifiers(as other: AccessTokenEntry) -> Bool {
        sameBytes(homeAccountID, other.homeAccountID) && sameBytes(environment, other.environment) && sameBytes(realm, other.realm)
            && sameBytes(clientID, other.clientID) && sameBytes(target, other.target)
    }

    /// This entry with the identifier strings of `stored`, which have the same bytes as its own.
    func sharingIdentifiers(with stored: AccessTokenEntry) -> AccessTokenEntry {
        AccessTokenEntry(
            homeAccountID: stored.homeAccountID, environment: stored.environment, clientID: stored.clientID, realm: stored.realm,
            target: stored.target, secret: secret, tokenType: tokenType, cachedAt: cachedAt, expiresOn: expiresOn,
            extendedExpiresOn: extendedExpiresOn, refreshOn: refreshOn, additionalFields: additionalFields)
    }
}

extension RefreshTokenEntry {
    /// Whether the identifiers that file the entry (home account ID, environment, client ID,
    /// family ID, target) have the same bytes.
    func hasSameIdentifiers(as other: RefreshTokenEntry) -> Bool {
        sameBytes(homeAccountID, other.homeAccountID) && sameBytes(environment, other.environment) && sameBytes(clientID, other.clientID)
            && sameBytes(familyID, other.familyID) && sameBytes(target, other.target)
    }

    /// This entry with the identifier strings of `stored`, which have the same bytes as its own.
    func sharingIdentifiers(with stored: RefreshTokenEntry) -> RefreshTokenEntry {
        var shared = self
        shared.homeAccountID = stored.homeAccountID
        shared.environment = stored.environment
        shared.clientID = stored.clientID
        shared.familyID = stored.familyID
        shared.target = stored.target
        return shared
    }
}

extension IDTokenEntry {
    /// Whether the identifiers that file the entry (home account ID, environment, client ID,
    /// realm) have the same bytes.
    func hasSameIdentifiers(as other: IDTokenEntry) -> Bool {
        sameBytes(homeAccountID, other.homeAccountID) && sameBytes(environment, other.environment) && sameBytes(clientID, other.clientID)
            && sameBytes(realm, other.realm)
    }

    /// This entry with the identifier strings of `stored`, which have the same bytes as its own.
    func sharingIdentifiers(with stored: IDTokenEntry) -> IDTokenEntry {
        var shared = self
        shared.homeAccountID = stored.homeAccountID
        shared.environment = stored.environment
        shared.clientID = stored.clientID
        shared.realm = stored.realm
        return shared
    }
}

/// (home account ID, environment, client or family ID), lowercased.
struct ClientID: Hashable {
    let homeAccountID: String, environment: String, clientOrFamilyID: String

    init(homeAccountID: String, environment: String, clientOrFamilyID: String) {
        self.homeAccountID = homeAccountID.lowercasedIfNeeded()
        self.environment = environment.lowercasedIfNeeded()
        self.clientOrFamilyID = clientOrFamilyID.lowercasedIfNeeded()
    }
}

/// What the index holds for one (home account, environment): the stored keys of its refresh tokens,
/// ID tokens and accounts, and its access token partitions (their tokens are found there).
struct HomeEntries: Sendable {
    var others: Set<CacheEntryRemoval> = []
    var partitions: Set<CredentialID> = []

    var isEmpty: Bool { others.isEmpty && partitions.isEmpty }
}

/// (home account ID, environment), lowercased.
struct HomeEnvironment: Hashable {
    let homeAccountID: String, environment: String

    init(homeAccountID: String, environment: String) {
        self.homeAccountID = homeAccountID.lowercasedIfNeeded()
        self.environment = environment.lowercasedIfNeeded()
    }
}

/// The contents plus dictionaries from lowercased identities to stored keys.
struct CacheIndex: Sendable {
    private(set) var contents = TokenCacheContents()
    /// The access tokens of each (account, environment, realm, client), with their scopes parsed once.
    private(set) var accessTokens: [CredentialID: AccessTokenPartition] = [:]
    /// Every lowercased scope of a cached access token, numbered.
    private(set) var scopeTable = ScopeTable()
    private(set) var idTokens: [CredentialID: Set<String>] = [:]
    private(set) var refreshTokensByClient: [ClientID: Set<String>] = [:]
    private(set) var refreshTokensByFamily: [ClientID: Set<String>] = [:]
    private(set) var accountsByHome: [String: Set<String>] = [:]
    /// Keyed with an empty home account ID.
    private(set) var appMetadata: [ClientID: Set<String>] = [:]
    /// Credentials and accounts of each (home account, environment).
    private(set) var byHomeEnvironment: [HomeEnvironment: HomeEntries] = [:]

    init(_ contents: TokenCacheContents) {
        self.contents = contents
        // Section by section, without an intermediate array of every entry.
        contents.accessTokens.forEachStored { key, entry in addAccessToken(entry, storedKey: key) }
        for (key, entry) in contents.refreshTokens { addToIndex(.refreshToken(entry), storedKey: key) }
        for (key, entry) in contents.idTokens { addToIndex(.idToken(entry), storedKey: key) }
        for (key, entry) in contents.accounts { addToIndex(.account(entry), storedKey: key) }
        for (key, entry) in contents.appMetadata { addToIndex(.appMetadata(entry), storedKey: key) }
        self.contents.unknownSections = [:]
        self.contents.unreadableEntries = [:]
    }

    /// Applies `change`, and adds to `homes` each (home account, environment) whose entries it
    /// changed: those of every entry it removed, replaced or inserted, app metadata aside (it
    /// belongs to no account). A home may be added more than once.
    /// - Parameter storing: what is stored for each upsert (an equal entry; by default the upsert
    ///   itself): its identity and key must be the upsert's.
    mutating func apply(
        _ change: TokenCacheChange, storing: (CacheEntry) -> CacheEntry = { $0 }, touching homes: inout [HomeEnvironment]
    ) {
        for removal in change.removals { remove(kind: removal.kind, key: removal.key, touching: &homes) }
        for (key, upsert) in change.keyedUpserts {
            let entry = storing(upsert)
            if case .appMetadata = entry {} else { Self.add(entry, to: &homes) }
            if replaceInPlace(entry, storedKey: key) { continue }
            remove(kind: entry.kind, key: key, touching: &homes)
            contents.insert(entry, storedKey: key)
            addToIndex(entry, storedKey: key)
        }
    }

    /// Where the entries a save replaces in place are (``TokenCache``'s `replaceInPlace`), when
    /// replacing them is all the save would do:
    /// - the access token's partition holds a token with the identifiers of `accessToken`, byte for
    ///   byte, filed under its own key, and no other token that shares a scope with `scopes` or has
    ///   none (it would be removed);
    /// - the refresh token's client (and family) holds one refresh token, under `refreshToken`'s
    ///   key, with the same identifiers byte for byte; the same for the ID token of its account,
    ///   tenant and client;
    /// - `account`, its `account_source` filled from the stored entry's, is stored under its key
    ///   byte for byte, the only entry of its environment and realm; `appMetadata` is stored under
    ///   its key as it is, the only one of its client and environment.
    /// - Returns: `nil` when the save would do more than replace (or nothing is stored to replace).
    func inPlaceReplacement(
        accessToken: AccessTokenEntry, scopes: ScopeSet, refreshToken: RefreshTokenEntry?, idToken: IDTokenEntry?,
        account: AccountEntry?, appMetadata metadata: AppMetadataEntry?
    ) -> InPlaceReplacement? {
        let partitionID = CredentialID(accessToken)
        guard let partition = accessTokens[partitionID],
              let position = partition.tokens.firstIndex(where: { $0.entry.hasSameIdentifiers(as: accessToken) }),
              partition.tokens[position].storedKey == nil else { return nil }
        let known = scopeTable.knownIDs(of: scopes)
        for index in partition.tokens.indices where index != position {
            let held = partition.tokens[index].scopes
            if held.isEmpty || held.intersectsSorted(known) { return nil }
        }

        var refreshTokenKey: String?
        if let refreshToken {
            guard let keys = refreshTokensByClient[ClientID(
                      homeAccountID: refreshToken.homeAccountID, environment: refreshToken.environment, clientOrFamilyID: refreshToken.clientID)],
                  keys.count == 1, let key = keys.first else { return nil }
            if let familyID = refreshToken.familyID {
                guard let family = refreshTokensByFamily[ClientID(
                          homeAccountID: refreshToken.homeAccountID, environment: refreshToken.environment, clientOrFamilyID: familyID)],
                      family.count == 1, family.first == key else { return nil }
            }
            guard let old = contents.refreshTokens[key], old.hasSameIdentifiers(as: refreshToken), refreshToken.hasKey(key) else { return nil }
            refreshTokenKey = key
        }

        var idTokenKey: String?
        if let idToken {
            guard let keys = idTokens[CredentialID(idToken)], keys.count == 1, let key = keys.first,
                  let old = contents.idTokens[key], old.hasSameIdentifiers(as: idToken), idToken.hasKey(key) else { return nil }
            idTokenKey = key
        }

        var accountKey: String?
        if var account {
            let environment = account.environment.lowercasedIfNeeded(), realm = account.realm.lowercasedIfNeeded()
            var stored: AccountEntry?
            for key in accountsByHome[account.homeAccountID.lowercasedIfNeeded()] ?? [] {
                guard let old = contents.accounts[key],
                      old.environment.lowercasedIfNeeded() == environment, old.realm.lowercasedIfNeeded() == realm else { continue }
                guard stored == nil, account.hasKey(key) else { return nil }
                stored = old
                accountKey = key
            }
            guard let stored else { return nil }
            if account.accountSource == nil { account.accountSource = stored.accountSource }
            guard stored.hasSameUTF8(as: account) else { return nil }
        }

        if let metadata {
            guard let keys = appMetadata[ClientID(homeAccountID: "", environment: metadata.environment, clientOrFamilyID: metadata.clientID)],
                  keys.count == 1, let key = keys.first, metadata.hasKey(key), contents.appMetadata[key] == metadata else { return nil }
        }
        return InPlaceReplacement(
            partition: partitionID, accessTokenPosition: position, refreshTokenKey: refreshTokenKey, idTokenKey: idTokenKey,
            accountKey: accountKey)
    }

    /// Replaces the entries `replacement` found (``inPlaceReplacement(accessToken:scopes:refreshToken:idToken:account:appMetadata:)``,
    /// on this index unchanged since) by the new tokens, each with the identifier strings of the
    /// entry it replaces (equal to its own: as the store's interner would share them).
    /// - Returns: `false`, having changed nothing, when the access token is not filed where it was found.
    mutating func apply(
        _ replacement: InPlaceReplacement, accessToken: AccessTokenEntry, refreshToken: RefreshTokenEntry?, idToken: IDTokenEntry?
    ) -> Bool {
        guard let tokens = accessTokens[replacement.partition]?.tokens, replacement.accessTokenPosition < tokens.count else { return false }
        let new = accessToken.sharingIdentifiers(with: tokens[replacement.accessTokenPosition].entry)
        guard contents.accessTokens.replaceValue(ownKeyOf: new, { _ in new }) != nil else { return false }
        accessTokens[replacement.partition]!.replaceToken(at: replacement.accessTokenPosition, by: new)
        if let refreshToken, let key = replacement.refreshTokenKey, let slot = contents.refreshTokens.index(forKey: key) {
            contents.refreshTokens.values[slot] = refreshToken.sharingIdentifiers(with: contents.refreshTokens.values[slot])
        }
        if let idToken, let key = replacement.idTokenKey, let slot = contents.idTokens.index(forKey: key) {
            contents.idTokens.values[slot] = idToken.sharingIdentifiers(with: contents.idTokens.values[slot])
        }
        return true
    }

    /// Adds the home of `entry` to `homes` unless it is the last one there (a change's entries
    /// mostly belong to one account).
    private static func add(_ entry: CacheEntry, to homes: inout [HomeEnvironment]) {
        let home = HomeEnvironment(homeAccountID: entry.homeAccountID, environment: entry.environment)
        if homes.last != home { homes.append(home) }
    }

    /// Replaces the entry stored under `key` by `entry` when both file under the same index keys
    /// (what a refresh usually writes: a new token for the same account, tenant, client and scopes),
    /// touching only the entry and an access token's expiry. `false` when nothing is stored under
    /// `key` or the index keys differ (even in case only): then the entry must be indexed anew.
    private mutating func replaceInPlace(_ entry: CacheEntry, storedKey key: String) -> Bool {
        switch entry {
        case .accessToken(let new):
            let replaced = contents.accessTokens.replaceValue(ownKeyOf: new) { (old: AccessTokenEntry) -> AccessTokenEntry? in
                let sameAccount = old.homeAccountID == new.homeAccountID && old.environment == new.environment
                let sameToken = old.realm == new.realm && old.clientID == new.clientID && old.target == new.target
                return sameAccount && sameToken ? new : nil
            }
            guard let old = replaced else { return false }
            accessTokens[CredentialID(new)]?.replace(old, by: new, storedKey: key)
        case .refreshToken(let new):
            guard let slot = contents.refreshTokens.index(forKey: key) else { return false }
            let old = contents.refreshTokens.values[slot]
            guard old.homeAccountID == new.homeAccountID, old.environment == new.environment,
                  old.clientID == new.clientID, old.familyID == new.familyID else { return false }
            contents.refreshTokens.values[slot] = new
        case .idToken(let new):
            guard let slot = contents.idTokens.index(forKey: key) else { return false }
            let old = contents.idTokens.values[slot]
            guard old.homeAccountID == new.homeAccountID, old.environment == new.environment, old.realm == new.realm,
                  old.clientID == new.clientID else { return false }
            contents.idTokens.values[slot] = new
        case .account(let new):
            guard let slot = contents.accounts.index(forKey: key) else { return false }
            let old = contents.accounts.values[slot]
            guard old.homeAccountID == new.homeAccountID, old.environment == new.environment else { return false }
            contents.accounts.values[slot] = new
        case .appMetadata(let new):
            guard let slot = contents.appMetadata.index(forKey: key) else { return false }
            let old = contents.appMetadata.values[slot]
            guard old.environment == new.environment, old.clientID == new.clientID else { return false }
            contents.appMetadata.values[slot] = new
        }
        return true
    }

    private mutating func remove(kind: CacheEntryKind, key: String, touching homes: inout [HomeEnvironment]) {
        guard let entry = contents.remove(kind: kind, key: key) else { return }
        if case .appMetadata = entry {} else { Self.add(entry, to: &homes) }
        switch entry {
        case .accessToken(let value):
            let id = CredentialID(value)
            accessTokens[id]?.remove(value, storedKey: key)
            if accessTokens[id]?.isEmpty == true {
                accessTokens[id] = nil
                let home = HomeEnvironment(homeAccountID: value.homeAccountID, environment: value.environment)
                byHomeEnvironment[home]?.partitions.remove(id)
                if byHomeEnvironment[home]?.isEmpty == true { byHomeEnvironment[home] = nil }
            }
            return
        case .idToken(let value): idTokens.removeMember(key, at: CredentialID(value))
        case .refreshToken(let value):
            refreshTokensByClient.removeMember(key, at: ClientID(
                homeAccountID: value.homeAccountID, environment: value.environment, clientOrFamilyID: value.clientID))
            if let familyID = value.familyID {
                refreshTokensByFamily.removeMember(key, at: ClientID(
                    homeAccountID: value.homeAccountID, environment: value.environment, clientOrFamilyID: familyID))
            }
        case .account(let value): accountsByHome.removeMember(key, at: value.homeAccountID.lowercasedIfNeeded())
        case .appMetadata(let value):
            appMetadata.removeMember(key, at: ClientID(homeAccountID: "", environment: value.environment, clientOrFamilyID: value.clientID))
        }
        if case .appMetadata = entry { return }
        let home = HomeEnvironment(homeAccountID: entry.homeAccountID, environment: entry.environment)
        guard byHomeEnvironment[home]?.others.remove(CacheEntryRemoval(kind: kind, key: key)) != nil else { return }
        if byHomeEnvironment[home]?.isEmpty == true { byHomeEnvironment[home] = nil }
    }

    private mutating func addToIndex(_ entry: CacheEntry, storedKey key: String) {
        switch entry {
        case .accessToken(let value):
            addAccessToken(value, storedKey: value.hasKey(key, exactly: true) ? nil : key)
            return
        case .idToken(let value): idTokens[CredentialID(value), default: []].insert(key)
        case .refreshToken(let value):
            refreshTokensByClient[ClientID(
                homeAccountID: value.homeAccountID, environment: value.environment, clientOrFamilyID: value.clientID), default: []].insert(key)
            if let familyID = value.familyID {
                refreshTokensByFamily[ClientID(
                    homeAccountID: value.homeAccountID, environment: value.environment, clientOrFamilyID: familyID), default: []].insert(key)
            }
        case .account(let value): accountsByHome[value.homeAccountID.lowercasedIfNeeded(), default: []].insert(key)
        case .appMetadata(let value):
            appMetadata[ClientID(homeAccountID: "", environment: value.environment, clientOrFamilyID: value.clientID), default: []].insert(key)
            return
        }
        byHomeEnvironment[HomeEnvironment(homeAccountID: entry.homeAccountID, environment: entry.environment), default: HomeEntries()]
            .others.insert(CacheEntryRemoval(kind: entry.kind, key: key))
    }

    /// Indexes an access token; `storedKey` is `nil` when it is the entry's own ``AccessTokenEntry/key``.
    private mutating func addAccessToken(_ entry: AccessTokenEntry, storedKey: String?) {
        let scopes = scopeTable.intern(target: entry.target)
        let id = CredentialID(entry)
        if accessTokens[id] == nil {
            byHomeEnvironment[HomeEnvironment(homeAccountID: entry.homeAccountID, environment: entry.environment), default: HomeEntries()]
                .partitions.insert(id)
        }
        accessTokens[id, default: AccessTokenPartition()].insert(
            AccessTokenPartition.Token(storedKey: storedKey, scopes: scopes, expiresOn: entry.expiresOn, entry: entry))
    }

    /// The access token of `id` whose scopes include every scope of `scopes` and that expires last
    /// (on a tie, the one with the smallest ``AccessTokenEntry/key``); `nil` when none does.
    func bestAccessToken(in id: CredentialID, including scopes: ScopeSet) -> AccessTokenEntry? {
        guard let partition = accessTokens[id] else { return nil }
        return scopeTable.withIDs(of: scopes) { wanted in
            guard let wanted else { return nil }  // a scope no token holds
            return Self.best(in: partition, including: wanted)
        }
    }

    /// ``bestAccessToken(in:including:)-(_,ScopeSet)`` with the numbers kept in `scopes`.
    func bestAccessToken(in id: CredentialID, including scopes: RequestScopes) -> AccessTokenEntry? {
        guard let partition = accessTokens[id] else { return nil }
        return scopeTable.withIDs(of: scopes) { wanted in
            guard let wanted else { return nil }  // a scope no token holds
            return Self.best(in: partition, including: wanted)
        }
    }

    /// The token of `partition` whose scopes include `wanted` (sorted numbers) and that expires last.
    fileprivate static func best(in partition: AccessTokenPartition, including wanted: UnsafeBufferPointer<Int32>) -> AccessTokenEntry? {
        var best: Int?
        partition.forEachPosition(including: wanted) { position, tokens in
            guard let current = best else {
                best = position
                return
            }
            // On a tie (rare), the entries' own keys decide, as the lookup always has.
            // Read in place: copying a token out would retain each of its references.
            let expiresOn = tokens[position].expiresOn, heldExpiresOn = tokens[current].expiresOn
            if expiresOn > heldExpiresOn || (expiresOn == heldExpiresOn && tokens[position].entry.key < tokens[current].entry.key) {
                best = position
            }
        }
        return best.map { partition.tokens[$0].entry }
    }

    /// The app metadata of a client ID in an environment; when several are stored (under other
    /// MSALs' keys), the one with the smallest stored key.
    func appMetadataEntry(clientID: String, environment: String) -> AppMetadataEntry? {
        let id = ClientID(homeAccountID: "", environment: environment, clientOrFamilyID: clientID)
        guard let keys = appMetadata[id] else { return nil }
        if keys.count == 1, let key = keys.first { return contents.appMetadata[key] }
        return keys.sorted().lazy.compactMap { contents.appMetadata[$0] }.first
    }

    /// The ID token of `id`; when several are stored (under other MSALs' keys), the one with the
    /// smallest stored key.
    func idToken(in id: CredentialID) -> IDTokenEntry? {
        guard let keys = idTokens[id] else { return nil }
        if keys.count == 1, let key = keys.first { return contents.idTokens[key] }
        return keys.sorted().lazy.compactMap { contents.idTokens[$0] }.first
    }

    /// The account entries of a home account, in one environment or all (`nil`), sorted by
    /// environment and realm (lowercased).
    func accountEntries(homeAccountID: String, environment: String?) -> [AccountEntry] {
        sortedAccountEntries(homeAccountID: homeAccountID.lowercasedIfNeeded(), environment: environment).map(\.entry)
    }

    /// ``accountEntries(homeAccountID:environment:)`` for a lowercase home account ID, each entry
    /// with its environment and realm lowercased (what it is sorted by).
    func sortedAccountEntries(homeAccountID: String, environment: String?) -> [(environment: String, realm: String, entry: AccountEntry)] {
        let environment: String? = environment?.lowercasedIfNeeded()
        guard let keys = accountsByHome[homeAccountID] else { return [] }
        var keyed: [(environment: String, realm: String, entry: AccountEntry)] = []
        keyed.reserveCapacity(keys.count)
        for key in keys {
            guard let entry = contents.accounts[key] else { continue }
            let entryEnvironment = entry.environment.lowercasedIfNeeded()
            if let environment, entryEnvironment != environment { continue }
            keyed.append((entryEnvironment, entry.realm.lowercasedIfNeeded(), entry))
        }
        // One account's entries all share the home account ID: environment and realm order them.
        keyed.sort { ($0.environment, $0.realm) < ($1.environment, $1.realm) }
        return keyed
    }

    /// The stored keys of the access tokens of `id` that share a scope with `scopes` or have no scope.
    /// The stored key of `entry` (the one a save replaces) is left out, without building it.
    func accessTokenKeys(in id: CredentialID, intersectingOrEmpty scopes: ScopeSet, except entry: AccessTokenEntry) -> [String] {
        guard let partition = accessTokens[id] else { return [] }
        let known = scopeTable.knownIDs(of: scopes)
        return partition.keys { token in
            guard token.scopes.isEmpty || token.scopes.intersectsSorted(known) else { return false }
            return token.storedKey.map { !entry.hasKey($0) } ?? !token.entry.hasSameKey(as: entry)
        }
    }

    /// Refresh tokens stored under `keys`, newest `last_modification_time` first, then by key.
    func newestFirst(_ keys: Set<String>) -> [RefreshTokenEntry] {
        newestFirstKeyed(keys).map(\.entry)
    }

    /// ``newestFirst(_:)`` with each entry's stored key.
    func newestFirstKeyed(_ keys: Set<String>) -> [(key: String, entry: RefreshTokenEntry)] {
        let found: [(key: String, entry: RefreshTokenEntry)] = keys.compactMap { key in contents.refreshTokens[key].map { (key, $0) } }
        guard found.count > 1 else { return found }
        return found.sorted { lhs, rhs in
            let l = lhs.entry.lastModificationTime ?? .distantPast, r = rhs.entry.lastModificationTime ?? .distantPast
            return l != r ? l > r : lhs.key < rhs.key
        }
    }
}

extension Dictionary {
    /// Removes `member` from the set at `key`, dropping the set when it becomes empty.
    fileprivate mutating func removeMember<Member>(_ member: Member, at key: Key) where Value == Set<Member> {
        // In place: copying the set out and back would copy its storage (it is still referenced).
        guard self[key]?.remove(member) != nil else { return }
        if self[key]?.isEmpty == true { self[key] = nil }
    }
}

extension AccountEntry {
    fileprivate var sortKey: (String, String, String) {
        (homeAccountID.lowercasedIfNeeded(), environment.lowercasedIfNeeded(), realm.lowercasedIfNeeded())
    }
}

// MARK: - Access token partitions

/// Numbers the lowercased scopes of the cached access tokens, so that a lookup compares small
/// integers instead of parsing each token's `target`. Numbers are never reused while the index lives.
struct ScopeTable: Sendable {
    /// Names this table's numbering. A copy of the table that numbers a new scope first takes a
    /// new one (the copies' numberings may differ from then on), so numbers kept under one name
    /// (``RequestScopes``) hold for every table that has it.
    private var numbering = Numbering()
    private var numbers: [String: Int32] = [:]
    /// The name of this table's numbering (see ``numbering``).
    var numberingName: UInt64 { numbering.name }
    /// Each distinct sorted array of numbers, kept once: the tokens of many accounts share a few
    /// scope sets, and a shared array is one allocation that stays in the processor's cache.
    private var sets: Set<[Int32]> = []
    /// The numbers of each `target` seen, as written: the tokens of many accounts share a few
    /// targets, and hashing one is cheaper than splitting, lowercasing and sorting it again.
    private var targets: [String: [Int32]] = [:]

    /// The sorted numbers of the scopes of an access token's space-delimited `target`, numbering the
    /// scopes not seen before.
    mutating func intern(target: String) -> [Int32] {
        if let known = targets[target] { return known }
        let ids = intern(ScopeSet(spaceDelimited: target))
        targets[target] = ids
        return ids
    }

    /// The sorted numbers of `scopes`, numbering the scopes not seen before.
    mutating func intern(_ scopes: ScopeSet) -> [Int32] {
        var ids: [Int32] = []
        ids.reserveCapacity(scopes.count)
        for scope in scopes.normalized {
            if let id = numbers[scope] {
                ids.append(id)
            } else {
                if !isKnownUniquelyReferenced(&numbering) { numbering = Numbering() }
                let id = Int32(numbers.count)
                numbers[scope] = id
                ids.append(id)
            }
        }
        ids.sort()
        if let shared = sets.firstIndex(of: ids) { return sets[shared] }
        sets.insert(ids)
        return ids
    }

    /// Calls `body` with the sorted numbers of `scopes` (in a buffer that lives for the call, not on
    /// the heap), or with `nil` when one of them is in no cached token.
    func withIDs<T>(of scopes: ScopeSet, _ body: (UnsafeBufferPointer<Int32>?) -> T) -> T {
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: scopes.count) { ids in
            var count = 0
            var unknown = false
            scopes.forEachNormalized { scope in
                guard !unknown, let id = numbers[scope] else {
                    unknown = true
                    return
                }
                ids[count] = id
                count += 1
            }
            guard !unknown else { return body(nil) }
            var filled = UnsafeMutableBufferPointer(rebasing: ids[..<count])
            filled.sort()
            return body(UnsafeBufferPointer(filled))
        }
    }

    /// ``withIDs(of:_:)-(ScopeSet,_)`` for `scopes.set`, with the numbers kept in `scopes` when they
    /// were kept under this table's numbering; else numbered, and kept when every scope has a number.
    func withIDs<T>(of scopes: RequestScopes, _ body: (UnsafeBufferPointer<Int32>?) -> T) -> T {
        let name = numberingName
        if let kept = scopes.numbers(in: name) {
            return kept.withUnsafeBufferPointer { body($0) }
        }
        return withIDs(of: scopes.set) { ids in
            if let ids { scopes.keep(Array(ids), in: name) }
            return body(ids)
        }
    }

    /// The sorted numbers of `scopes.set`, numbered and kept in `scopes` (``withIDs(of:_:)-(RequestScopes,_)``);
    /// `nil` when one of them is in no cached token. For a request whose numbers are not kept under
    /// this table's numbering yet (``RequestScopes/numbers(in:)`` finds those); out of line, so the
    /// lookups that find them stay small.
    @inline(never)
    func numberedAndKept(_ scopes: RequestScopes) -> [Int32]? {
        withIDs(of: scopes) { ids in ids.map { Array($0) } }
    }

    /// The sorted numbers of the scopes of `scopes` that some cached token holds.
    func knownIDs(of scopes: ScopeSet) -> [Int32] {
        scopes.normalized.compactMap { numbers[$0] }.sorted()
    }
}

/// The name of a ``ScopeTable``'s numbering: a number unique in the process, held in an object so
/// that a table can tell whether a copy shares it.
final class Numbering: Sendable {
    let name: UInt64

    init() {
        name = Self.names.add(1, ordering: .relaxed).newValue
    }

    private static let names = Atomic<UInt64>(0)
}

/// The scopes of a request (validated), with the sorted numbers a ``ScopeTable`` gave them, kept
/// for the next lookup of the same scopes (the numbers of a numbering never change). What an
/// application keeps per scope array it is asked for: apps ask for the same few scope sets again
/// and again, and numbering them costs a hash lookup per scope on every call.
package final class RequestScopes: Sendable {
    /// The scopes.
    package let set: ScopeSet
    private let kept = Mutex<(numbering: UInt64, numbers: [Int32])?>(nil)

    /// `set`, with no numbers kept yet.
    package init(_ set: ScopeSet) {
        self.set = set
    }

    /// The numbers kept under the numbering named `numbering`, or `nil`.
    func numbers(in numbering: UInt64) -> [Int32]? {
        kept.withLock { kept in kept.flatMap { $0.numbering == numbering ? $0.numbers : nil } }
    }

    /// Keeps `numbers` (sorted) under the numbering named `numbering`, replacing what was kept.
    func keep(_ numbers: [Int32], in numbering: UInt64) {
        kept.withLock { $0 = (numbering, numbers) }
    }
}

/// The access token partitions of one home account in one environment, as one ``TokenCache``'s
/// index held them at one revision (``TokenCache/tokenPartitions(homeAccountID:environment:checkingStore:)``).
/// An account assembled from that state keeps them, so a lookup for it reads its tokens without
/// finding the partition in the index (hashing four identifiers and reading the index's tables):
/// while the cache is at that revision, the index holds exactly these partitions.
///
/// The cache empties them at its next change (``release()``): an account the app keeps after a
/// change, or after `remove(account:)`, holds no token.
///
/// The partitions are stored in the object itself (a `ManagedBuffer`), not in an array of their own:
/// a lookup at a large cache waits for memory once for the object and its partitions, not twice.
///
/// Not `Sendable` (a `ManagedBuffer` cannot be): an ``Account`` holds it as an opaque reference, and
/// only the cache that took it reads it, under that cache's lock (its header's identifiers, which
/// never change, also before taking the lock).
package final class AccountTokenPartitions: ManagedBuffer<AccountTokenPartitions.Header, AccountTokenPartitions.Partition> {
    /// One partition: its realm and client ID (lowercased) and its tokens.
    package struct Partition: Sendable {
        let realm: String
        let clientID: String
        let tokens: AccessTokenPartition
    }

    /// What the object holds besides its partitions. The partitions and ``released`` are read and
    /// written only under the lock of the cache that took them: initialized before the object is
    /// handed out, deinitialized by that cache's next change. ``cache`` never changes, and is read
    /// before taking the lock.
    package struct Header {
        /// The number of the cache that took them.
        let cache: UInt64
        /// That cache's revision when it took them.
        let revision: UInt64
        /// How many partitions (realm and client ID pairs) the account had.
        let count: Int
        /// Whether ``AccountTokenPartitions/release()`` was called (the partitions are then deinitialized).
        var released = false

        /// How many partitions are stored: ``count``, then 0 once released.
        var stored: Int { released ? 0 : count }
    }

    /// Makes the object holding `partitions`, taken from cache `cache` at `revision`.
    static func make(cache: UInt64, revision: UInt64, partitions: [Partition]) -> AccountTokenPartitions {
        let buffer = create(minimumCapacity: partitions.count) { _ in
            Header(cache: cache, revision: revision, count: partitions.count)
        }
        buffer.withUnsafeMutablePointerToElements { elements in
            partitions.withUnsafeBufferPointer { source in
                guard let base = source.baseAddress else { return }
                elements.initialize(from: base, count: source.count)
            }
        }
        return unsafeDowncast(buffer, to: AccountTokenPartitions.self)
    }

    deinit {
        withUnsafeMutablePointers { header, elements in _ = elements.deinitialize(count: header.pointee.stored) }
    }

    /// The number of the cache that took them.
    var cache: UInt64 { withUnsafeMutablePointerToHeader { $0.pointee.cache } }
    /// That cache's revision when it took them.
    package var revision: UInt64 { withUnsafeMutablePointerToHeader { $0.pointee.revision } }
    /// How many partitions (realm and client ID pairs) the account had.
    package var count: Int { withUnsafeMutablePointerToHeader { $0.pointee.count } }

    /// Calls `body` with the partitions (none once released); for the cache that took them, under its lock.
    func withLockedPartitions<T>(_ body: (UnsafeBufferPointer<Partition>) -> T) -> T {
        withUnsafeMutablePointers { header, elements in
            body(UnsafeBufferPointer(start: elements, count: header.pointee.stored))
        }
    }

    /// Whether the partitions were released (the cache that took them changed since). Read by that
    /// cache under its lock; by tests without it, so only once that cache is no longer in use elsewhere.
    package var isReleased: Bool { withUnsafeMutablePointerToHeader { $0.pointee.released } }

    /// Drops the partitions; called by the cache that took them, under its lock.
    func release() {
        withUnsafeMutablePointers { header, elements in
            _ = elements.deinitialize(count: header.pointee.stored)
            header.pointee.released = true
        }
    }
}

/// What ``TokenCache/accessTokenAndRevision(in:realm:clientID:scopes:)`` found.
package enum PartitionLookup: Sendable {
    /// The token, at the cache's current revision.
    case found(AccessTokenEntry, revision: UInt64)
    /// No token of the partitions matches (the index has none either).
    case notFound
    /// The cache changed since the partitions were taken, or they are another cache's: look the
    /// token up in the index.
    case stale
}

/// The access tokens of one (home account ID, environment, realm, client ID): each token's stored
/// key, scope numbers (see ``ScopeTable``), expiry and entry, side by side in one array. A partition
/// of many tokens (an app that asks for many scope sets) also maps each scope to the tokens that
/// hold it, so a lookup reads only those; a small one is scanned.
struct AccessTokenPartition: Sendable {
    struct Token: Sendable {
        /// The key the token is stored under when it is not its entry's own ``AccessTokenEntry/key``
        /// (as ``AccessTokenSection`` keeps it); `nil` otherwise.
        let storedKey: String?
        /// Sorted, without duplicates; shared by every token with the same scopes (``ScopeTable``).
        let scopes: [Int32]
        /// ``scopes`` as a 64-bit mask (``AccessTokenPartition/mask(of:)``): a scan reads these
        /// eight bytes and reads ``scopes`` only when they hold every bit of the request's.
        let mask: UInt64
        let expiresOn: Date
        /// The entry, as the index's contents hold it under ``key`` (one reference: see ``AccessTokenEntry``).
        let entry: AccessTokenEntry

        init(storedKey: String?, scopes: [Int32], expiresOn: Date, entry: AccessTokenEntry) {
            self.init(storedKey: storedKey, scopes: scopes, mask: scopes.withUnsafeBufferPointer { AccessTokenPartition.mask(of: $0) },
                      expiresOn: expiresOn, entry: entry)
        }

        init(storedKey: String?, scopes: [Int32], mask: UInt64, expiresOn: Date, entry: AccessTokenEntry) {
            self.storedKey = storedKey
            self.scopes = scopes
            self.mask = mask
            self.expiresOn = expiresOn
            self.entry = entry
        }

        /// The stored key (built when it is the entry's own).
        var key: String { storedKey ?? entry.key }
    }

    /// What a partition above ``AccessTokenPartition/scanLimit`` tokens adds, to find tokens without scanning.
    private struct Lookup: Sendable {
        /// Stored key → position in ``AccessTokenPartition/tokens``.
        var positions: [String: Int] = [:]
        /// Scope number → stored keys of the tokens with that scope.
        var holders: [Int32: Set<String>] = [:]
    }

    /// Above this many tokens, lookups go through ``lookup``.
    static let scanLimit = 32

    /// The tokens, each with its scopes' mask: a lookup at a large cache waits for memory once for
    /// the partition's tokens (one allocation), then once for the entry it returns.
    private(set) var tokens: [Token] = []
    private var lookup: Lookup?

    var isEmpty: Bool { tokens.isEmpty }

    /// Adds `token`, whose stored key is not in the partition yet (the index removes a key before it
    /// files it again, and its contents hold each key once).
    mutating func insert(_ token: Token) {
        tokens.append(token)
        if lookup != nil {
            let key = token.key
            lookup?.positions[key] = tokens.count - 1
            for scope in token.scopes { lookup?.holders[scope, default: []].insert(key) }
        } else if tokens.count > Self.scanLimit {
            var built = Lookup()
            for (position, token) in tokens.enumerated() {
                let key = token.key  // built once: a key that is the entry's own is not stored
                built.positions[key] = position
                for scope in token.scopes { built.holders[scope, default: []].insert(key) }
            }
            lookup = built
        }
    }

    /// Replaces the entry `old`, stored under `key`, by `new` (same scopes), with its expiry.
    mutating func replace(_ old: AccessTokenEntry, by new: AccessTokenEntry, storedKey key: String) {
        guard let position = position(ofKey: key, entry: old) else { return }
        replaceToken(at: position, by: new)
    }

    /// Replaces the entry of the token at `position` by `new` (same stored key and scopes), with its expiry.
    mutating func replaceToken(at position: Int, by new: AccessTokenEntry) {
        let token = tokens[position]
        tokens[position] = Token(storedKey: token.storedKey, scopes: token.scopes, mask: token.mask, expiresOn: new.expiresOn, entry: new)
    }

    /// Removes the token of `entry`, stored under `key`.
    mutating func remove(_ entry: AccessTokenEntry, storedKey key: String) {
        guard let position = position(ofKey: key, entry: entry) else { return }
        let removed = tokens[position]
        if lookup != nil {
            let key = removed.key
            lookup?.positions[key] = nil
            for scope in removed.scopes {
                lookup?.holders[scope]?.remove(key)
                if lookup?.holders[scope]?.isEmpty == true { lookup?.holders[scope] = nil }
            }
        }
        let last = tokens.count - 1
        if position != last {
            tokens[position] = tokens[last]
            lookup?.positions[tokens[position].key] = position
        }
        tokens.removeLast()
    }

    /// The token whose scopes include `wanted` (sorted numbers, ``ScopeTable``) and that expires
    /// last (``CacheIndex/best(in:including:)``); `nil` when none does.
    func best(including wanted: [Int32]) -> AccessTokenEntry? {
        wanted.withUnsafeBufferPointer { CacheIndex.best(in: self, including: $0) }
    }

    /// Calls `body` with the position of every token whose scopes include all of `wanted` (sorted
    /// numbers), and the tokens to read it in. Only the scopes of the tokens that do not match are
    /// read: a token's key and entry are separate allocations, and at a large cache each one read is
    /// a wait for memory.
    func forEachPosition(including wanted: UnsafeBufferPointer<Int32>, _ body: (Int, UnsafeBufferPointer<Token>) -> Void) {
        tokens.withUnsafeBufferPointer { tokens in
            if let lookup, let first = wanted.min(by: { (lookup.holders[$0]?.count ?? 0) < (lookup.holders[$1]?.count ?? 0) }) {
                for key in lookup.holders[first] ?? [] {
                    if let position = lookup.positions[key], tokens[position].scopes.includesSorted(wanted) { body(position, tokens) }
                }
                return
            }
            let wantedMask = Self.mask(of: wanted)
            for position in tokens.indices where tokens[position].mask & wantedMask == wantedMask && tokens[position].scopes.includesSorted(wanted) {
                body(position, tokens)
            }
        }
    }

    /// A set of scope numbers as a 64-bit mask, bit `number & 63` for each: a token whose scopes
    /// include a request's has every bit of the request's mask (the converse needs the numbers).
    static func mask(of numbers: UnsafeBufferPointer<Int32>) -> UInt64 {
        var mask: UInt64 = 0
        for number in numbers { mask |= 1 << UInt64(UInt32(bitPattern: number) & 63) }
        return mask
    }

    /// The stored keys of the tokens for which `predicate` holds.
    func keys(where predicate: (Token) -> Bool) -> [String] {
        tokens.filter(predicate).map(\.key)
    }

    /// The position of the token stored under `key`. `entry`, when given, is the token's entry as the
    /// index's contents hold it: the same storage is found without comparing keys.
    private func position(ofKey key: String, entry: AccessTokenEntry?) -> Int? {
        if let lookup { return lookup.positions[key] }
        if let entry, let position = tokens.firstIndex(where: { $0.entry.sharesStorage(with: entry) }) { return position }
        return tokens.firstIndex { $0.storedKey.map { $0 == key } ?? $0.entry.hasKey(key) }
    }

}

extension Array where Element == Int32 {
    /// Whether this sorted array contains every element of the sorted array `other`.
    func includesSorted(_ other: UnsafeBufferPointer<Int32>) -> Bool {
        var index = startIndex
        for value in other {
            while index < endIndex && self[index] < value { index += 1 }
            guard index < endIndex, self[index] == value else { return false }
            index += 1
        }
        return true
    }

    /// Whether this sorted array and the sorted array `other` share an element.
    func intersectsSorted(_ other: [Int32]) -> Bool {
        var i = startIndex, j = other.startIndex
        while i < endIndex && j < other.endIndex {
            if self[i] == other[j] { return true }
            if self[i] < other[j] { i += 1 } else { j += 1 }
        }
        return false
    }
}
