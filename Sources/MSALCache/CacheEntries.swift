public import Foundation
public import MSALCore

/// The five sections of MSAL's unified token cache schema, named as in the JSON.
///
/// Source: MSAL's unified cache schema, shared by MSAL for iOS/macOS, .NET, Java, JavaScript and
/// Python (the section names of a serialized cache).
public enum CacheEntryKind: String, Sendable, Hashable, CaseIterable {
    /// `AccessToken`: one access token per (account, environment, realm, client id, target).
    case accessToken = "AccessToken"
    /// `RefreshToken`: refresh tokens, tenant-independent (empty realm in the key).
    case refreshToken = "RefreshToken"
    /// `IdToken`: one ID token per (account, environment, realm, client id).
    case idToken = "IdToken"
    /// `Account`: one entry per (account, environment, realm): a tenant profile.
    case account = "Account"
    /// `AppMetadata`: per (client id, environment), whether the app is in a token family.
    case appMetadata = "AppMetadata"
}

/// Builds the credential key of MSAL's unified schema:
/// `<home_account_id>-<environment>-<credential type>-<client or family id>-<realm>-<target>`, lowercased.
func credentialKey(
    homeAccountID: String, environment: String, credentialType: String,
    clientOrFamilyID: String, realm: String, target: String
) -> String {
    let count = homeAccountID.utf8.count + environment.utf8.count + credentialType.utf8.count + clientOrFamilyID.utf8.count
        + realm.utf8.count + target.utf8.count + 5
    // ASCII (identifiers, hosts, most scopes): one allocation, lowercased while written.
    let ascii = String(unsafeUninitializedCapacity: count) { buffer -> Int in
        var position = 0
        guard writeKeyPart(homeAccountID, first: true, to: buffer, at: &position),
              writeKeyPart(environment, to: buffer, at: &position), writeKeyPart(credentialType, to: buffer, at: &position),
              writeKeyPart(clientOrFamilyID, to: buffer, at: &position), writeKeyPart(realm, to: buffer, at: &position),
              writeKeyPart(target, to: buffer, at: &position) else { return 0 }
        return position
    }
    if ascii.utf8.count == count { return ascii }
    return [homeAccountID, environment, credentialType, clientOrFamilyID, realm, target].joined(separator: "-").lowercased()
}

/// `<first>-<second>-<third>`, lowercased: the key of an account (home account ID, environment,
/// realm) or of app metadata (`appmetadata`, environment, client ID) in MSAL's unified schema.
func lowercasedKey(_ first: String, _ second: String, _ third: String) -> String {
    let count = first.utf8.count + second.utf8.count + third.utf8.count + 2
    // ASCII: one allocation, lowercased while written, as `credentialKey`.
    let ascii = String(unsafeUninitializedCapacity: count) { buffer -> Int in
        var position = 0
        guard writeKeyPart(first, first: true, to: buffer, at: &position), writeKeyPart(second, to: buffer, at: &position),
              writeKeyPart(third, to: buffer, at: &position) else { return 0 }
        return position
    }
    if ascii.utf8.count == count { return ascii }
    return [first, second, third].joined(separator: "-").lowercased()
}

/// Compares `stored` with the key of `partCount` parts (`part(index)`, as `credentialKey` and
/// `lowercasedKey` build it: lowercased, joined by `-`) without building that key while both are
/// ASCII: the first two ASCII bytes that differ decide; a part in lowercase ASCII equal to the next
/// bytes (as identifiers usually are) is compared in one `memcmp`.
/// - Returns: whether they are equal; `nil` when a non-ASCII byte leaves it to comparing with the
///   built key.
func compareKey(_ stored: String, partCount: Int, part: (Int) -> String) -> Bool? {
    var stored = stored
    return stored.withUTF8 { bytes -> Bool? in
        var position = 0
        for index in 0 ..< partCount {
            if index > 0 {
                guard position < bytes.count else { return false }
                guard bytes[position] < 0x80 else { return nil }
                guard bytes[position] == UInt8(ascii: "-") else { return false }
                position += 1
            }
            var part = part(index)
            let matched = part.withUTF8 { partBytes -> Bool? in
                if !partBytes.isEmpty, partBytes.count <= bytes.count - position,
                   memcmp(partBytes.baseAddress!, bytes.baseAddress! + position, partBytes.count) == 0,
                   !partBytes.contains(where: { $0 >= 0x80 || ($0 >= 0x41 && $0 <= 0x5A) }) {
                    position += partBytes.count
                    return true
                }
                for byte in partBytes {
                    guard byte < 0x80 else { return nil }
                    guard position < bytes.count else { return false }
                    guard bytes[position] < 0x80 else { return nil }
                    guard bytes[position] == byte.asciiLowercased else { return false }
                    position += 1
                }
                return true
            }
            guard let matched else { return nil }
            guard matched else { return false }
        }
        return position == bytes.count
    }
}

/// ``compareKey(_:partCount:part:)`` with the key ``credentialKey(homeAccountID:environment:credentialType:clientOrFamilyID:realm:target:)``
/// builds from the same parts.
func compareCredentialKey(
    _ stored: String, homeAccountID: String, environment: String, credentialType: String,
    clientOrFamilyID: String, realm: String, target: String
) -> Bool? {
    compareKey(stored, partCount: 6) { index in
        switch index {
        case 0: homeAccountID
        case 1: environment
        case 2: credentialType
        case 3: clientOrFamilyID
        case 4: realm
        default: target
        }
    }
}

/// ``compareKey(_:partCount:part:)`` with the key ``lowercasedKey(_:_:_:)`` builds from the same parts.
func compareLowercasedKey(_ stored: String, _ first: String, _ second: String, _ third: String) -> Bool? {
    compareKey(stored, partCount: 3) { index in index == 0 ? first : index == 1 ? second : third }
}

extension RefreshTokenEntry {
    /// Whether `stored` is this entry's ``key`` (as strings compare), without building it while ASCII.
    func hasKey(_ stored: String) -> Bool {
        compareCredentialKey(
            stored, homeAccountID: homeAccountID, environment: environment, credentialType: "refreshtoken",
            clientOrFamilyID: familyID ?? clientID, realm: "", target: target ?? "") ?? (stored == key)
    }
}

extension IDTokenEntry {
    /// Whether `stored` is this entry's ``key`` (as strings compare), without building it while ASCII.
    func hasKey(_ stored: String) -> Bool {
        compareCredentialKey(
            stored, homeAccountID: homeAccountID, environment: environment, credentialType: "idtoken",
            clientOrFamilyID: clientID, realm: realm, target: "") ?? (stored == key)
    }
}

extension AccountEntry {
    /// Whether `stored` is this entry's ``key`` (as strings compare), without building it while ASCII.
    func hasKey(_ stored: String) -> Bool {
        compareLowercasedKey(stored, homeAccountID, environment, realm) ?? (stored == key)
    }
}

extension AppMetadataEntry {
    /// Whether `stored` is this entry's ``key`` (as strings compare), without building it while ASCII.
    func hasKey(_ stored: String) -> Bool {
        compareLowercasedKey(stored, "appmetadata", environment, clientID) ?? (stored == key)
    }
}

/// Whether two optional strings are both absent or have the same UTF-8 bytes
/// (``Swift/String/hasSameUTF8(as:)``): how entries' identifiers and fields are compared where
/// canonically equivalent strings in other bytes must count as different.
func sameBytes(_ a: String?, _ b: String?) -> Bool {
    switch (a, b) {
    case (nil, nil): true
    case (let a?, let b?): a.hasSameUTF8(as: b)
    default: false
    }
}

/// Writes `part` ASCII-lowercased into `buffer` at `position` (preceded by `-` unless it is the
/// `first` part), from its contiguous bytes, and moves `position` past it.
/// - Returns: `false` at the first non-ASCII byte (the caller then lowercases the whole key in full).
private func writeKeyPart(_ part: String, first: Bool = false, to buffer: UnsafeMutableBufferPointer<UInt8>, at position: inout Int) -> Bool {
    if !first {
        buffer[position] = UInt8(ascii: "-")
        position += 1
    }
    var part = part
    return part.withUTF8 { bytes in
        for byte in bytes {
            guard byte < 0x80 else { return false }
            buffer[position] = byte.asciiLowercased
            position += 1
        }
        return true
    }
}

/// A credential entry (access, refresh or ID token) whose `description`, `debugDescription` and
/// mirror show its key but never its secret: `<TypeName>(<describedFields>, secret: <redacted>)`.
protocol RedactedCredentialEntry: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The entry's key in MSAL's unified schema.
    var key: String { get }
    /// What ``description`` shows before the redacted secret; `key: <key>` unless the entry says more.
    var describedFields: String { get }
}

extension RedactedCredentialEntry {
    var describedFields: String { "key: \(key)" }

    /// The type name and ``describedFields``; the secret is shown as `<redacted>`.
    public var description: String { "\(Self.self)(\(describedFields), secret: <redacted>)" }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// The key only, so `dump` and debuggers never show the secret.
    public var customMirror: Mirror { Mirror(self, children: ["key": key, "secret": "<redacted>"], displayStyle: .struct) }
}

/// A cached access token: an entry of the `AccessToken` section.
///
/// The description never shows ``secret``.
///
/// Source: MSAL's unified cache schema (`credential_type` `AccessToken`, fields `home_account_id`,
/// `environment`, `client_id`, `realm`, `target`, `secret`, `token_type`, `cached_at`, `expires_on`,
/// `extended_expires_on`, `refresh_on`; times as epoch-second strings).
public struct AccessTokenEntry: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable,
    RedactedCredentialEntry {
    /// The fields, in one allocation: a cache holds many access tokens (one per account, tenant and
    /// scope set), and an entry that is one reference takes a quarter of the room in a dictionary's
    /// table and is copied with one retain instead of one per string. Copied on write.
    private final class Storage: @unchecked Sendable {
        // @unchecked: the fields change only through `AccessTokenEntry`'s setters, on a storage no
        // other entry references (`isKnownUniquelyReferenced`), so no two threads ever see one change.
        // First what a cache hit reads (Swift lays out a class's fields in declaration order), in
        // the cache line of the object's header, which retaining it reads anyway: the expiry, and
        // the environment its account is checked against.
        var expiresOn: Date
        var refreshOn: Date?
        var environment: String
        var realm: String
        var secret: String
        var tokenType: String
        var target: String
        var homeAccountID: String
        var clientID: String
        var cachedAt: Date
        var extendedExpiresOn: Date?
        var additionalFields: [String: JSONValue]

        init(
            homeAccountID: String, environment: String, clientID: String, realm: String, target: String, secret: String,
            tokenType: String, cachedAt: Date, expiresOn: Date, extendedExpiresOn: Date?, refreshOn: Date?,
            additionalFields: [String: JSONValue]
        ) {
            self.homeAccountID = homeAccountID
            self.environment = environment
            self.clientID = clientID
            self.realm = realm
            self.target = target
            self.secret = secret
            self.tokenType = tokenType
            self.cachedAt = cachedAt
            self.expiresOn = expiresOn
            self.extendedExpiresOn = extendedExpiresOn
            self.refreshOn = refreshOn
            self.additionalFields = additionalFields
        }

        func copy() -> Storage {
            Storage(
                homeAccountID: homeAccountID, environment: environment, clientID: clientID, realm: realm, target: target,
                secret: secret, tokenType: tokenType, cachedAt: cachedAt, expiresOn: expiresOn,
                extendedExpiresOn: extendedExpiresOn, refreshOn: refreshOn, additionalFields: additionalFields)
        }
    }

    private var storage: Storage

    /// The storage, copied first when another entry shares it.
    private var uniqueStorage: Storage {
        mutating get {
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            return storage
        }
    }

    /// The home account ID (`<uid>.<utid>` for Entra ID, the `sub` for OpenID Connect providers).
    public var homeAccountID: String {
        get { storage.homeAccountID }
        set { uniqueStorage.homeAccountID = newValue }
    }
    /// The host (with `:port` if any) of the authority that issued the token.
    public var environment: String {
        get { storage.environment }
        set { uniqueStorage.environment = newValue }
    }

    /// Whether ``environment`` and `account`'s environment are equal ignoring case, compared in
    /// place (a cache hit checks it; reading both would copy each out).
    package func hasEnvironment(ofAccount account: Account) -> Bool {
        account.hasEnvironment(equalToIgnoringCase: storage.environment)
    }

    /// The application's client ID.
    public var clientID: String {
        get { storage.clientID }
        set { uniqueStorage.clientID = newValue }
    }
    /// The tenant ID the token was issued in (for OpenID Connect providers, as the facade sets it).
    public var realm: String {
        get { storage.realm }
        set { uniqueStorage.realm = newValue }
    }
    /// The granted scopes, space-joined, in their original case (RFC 6749 §3.3).
    public var target: String {
        get { storage.target }
        set { uniqueStorage.target = newValue }
    }
    /// The access token itself. Never logged nor shown in ``description``.
    public var secret: String {
        get { storage.secret }
        set { uniqueStorage.secret = newValue }
    }
    /// The token type, `Bearer` unless the server said otherwise (RFC 6749 §7.1).
    public var tokenType: String {
        get { storage.tokenType }
        set { uniqueStorage.tokenType = newValue }
    }
    /// When the token was cached (an absolute instant; stored as epoch seconds, UTC).
    public var cachedAt: Date {
        get { storage.cachedAt }
        set { uniqueStorage.cachedAt = newValue }
    }
    /// When the token expires (stored as epoch seconds).
    public var expiresOn: Date {
        get { storage.expiresOn }
        set { uniqueStorage.expiresOn = newValue }
    }
    /// Entra ID's extended expiry (`ext_expires_in`), if the server sent one.
    public var extendedExpiresOn: Date? {
        get { storage.extendedExpiresOn }
        set { uniqueStorage.extendedExpiresOn = newValue }
    }
    /// When a proactive refresh should start (Entra ID's `refresh_in`), if the server sent one.
    public var refreshOn: Date? {
        get { storage.refreshOn }
        set { uniqueStorage.refreshOn = newValue }
    }
    /// Fields of the JSON entry this version does not model, kept so writing the entry back loses nothing.
    public var additionalFields: [String: JSONValue] {
        get { storage.additionalFields }
        set { uniqueStorage.additionalFields = newValue }
    }

    /// Creates an access token entry. Dates are absolute instants; they are stored as whole epoch seconds.
    public init(
        homeAccountID: String,
        environment: String,
        clientID: String,
        realm: String,
        target: String,
        secret: String,
        tokenType: String = "Bearer",
        cachedAt: Date,
        expiresOn: Date,
        extendedExpiresOn: Date? = nil,
        refreshOn: Date? = nil,
        additionalFields: [String: JSONValue] = [:]
    ) {
        storage = Storage(
            homeAccountID: homeAccountID, environment: environment, clientID: clientID, realm: realm, target: target,
            secret: secret, tokenType: tokenType, cachedAt: cachedAt, expiresOn: expiresOn,
            extendedExpiresOn: extendedExpiresOn, refreshOn: refreshOn, additionalFields: additionalFields)
    }

    /// Whether `other` is a copy of this entry that shares its storage (then they are equal).
    func sharesStorage(with other: AccessTokenEntry) -> Bool { storage === other.storage }

    /// Whether every field is equal (the same storage is equal without comparing).
    public static func == (lhs: AccessTokenEntry, rhs: AccessTokenEntry) -> Bool {
        let l = lhs.storage, r = rhs.storage
        if l === r { return true }
        return l.homeAccountID == r.homeAccountID && l.environment == r.environment && l.clientID == r.clientID
            && l.realm == r.realm && l.target == r.target && l.secret == r.secret && l.tokenType == r.tokenType
            && l.cachedAt == r.cachedAt && l.expiresOn == r.expiresOn && l.extendedExpiresOn == r.extendedExpiresOn
            && l.refreshOn == r.refreshOn && l.additionalFields == r.additionalFields
    }

    /// Hashes every field (equal entries hash alike).
    public func hash(into hasher: inout Hasher) {
        let s = storage
        hasher.combine(s.homeAccountID)
        hasher.combine(s.environment)
        hasher.combine(s.clientID)
        hasher.combine(s.realm)
        hasher.combine(s.target)
        hasher.combine(s.secret)
        hasher.combine(s.tokenType)
        hasher.combine(s.cachedAt)
        hasher.combine(s.expiresOn)
        hasher.combine(s.extendedExpiresOn)
        hasher.combine(s.refreshOn)
        hasher.combine(s.additionalFields)
    }

    /// The scopes of ``target``, compared case-insensitively.
    public var scopes: ScopeSet { ScopeSet(spaceDelimited: target) }

    /// The entry's key in MSAL's unified schema, lowercased:
    /// `<home_account_id>-<environment>-accesstoken-<client_id>-<realm>-<target>`.
    public var key: String {
        credentialKey(
            homeAccountID: homeAccountID, environment: environment, credentialType: "accesstoken",
            clientOrFamilyID: clientID, realm: realm, target: target)
    }

    /// The key, type and times, for ``description``.
    var describedFields: String {
        "key: \(key), tokenType: \(tokenType), cachedAt: \(cachedAt), expiresOn: \(expiresOn)"
    }
}

/// A cached refresh token: an entry of the `RefreshToken` section.
///
/// Source: MSAL's unified cache schema (`credential_type` `RefreshToken`, fields `home_account_id`,
/// `environment`, `client_id`, `family_id`, `secret`, `target`). The description never shows ``secret``.
public struct RefreshTokenEntry: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable,
    RedactedCredentialEntry {
    /// The home account ID.
    public var homeAccountID: String
    /// The host (with `:port` if any) of the authority that issued the token.
    public var environment: String
    /// The client ID the token was issued to.
    public var clientID: String
    /// The family ID (`"1"` for Microsoft's family of client IDs) when the server returned `foci`;
    /// such a token can be redeemed by every client of the family.
    public var familyID: String?
    /// The refresh token itself. Never logged nor shown in ``description``.
    public var secret: String
    /// The scopes of the response that produced it, space-joined (MSAL Python writes them; MSAL for
    /// iOS/macOS and .NET leave them out). It is part of the key when present.
    public var target: String?
    /// Fields of the JSON entry this version does not model (e.g. MSAL Python's
    /// `last_modification_time`), kept so writing the entry back loses nothing.
    public var additionalFields: [String: JSONValue]

    /// Creates a refresh token entry.
    public init(
        homeAccountID: String,
        environment: String,
        clientID: String,
        familyID: String? = nil,
        secret: String,
        target: String? = nil,
        additionalFields: [String: JSONValue] = [:]
    ) {
        self.homeAccountID = homeAccountID
        self.environment = environment
        self.clientID = clientID
        self.familyID = familyID
        self.secret = secret
        self.target = target
        self.additionalFields = additionalFields
    }

    /// The entry's key in MSAL's unified schema, lowercased:
    /// `<home_account_id>-<environment>-refreshtoken-<family_id or client_id>--<target or empty>`.
    ///
    /// The realm part is empty because a refresh token is valid across tenants. The target part is the
    /// lowercased ``target`` as MSAL Python writes it, or empty as MSAL for iOS/macOS and .NET write it
    /// when there is no target.
    public var key: String {
        credentialKey(
            homeAccountID: homeAccountID, environment: environment, credentialType: "refreshtoken",
            clientOrFamilyID: familyID ?? clientID, realm: "", target: target ?? "")
    }

    /// MSAL Python's `last_modification_time` (epoch seconds) from ``additionalFields``, if present;
    /// used to prefer the newest of several refresh tokens.
    public var lastModificationTime: Date? {
        additionalFields["last_modification_time"].flatMap(parseEpochSeconds)
    }

}

/// A cached ID token: an entry of the `IdToken` section.
///
/// Source: MSAL's unified cache schema (`credential_type` `IdToken`, fields `home_account_id`,
/// `environment`, `client_id`, `realm`, `secret`). The description never shows ``secret``.
public struct IDTokenEntry: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable,
    RedactedCredentialEntry {
    /// The home account ID.
    public var homeAccountID: String
    /// The host (with `:port` if any) of the authority that issued the token.
    public var environment: String
    /// The client ID (the token's `aud`).
    public var clientID: String
    /// The tenant ID the token was issued in.
    public var realm: String
    /// The raw ID token (a JWT). Never logged nor shown in ``description``.
    public var secret: String
    /// Fields of the JSON entry this version does not model, kept so writing the entry back loses nothing.
    public var additionalFields: [String: JSONValue]

    /// Creates an ID token entry.
    public init(
        homeAccountID: String,
        environment: String,
        clientID: String,
        realm: String,
        secret: String,
        additionalFields: [String: JSONValue] = [:]
    ) {
        self.homeAccountID = homeAccountID
        self.environment = environment
        self.clientID = clientID
        self.realm = realm
        self.secret = secret
        self.additionalFields = additionalFields
    }

    /// The entry's key in MSAL's unified schema, lowercased:
    /// `<home_account_id>-<environment>-idtoken-<client_id>-<realm>-` (empty target).
    public var key: String {
        credentialKey(
            homeAccountID: homeAccountID, environment: environment, credentialType: "idtoken",
            clientOrFamilyID: clientID, realm: realm, target: "")
    }

}

/// A cached account: an entry of the `Account` section, one per tenant the user signed in to.
///
/// Source: MSAL's unified cache schema (fields `home_account_id`, `environment`, `realm`,
/// `local_account_id`, `username`, `authority_type`, `account_source`, `name`, `given_name`,
/// `family_name`).
public struct AccountEntry: Sendable, Hashable {
    /// The home account ID.
    public var homeAccountID: String
    /// The host (with `:port` if any) of the authority.
    public var environment: String
    /// The tenant ID of this profile.
    public var realm: String
    /// The user's object ID in this tenant (`oid`), or the `sub` for OpenID Connect providers.
    public var localAccountID: String
    /// The username shown to people (`preferred_username`, `upn` or `email`), if known.
    public var username: String?
    /// `MSSTS` for Entra ID, `Other` for generic OpenID Connect providers (MSAL's values; `ADFS` also exists).
    public var authorityType: String
    /// How the account was created (MSAL Python writes the grant type, e.g. `authorization_code`).
    public var accountSource: String?
    /// The user's display name (`name` claim).
    public var name: String?
    /// The `given_name` claim.
    public var givenName: String?
    /// The `family_name` claim.
    public var familyName: String?
    /// Fields of the JSON entry this version does not model, kept so writing the entry back loses nothing.
    public var additionalFields: [String: JSONValue]

    /// `MSSTS`, the authority type of Entra ID accounts.
    public static let entraAuthorityType = "MSSTS"
    /// `Other`, the authority type of accounts from generic OpenID Connect providers.
    public static let otherAuthorityType = "Other"
    /// `ADFS`, the authority type of AD FS accounts (as MSAL for Python writes it).
    public static let adfsAuthorityType = "ADFS"

    /// Creates an account entry.
    public init(
        homeAccountID: String,
        environment: String,
        realm: String,
        localAccountID: String,
        username: String? = nil,
        authorityType: String = AccountEntry.entraAuthorityType,
        accountSource: String? = nil,
        name: String? = nil,
        givenName: String? = nil,
        familyName: String? = nil,
        additionalFields: [String: JSONValue] = [:]
    ) {
        self.homeAccountID = homeAccountID
        self.environment = environment
        self.realm = realm
        self.localAccountID = localAccountID
        self.username = username
        self.authorityType = authorityType
        self.accountSource = accountSource
        self.name = name
        self.givenName = givenName
        self.familyName = familyName
        self.additionalFields = additionalFields
    }

    /// The entry's key in MSAL's unified schema, lowercased: `<home_account_id>-<environment>-<realm>`.
    public var key: String { lowercasedKey(homeAccountID, environment, realm) }

    /// Whether every field has the same UTF-8 bytes as `other`'s (`==` holds canonically equivalent
    /// strings equal, as `String` does) and neither has additional fields: what a value assembled
    /// from one entry may be kept for the other by.
    func hasSameUTF8(as other: AccountEntry) -> Bool {
        additionalFields.isEmpty && other.additionalFields.isEmpty
            && sameBytes(homeAccountID, other.homeAccountID) && sameBytes(environment, other.environment) && sameBytes(realm, other.realm)
            && sameBytes(localAccountID, other.localAccountID) && sameBytes(username, other.username)
            && sameBytes(authorityType, other.authorityType) && sameBytes(accountSource, other.accountSource) && sameBytes(name, other.name)
            && sameBytes(givenName, other.givenName) && sameBytes(familyName, other.familyName)
    }
}

/// Per-application metadata: an entry of the `AppMetadata` section.
///
/// Source: MSAL's unified cache schema (fields `client_id`, `environment`, `family_id`).
public struct AppMetadataEntry: Sendable, Hashable {
    /// The application's client ID.
    public var clientID: String
    /// The host (with `:port` if any) of the authority.
    public var environment: String
    /// The family the app belongs to (`"1"`), if the server said so (`foci`).
    public var familyID: String?
    /// Fields of the JSON entry this version does not model, kept so writing the entry back loses nothing.
    public var additionalFields: [String: JSONValue]

    /// Creates an app metadata entry.
    public init(clientID: String, environment: String, familyID: String? = nil, additionalFields: [String: JSONValue] = [:]) {
        self.clientID = clientID
        self.environment = environment
        self.familyID = familyID
        self.additionalFields = additionalFields
    }

    /// The entry's key in MSAL's unified schema, lowercased: `appmetadata-<environment>-<client_id>`.
    public var key: String { lowercasedKey("appmetadata", environment, clientID) }
}

/// Any one cache entry, tagged with its section.
public enum CacheEntry: Sendable, Hashable, CustomStringConvertible {
    /// An `AccessToken` entry.
    case accessToken(AccessTokenEntry)
    /// A `RefreshToken` entry.
    case refreshToken(RefreshTokenEntry)
    /// An `IdToken` entry.
    case idToken(IDTokenEntry)
    /// An `Account` entry.
    case account(AccountEntry)
    /// An `AppMetadata` entry.
    case appMetadata(AppMetadataEntry)

    /// The entry's key in MSAL's unified schema (see each entry type), lowercased.
    public var key: String {
        switch self {
        case .accessToken(let entry): entry.key
        case .refreshToken(let entry): entry.key
        case .idToken(let entry): entry.key
        case .account(let entry): entry.key
        case .appMetadata(let entry): entry.key
        }
    }

    /// The section the entry belongs to.
    public var kind: CacheEntryKind {
        switch self {
        case .accessToken: .accessToken
        case .refreshToken: .refreshToken
        case .idToken: .idToken
        case .account: .account
        case .appMetadata: .appMetadata
        }
    }

    /// The home account ID, or `""` for app metadata.
    public var homeAccountID: String {
        switch self {
        case .accessToken(let entry): entry.homeAccountID
        case .refreshToken(let entry): entry.homeAccountID
        case .idToken(let entry): entry.homeAccountID
        case .account(let entry): entry.homeAccountID
        case .appMetadata: ""
        }
    }

    /// The environment (authority host) of the entry.
    public var environment: String {
        switch self {
        case .accessToken(let entry): entry.environment
        case .refreshToken(let entry): entry.environment
        case .idToken(let entry): entry.environment
        case .account(let entry): entry.environment
        case .appMetadata(let entry): entry.environment
        }
    }

    /// The client ID, or `""` for accounts.
    public var clientID: String {
        switch self {
        case .accessToken(let entry): entry.clientID
        case .refreshToken(let entry): entry.clientID
        case .idToken(let entry): entry.clientID
        case .account: ""
        case .appMetadata(let entry): entry.clientID
        }
    }

    /// The realm (tenant), or `""` for refresh tokens and app metadata.
    public var realm: String {
        switch self {
        case .accessToken(let entry): entry.realm
        case .idToken(let entry): entry.realm
        case .account(let entry): entry.realm
        case .refreshToken, .appMetadata: ""
        }
    }

    /// The kind and key; never a secret.
    public var description: String { "\(kind.rawValue)(\(key))" }
}

/// Names one entry to remove: its section and its key as stored (which may be another MSAL's key).
public struct CacheEntryRemoval: Sendable, Hashable {
    /// The section.
    public var kind: CacheEntryKind
    /// The key under which the entry is stored.
    public var key: String

    /// Creates a removal.
    public init(kind: CacheEntryKind, key: String) {
        self.kind = kind
        self.key = key
    }

    /// A removal of `entry` under its own ``CacheEntry/key``.
    public init(_ entry: CacheEntry) {
        self.init(kind: entry.kind, key: entry.key)
    }
}

/// Parses MSAL's epoch-second timestamps: a string of digits (what every MSAL writes) or a JSON number.
func parseEpochSeconds(_ value: JSONValue) -> Date? {
    guard let seconds = value.doubleValue, seconds.isFinite else { return nil }
    return Date(timeIntervalSince1970: seconds)
}

/// Formats a date as MSAL's epoch-second string (whole seconds, rounded down).
func formatEpochSeconds(_ date: Date) -> String {
    String(Int64(date.timeIntervalSince1970.rounded(.down)))
}
