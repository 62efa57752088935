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
    private let logger: Logger
    private let state: Mutex<State>

    private struct State {
        /// `nil` until loaded, and after a change whose effect on the store is not known exactly.
        var index: CacheIndex?
        var stamp: UInt64 = 0
    }

    /// Creates a cache over `store`. Nothing is read until the first call.
    /// - Parameters:
    ///   - store: where entries live.
    ///   - logger: receives debug lines about reloads (counts only; never a secret or an identifier).
    public init(store: any TokenCacheStore, logger: Logger = .none) {
        self.store = store
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
        try withIndex { index in
            let id = CredentialID(homeAccountID: homeAccountID, environment: environment, realm: realm, clientID: clientID)
            return (index.accessTokens[id] ?? [])
                .compactMap { index.contents.accessTokens[$0].map { (key: $0.key, entry: $0) } }
                .compactMap { key, entry in entry.scopes.isSuperset(of: scopes) ? (key, entry) : nil }
                .max { ($0.1.expiresOn, $1.0) < ($1.1.expiresOn, $0.0) }?.1
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
            let id = CredentialID(homeAccountID: homeAccountID, environment: environment, realm: realm, clientID: clientID)
            return (index.idTokens[id] ?? []).sorted().lazy.compactMap { index.contents.idTokens[$0] }.first
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
        try withIndex { index in
            let environment: String? = environment?.lowercased()
            let keys: Set<String> = index.accountsByHome[homeAccountID.lowercased()] ?? []
            let entries: [AccountEntry] = keys.compactMap { index.contents.accounts[$0] }
            return entries
                .filter { environment == nil || $0.environment.lowercased() == environment }
                .sorted { $0.sortKey < $1.sortKey }
        }
    }

    /// The app metadata of a client ID in an environment (tells whether the app is in a token family).
    /// - Returns: the entry, or `nil`.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func appMetadata(clientID: String, environment: String) throws(MSALError) -> AppMetadataEntry? {
        try withIndex { index in
            let id = ClientID(homeAccountID: "", environment: environment, clientOrFamilyID: clientID)
            return (index.appMetadata[id] ?? []).sorted().lazy.compactMap { index.contents.appMetadata[$0] }.first
        }
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
    ///   one stored under another MSAL's key.
    /// - `nil` parameters leave existing entries alone.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read or written; then
    ///   nothing was saved.
    public func save(
        accessToken: AccessTokenEntry?,
        refreshToken: RefreshTokenEntry?,
        idToken: IDTokenEntry?,
        account: AccountEntry?,
        appMetadata: AppMetadataEntry?
    ) throws(MSALError) {
        try withState { state throws(MSALError) in
            guard let index = state.index else { return }
            var change = TokenCacheChange()
            var removals = Set<CacheEntryRemoval>()
            if let accessToken {
                let scopes = accessToken.scopes
                let id = CredentialID(accessToken)
                for key in index.accessTokens[id] ?? [] where key != accessToken.key {
                    if let old = index.contents.accessTokens[key], old.scopes.intersects(scopes) || old.scopes.isEmpty {
                        removals.insert(CacheEntryRemoval(kind: .accessToken, key: key))
                    }
                }
                change.upserts.append(.accessToken(accessToken))
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
                for key in keys where key != refreshToken.key {
                    removals.insert(CacheEntryRemoval(kind: .refreshToken, key: key))
                }
                change.upserts.append(.refreshToken(refreshToken))
            }
            if let idToken {
                for key in index.idTokens[CredentialID(idToken)] ?? [] where key != idToken.key {
                    removals.insert(CacheEntryRemoval(kind: .idToken, key: key))
                }
                change.upserts.append(.idToken(idToken))
            }
            if let account {
                let environment = account.environment.lowercased(), realm = account.realm.lowercased()
                for key in index.accountsByHome[account.homeAccountID.lowercased()] ?? [] where key != account.key {
                    if let old = index.contents.accounts[key],
                       old.environment.lowercased() == environment, old.realm.lowercased() == realm {
                        removals.insert(CacheEntryRemoval(kind: .account, key: key))
                    }
                }
                change.upserts.append(.account(account))
            }
            if let appMetadata {
                let id = ClientID(homeAccountID: "", environment: appMetadata.environment, clientOrFamilyID: appMetadata.clientID)
                for key in index.appMetadata[id] ?? [] where key != appMetadata.key {
                    removals.insert(CacheEntryRemoval(kind: .appMetadata, key: key))
                }
                change.upserts.append(.appMetadata(appMetadata))
            }
            change.removals = removals.sorted { ($0.kind.rawValue, $0.key) < ($1.kind.rawValue, $1.key) }
            try commit(change, &state)
        }
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
            guard let index = state.index else { return }
            let refs = index.byHomeEnvironment[HomeEnvironment(homeAccountID: homeAccountID, environment: environment)] ?? []
            let client = clientID.lowercased()
            var removals: [CacheEntryRemoval] = []
            var accountRemovals: [CacheEntryRemoval] = []
            var otherClientsRemain = false
            for ref in refs {
                guard let entry = index.contents.entry(kind: ref.kind, key: ref.key) else { continue }
                if ref.kind == .account {
                    accountRemovals.append(ref)
                } else if entry.clientID.lowercased() == client {
                    removals.append(ref)
                } else {
                    otherClientsRemain = true
                }
            }
            if !otherClientsRemain { removals += accountRemovals }
            removals.sort { ($0.kind.rawValue, $0.key) < ($1.kind.rawValue, $1.key) }
            try commit(TokenCacheChange(removals: removals), &state)
        }
    }

    /// Removes entries by section and stored key, in one atomic change. Missing entries are ignored.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be written; then nothing
    ///   was removed.
    public func remove(_ removals: [CacheEntryRemoval]) throws(MSALError) {
        try withState { state throws(MSALError) in
            try commit(TokenCacheChange(removals: removals), &state)
        }
    }

    // MARK: Internals

    /// Runs `body` under the lock with an up-to-date state.
    private func withState<T: Sendable>(_ body: (inout State) throws(MSALError) -> T) throws(MSALError) -> T {
        try state.withLock { (state: inout State) throws(MSALError) -> T in
            let stamp = try store.changeStamp()
            if state.index == nil || state.stamp != stamp {
                let contents = try store.readAll()
                state.index = CacheIndex(contents)
                state.stamp = stamp
                logger.debug("Token cache loaded \(contents.count) entries from its store.")
            }
            return try body(&state)
        }
    }

    /// Runs `body` under the lock with an up-to-date index.
    private func withIndex<T: Sendable>(_ body: (CacheIndex) -> T) throws(MSALError) -> T {
        try withState { state in body(state.index!) }
    }

    /// Applies `change` to the store, then to the index if nobody else changed the store meanwhile.
    private func commit(_ change: TokenCacheChange, _ state: inout State) throws(MSALError) {
        guard !change.isEmpty else { return }
        let stamps: AppliedChangeStamps
        do throws(MSALError) {
            stamps = try store.applyReportingStamps(change)
        } catch {
            state.index = nil
            throw error
        }
        if stamps.before == state.stamp, state.index != nil {
            state.index!.apply(change)
            state.stamp = stamps.after
        } else {
            state.index = nil
        }
        logger.debug("Token cache stored \(change.upserts.count) entries and removed \(change.removals.count).")
    }
}

// MARK: - Index

/// (home account ID, environment, realm, client ID), lowercased.
struct CredentialID: Hashable {
    let homeAccountID: String, environment: String, realm: String, clientID: String

    init(homeAccountID: String, environment: String, realm: String, clientID: String) {
        self.homeAccountID = homeAccountID.lowercased()
        self.environment = environment.lowercased()
        self.realm = realm.lowercased()
        self.clientID = clientID.lowercased()
    }

    init(_ entry: AccessTokenEntry) {
        self.init(homeAccountID: entry.homeAccountID, environment: entry.environment, realm: entry.realm, clientID: entry.clientID)
    }

    init(_ entry: IDTokenEntry) {
        self.init(homeAccountID: entry.homeAccountID, environment: entry.environment, realm: entry.realm, clientID: entry.clientID)
    }
}

/// (home account ID, environment, client or family ID), lowercased.
struct ClientID: Hashable {
    let homeAccountID: String, environment: String, clientOrFamilyID: String

    init(homeAccountID: String, environment: String, clientOrFamilyID: String) {
        self.homeAccountID = homeAccountID.lowercased()
        self.environment = environment.lowercased()
        self.clientOrFamilyID = clientOrFamilyID.lowercased()
    }
}

/// (home account ID, environment), lowercased.
struct HomeEnvironment: Hashable {
    let homeAccountID: String, environment: String

    init(homeAccountID: String, environment: String) {
        self.homeAccountID = homeAccountID.lowercased()
        self.environment = environment.lowercased()
    }
}

/// The contents plus dictionaries from lowercased identities to stored keys.
struct CacheIndex: Sendable {
    private(set) var contents = TokenCacheContents()
    private(set) var accessTokens: [CredentialID: Set<String>] = [:]
    private(set) var idTokens: [CredentialID: Set<String>] = [:]
    private(set) var refreshTokensByClient: [ClientID: Set<String>] = [:]
    private(set) var refreshTokensByFamily: [ClientID: Set<String>] = [:]
    private(set) var accountsByHome: [String: Set<String>] = [:]
    /// Keyed with an empty home account ID.
    private(set) var appMetadata: [ClientID: Set<String>] = [:]
    /// Credentials and accounts of each (home account, environment).
    private(set) var byHomeEnvironment: [HomeEnvironment: Set<CacheEntryRemoval>] = [:]

    init(_ contents: TokenCacheContents) {
        self.contents = contents
        for kind in CacheEntryKind.allCases {
            for (key, entry) in contents.entries(of: kind) { addToIndex(entry, storedKey: key) }
        }
        self.contents.unknownSections = [:]
        self.contents.unreadableEntries = [:]
    }

    mutating func apply(_ change: TokenCacheChange) {
        for removal in change.removals { remove(kind: removal.kind, key: removal.key) }
        for entry in change.upserts {
            remove(kind: entry.kind, key: entry.key)
            contents.insert(entry, storedKey: entry.key)
            addToIndex(entry, storedKey: entry.key)
        }
    }

    private mutating func remove(kind: CacheEntryKind, key: String) {
        guard let entry = contents.remove(kind: kind, key: key) else { return }
        switch entry {
        case .accessToken(let value): accessTokens.removeMember(key, at: CredentialID(value))
        case .idToken(let value): idTokens.removeMember(key, at: CredentialID(value))
        case .refreshToken(let value):
            refreshTokensByClient.removeMember(key, at: ClientID(
                homeAccountID: value.homeAccountID, environment: value.environment, clientOrFamilyID: value.clientID))
            if let familyID = value.familyID {
                refreshTokensByFamily.removeMember(key, at: ClientID(
                    homeAccountID: value.homeAccountID, environment: value.environment, clientOrFamilyID: familyID))
            }
        case .account(let value): accountsByHome.removeMember(key, at: value.homeAccountID.lowercased())
        case .appMetadata(let value):
            appMetadata.removeMember(key, at: ClientID(homeAccountID: "", environment: value.environment, clientOrFamilyID: value.clientID))
        }
        if case .appMetadata = entry { return }
        byHomeEnvironment.removeMember(
            CacheEntryRemoval(kind: kind, key: key),
            at: HomeEnvironment(homeAccountID: entry.homeAccountID, environment: entry.environment))
    }

    private mutating func addToIndex(_ entry: CacheEntry, storedKey key: String) {
        switch entry {
        case .accessToken(let value): accessTokens[CredentialID(value), default: []].insert(key)
        case .idToken(let value): idTokens[CredentialID(value), default: []].insert(key)
        case .refreshToken(let value):
            refreshTokensByClient[ClientID(
                homeAccountID: value.homeAccountID, environment: value.environment, clientOrFamilyID: value.clientID), default: []].insert(key)
            if let familyID = value.familyID {
                refreshTokensByFamily[ClientID(
                    homeAccountID: value.homeAccountID, environment: value.environment, clientOrFamilyID: familyID), default: []].insert(key)
            }
        case .account(let value): accountsByHome[value.homeAccountID.lowercased(), default: []].insert(key)
        case .appMetadata(let value):
            appMetadata[ClientID(homeAccountID: "", environment: value.environment, clientOrFamilyID: value.clientID), default: []].insert(key)
            return
        }
        byHomeEnvironment[HomeEnvironment(homeAccountID: entry.homeAccountID, environment: entry.environment), default: []]
            .insert(CacheEntryRemoval(kind: entry.kind, key: key))
    }

    /// Refresh tokens stored under `keys`, newest `last_modification_time` first, then by key.
    func newestFirst(_ keys: Set<String>) -> [RefreshTokenEntry] {
        keys.compactMap { key in contents.refreshTokens[key].map { (key, $0) } }
            .sorted { lhs, rhs in
                let l = lhs.1.lastModificationTime ?? .distantPast, r = rhs.1.lastModificationTime ?? .distantPast
                return l != r ? l > r : lhs.0 < rhs.0
            }
            .map(\.1)
    }
}

extension Dictionary {
    /// Removes `member` from the set at `key`, dropping the set when it becomes empty.
    fileprivate mutating func removeMember<Member>(_ member: Member, at key: Key) where Value == Set<Member> {
        guard var set = self[key] else { return }
        set.remove(member)
        self[key] = set.isEmpty ? nil : set
    }
}

extension AccountEntry {
    fileprivate var sortKey: (String, String, String) { (homeAccountID.lowercased(), environment.lowercased(), realm.lowercased()) }
}
