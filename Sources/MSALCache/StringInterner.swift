/// One shared copy of each identifier string: the home account IDs, environments, client IDs, realms
/// and targets that many cache entries repeat (an account's 40 access tokens name the same account,
/// cloud, app and a few tenants). Entries read from JSON or filled from token responses each hold
/// their own copy of every string; sharing them keeps a large cache smaller (about 48 MB less for
/// 100k access tokens) and makes the index's comparisons of equal identifiers compare one storage.
///
/// Not thread-safe: used by one owner under its own lock. Bounded: past ``limit`` strings it starts
/// over (interning saves memory; it never changes a value).
struct StringInterner {
    /// The most strings kept.
    static let limit = 65_536

    private var strings: Set<String> = []

    /// The kept string equal to `string`, or `string` itself, now kept. A string of up to 15 UTF-8
    /// bytes is stored inside its `String` value, with nothing to share: it is returned as it is.
    mutating func intern(_ string: String) -> String {
        guard string.utf8.count > 15 else { return string }
        if strings.count >= Self.limit { strings.removeAll(keepingCapacity: true) }
        return strings.insert(string).memberAfterInsert
    }

    /// ``intern(_:)`` for an optional string.
    mutating func intern(_ string: String?) -> String? {
        string.map { intern($0) }
    }

    /// `entry` with its repeated identifiers replaced by the kept copies; equal to `entry`.
    mutating func intern(_ entry: CacheEntry) -> CacheEntry {
        switch entry {
        case .accessToken(let value): .accessToken(intern(value))
        case .refreshToken(let value): .refreshToken(intern(value))
        case .idToken(let value): .idToken(intern(value))
        case .account(let value): .account(intern(value))
        case .appMetadata(let value): .appMetadata(intern(value))
        }
    }

    /// ``intern(_:)-(CacheEntry)`` for an access token.
    mutating func intern(_ entry: AccessTokenEntry) -> AccessTokenEntry {
        var entry = entry
        entry.homeAccountID = intern(entry.homeAccountID)
        entry.environment = intern(entry.environment)
        entry.clientID = intern(entry.clientID)
        entry.realm = intern(entry.realm)
        entry.target = intern(entry.target)
        return entry
    }

    /// ``intern(_:)-(CacheEntry)`` for a refresh token.
    mutating func intern(_ entry: RefreshTokenEntry) -> RefreshTokenEntry {
        var entry = entry
        entry.homeAccountID = intern(entry.homeAccountID)
        entry.environment = intern(entry.environment)
        entry.clientID = intern(entry.clientID)
        entry.familyID = intern(entry.familyID)
        entry.target = intern(entry.target)
        return entry
    }

    /// ``intern(_:)-(CacheEntry)`` for an ID token.
    mutating func intern(_ entry: IDTokenEntry) -> IDTokenEntry {
        var entry = entry
        entry.homeAccountID = intern(entry.homeAccountID)
        entry.environment = intern(entry.environment)
        entry.clientID = intern(entry.clientID)
        entry.realm = intern(entry.realm)
        return entry
    }

    /// ``intern(_:)-(CacheEntry)`` for an account.
    mutating func intern(_ entry: AccountEntry) -> AccountEntry {
        var entry = entry
        entry.homeAccountID = intern(entry.homeAccountID)
        entry.environment = intern(entry.environment)
        entry.realm = intern(entry.realm)
        entry.authorityType = intern(entry.authorityType)
        entry.accountSource = intern(entry.accountSource)
        return entry
    }

    /// ``intern(_:)-(CacheEntry)`` for app metadata.
    mutating func intern(_ entry: AppMetadataEntry) -> AppMetadataEntry {
        var entry = entry
        entry.environment = intern(entry.environment)
        entry.clientID = intern(entry.clientID)
        return entry
    }
}
