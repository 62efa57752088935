public import Foundation
public import MSALCore

/// The whole content of a token cache in MSAL's unified schema: each section's entries by the key
/// they are stored under.
///
/// Keys are kept as read: a cache written by another MSAL may use keys that differ from this
/// version's ``CacheEntry/key`` (MSAL for iOS/macOS and .NET leave the refresh token's target out of
/// the key; MSAL Python puts it in), and they are written back unchanged.
///
/// Source: MSAL's unified cache schema, as serialized by MSAL Python's `SerializableTokenCache`
/// and MSAL .NET's `SerializeMsalV3`.
public struct TokenCacheContents: Sendable, Equatable {
    /// `AccessToken` entries by stored key (a dictionary that keeps only the keys other MSALs wrote
    /// differently: see ``AccessTokenSection``).
    public var accessTokens: AccessTokenSection
    /// `RefreshToken` entries by stored key.
    public var refreshTokens: [String: RefreshTokenEntry]
    /// `IdToken` entries by stored key.
    public var idTokens: [String: IDTokenEntry]
    /// `Account` entries by stored key.
    public var accounts: [String: AccountEntry]
    /// `AppMetadata` entries by stored key.
    public var appMetadata: [String: AppMetadataEntry]
    /// Top-level sections this version does not know, kept verbatim so writing the cache back loses nothing.
    public var unknownSections: [String: JSONValue]
    /// Entries of known sections that could not be read (a required field missing, or a credential
    /// type this version does not serve, such as a proof-of-possession token), by section name and key.
    /// Kept verbatim for writing back; never returned by a lookup.
    public var unreadableEntries: [String: [String: JSONValue]]

    /// An empty cache.
    public init() {
        accessTokens = [:]
        refreshTokens = [:]
        idTokens = [:]
        accounts = [:]
        appMetadata = [:]
        unknownSections = [:]
        unreadableEntries = [:]
    }

    /// Reads a cache serialized as MSAL's JSON (what MSAL Python's `serialize()` and MSAL .NET's
    /// `SerializeMsalV3()` write). Empty or all-whitespace data reads as an empty cache.
    ///
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the data is not a JSON object, or a
    ///   known section is not an object. A single unreadable entry does not fail the read: it goes
    ///   to ``unreadableEntries``.
    public init(msalJSON data: Data) throws(MSALError) {
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            self.init()
            return
        }
        guard let root = JSONValue(parsing: data), case .object(let sections) = root else {
            throw .internal(
                .cacheError,
                "The token cache is not MSAL JSON (expected a JSON object of sections). Delete the cache file to start over; users will sign in again.")
        }
        try self.init(msalJSONObject: sections)
    }

    /// Reads a cache from MSAL's JSON already parsed: the top-level object of sections.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when a known section is not an object. A
    ///   single unreadable entry does not fail the read: it goes to ``unreadableEntries``.
    public init(msalJSONObject sections: [String: JSONValue]) throws(MSALError) {
        self.init()
        var interner = StringInterner()  // entries parsed from JSON each hold their own copy of every identifier
        for (name, value) in sections {
            guard let kind = CacheEntryKind(rawValue: name) else {
                unknownSections[name] = value
                continue
            }
            guard case .object(let entries) = value else {
                throw .internal(.cacheError, "The token cache's \(name) section is not a JSON object. Delete the cache file to start over.")
            }
            for (key, entryValue) in entries {
                guard case .object(let object) = entryValue, let entry = try? CacheEntry(kind: kind, msalJSONObject: object) else {
                    unreadableEntries[name, default: [:]][key] = entryValue
                    continue
                }
                insert(interner.intern(entry), storedKey: key)
            }
        }
    }

    /// Serializes the cache as MSAL's JSON: the five sections (always present, possibly empty), each
    /// an object of entries by stored key, plus ``unknownSections`` and ``unreadableEntries``
    /// verbatim. Keys are sorted; timestamps are epoch-second strings; UTF-8.
    ///
    /// - Returns: the JSON document.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` if a preserved value cannot be encoded.
    public func msalJSON() throws(MSALError) -> Data {
        try encodeJSON(.object(msalJSONObject()), pretty: true)
    }

    /// The cache as MSAL's JSON before encoding: the top-level object of sections that ``msalJSON()``
    /// writes.
    /// - Returns: the sections by name.
    public func msalJSONObject() -> [String: JSONValue] {
        var root = unknownSections
        for kind in CacheEntryKind.allCases {
            var section: [String: JSONValue] = unreadableEntries[kind.rawValue] ?? [:]
            for (key, entry) in entries(of: kind) { section[key] = .object(entry.msalJSONObject) }
            root[kind.rawValue] = .object(section)
        }
        return root
    }

    /// The readable entries of one section with their stored keys.
    /// - Returns: pairs of stored key and entry, in no particular order.
    public func entries(of kind: CacheEntryKind) -> [(key: String, entry: CacheEntry)] {
        switch kind {
        case .accessToken: accessTokens.map { ($0.key, .accessToken($0.value)) }
        case .refreshToken: refreshTokens.map { ($0.key, .refreshToken($0.value)) }
        case .idToken: idTokens.map { ($0.key, .idToken($0.value)) }
        case .account: accounts.map { ($0.key, .account($0.value)) }
        case .appMetadata: appMetadata.map { ($0.key, .appMetadata($0.value)) }
        }
    }

    /// The entry stored under `key` in the section `kind`, if any.
    public func entry(kind: CacheEntryKind, key: String) -> CacheEntry? {
        switch kind {
        case .accessToken: accessTokens[key].map { .accessToken($0) }
        case .refreshToken: refreshTokens[key].map { .refreshToken($0) }
        case .idToken: idTokens[key].map { .idToken($0) }
        case .account: accounts[key].map { .account($0) }
        case .appMetadata: appMetadata[key].map { .appMetadata($0) }
        }
    }

    /// The number of readable entries in all sections.
    public var count: Int {
        accessTokens.count + refreshTokens.count + idTokens.count + accounts.count + appMetadata.count
    }

    /// Stores `entry` under `storedKey` (replacing what was there).
    public mutating func insert(_ entry: CacheEntry, storedKey: String) {
        switch entry {
        case .accessToken(let value): accessTokens[storedKey] = value
        case .refreshToken(let value): refreshTokens[storedKey] = value
        case .idToken(let value): idTokens[storedKey] = value
        case .account(let value): accounts[storedKey] = value
        case .appMetadata(let value): appMetadata[storedKey] = value
        }
    }

    /// Removes the entry stored under `key` in section `kind` (readable or not).
    /// - Returns: the removed readable entry, if there was one.
    @discardableResult
    public mutating func remove(kind: CacheEntryKind, key: String) -> CacheEntry? {
        unreadableEntries[kind.rawValue]?[key] = nil
        if unreadableEntries[kind.rawValue]?.isEmpty == true { unreadableEntries[kind.rawValue] = nil }
        switch kind {
        case .accessToken: return accessTokens.removeValue(forKey: key).map { .accessToken($0) }
        case .refreshToken: return refreshTokens.removeValue(forKey: key).map { .refreshToken($0) }
        case .idToken: return idTokens.removeValue(forKey: key).map { .idToken($0) }
        case .account: return accounts.removeValue(forKey: key).map { .account($0) }
        case .appMetadata: return appMetadata.removeValue(forKey: key).map { .appMetadata($0) }
        }
    }

    /// Replaces the repeated identifiers of every readable entry by the interner's shared copies
    /// (values do not change).
    mutating func internIdentifiers(_ interner: inout StringInterner) {
        accessTokens.replaceValues { interner.intern($0) }
        Self.replaceValues(of: &refreshTokens) { interner.intern($0) }
        Self.replaceValues(of: &idTokens) { interner.intern($0) }
        Self.replaceValues(of: &accounts) { interner.intern($0) }
        Self.replaceValues(of: &appMetadata) { interner.intern($0) }
    }

    /// Replaces each value of `section` by `transform` of it, in place by index (keys and positions
    /// do not change, so nothing is rehashed).
    private static func replaceValues<Value>(of section: inout [String: Value], _ transform: (Value) -> Value) {
        var index = section.startIndex
        while index != section.endIndex {
            section.values[index] = transform(section.values[index])
            section.formIndex(after: &index)
        }
    }

    /// Applies a change the way every ``TokenCacheStore`` does: first the removals, then the upserts,
    /// each upsert stored under its own ``CacheEntry/key``.
    public mutating func apply(_ change: TokenCacheChange) {
        apply(change) { $0 }
    }

    /// ``apply(_:)``, storing each upsert with its repeated identifiers shared through `interner`.
    mutating func apply(_ change: TokenCacheChange, interning interner: inout StringInterner) {
        apply(change) { interner.intern($0) }
    }

    /// Removes from `unreadable` (an ``unreadableEntries`` table) what applying `change` removes
    /// from it: the entry under each removal's key (and a section left empty by that), and the
    /// entry under each upsert's key.
    static func forgetUnreadable(in unreadable: inout [String: [String: JSONValue]], replacedBy change: TokenCacheChange) {
        for removal in change.removals {
            unreadable[removal.kind.rawValue]?[removal.key] = nil
            if unreadable[removal.kind.rawValue]?.isEmpty == true { unreadable[removal.kind.rawValue] = nil }
        }
        for (key, entry) in change.keyedUpserts { unreadable[entry.kind.rawValue]?[key] = nil }
    }

    private mutating func apply(_ change: TokenCacheChange, storing stored: (CacheEntry) -> CacheEntry) {
        for removal in change.removals { remove(kind: removal.kind, key: removal.key) }
        for (key, entry) in change.keyedUpserts {
            if !unreadableEntries.isEmpty { unreadableEntries[entry.kind.rawValue]?[key] = nil }
            let value = stored(entry)
            if case .accessToken(let token) = value {
                accessTokens.store(token)  // `key` is its own key: stored without it
            } else {
                insert(value, storedKey: key)
            }
        }
    }
}

/// One atomic change to a token cache: entries to remove, then entries to insert or replace.
public struct TokenCacheChange: Sendable, Hashable {
    /// Entries to insert or replace, each under its own ``CacheEntry/key``. Applied after ``removals``.
    public var upserts: [CacheEntry] {
        didSet { upsertKeys = nil }
    }
    /// Entries to remove by section and stored key. Removing a missing entry is not an error.
    public var removals: [CacheEntryRemoval]
    /// The ``CacheEntry/key`` of each upsert, when whoever made the change had built them already
    /// (building a key lowercases and joins several identifiers; a save would otherwise build each
    /// one three times). Dropped whenever ``upserts`` changes.
    private var upsertKeys: [String]?

    /// Creates a change.
    public init(upserts: [CacheEntry] = [], removals: [CacheEntryRemoval] = []) {
        self.upserts = upserts
        self.removals = removals
    }

    /// Creates a change whose upserts' keys are known: `keys[i]` must be `upserts[i].key`.
    init(keyedUpserts: [(key: String, entry: CacheEntry)], removals: [CacheEntryRemoval]) {
        self.upserts = keyedUpserts.map(\.entry)
        self.removals = removals
        self.upsertKeys = keyedUpserts.map(\.key)
    }

    /// The upserts with the key each is stored under (its ``CacheEntry/key``), built once per change.
    package var keyedUpserts: KeyedUpserts { KeyedUpserts(entries: upserts, keys: upsertKeys) }

    /// ``upserts`` with their keys, as a sequence that builds no array.
    package struct KeyedUpserts: Sequence {
        let entries: [CacheEntry]
        let keys: [String]?

        package func makeIterator() -> Iterator { Iterator(entries: entries, keys: keys?.count == entries.count ? keys : nil) }

        package struct Iterator: IteratorProtocol {
            let entries: [CacheEntry]
            let keys: [String]?
            var index = 0

            package mutating func next() -> (key: String, entry: CacheEntry)? {
                guard index < entries.count else { return nil }
                defer { index += 1 }
                let entry = entries[index]
                return (keys?[index] ?? entry.key, entry)
            }
        }
    }

    /// Changes are equal when their upserts and removals are: the kept keys follow from the upserts.
    public static func == (lhs: TokenCacheChange, rhs: TokenCacheChange) -> Bool {
        lhs.upserts == rhs.upserts && lhs.removals == rhs.removals
    }

    /// Hashes the upserts and removals (as ``==`` compares them).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(upserts)
        hasher.combine(removals)
    }

    /// Whether the change does nothing.
    public var isEmpty: Bool { upserts.isEmpty && removals.isEmpty }
}
