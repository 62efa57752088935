public import Foundation
public import MSALCore

/// One of ADAL's keyed token cache items, as MSAL for iOS/macOS keeps them in the keychain beside
/// its own cache (the "legacy" cache): a `service` and an `account` naming it, and the item's data.
///
/// The key layout (MSAL `MSIDLegacyTokenCacheKey`, ADAL for iOS/macOS `ADTokenCacheKey`):
/// - `service` = `MSOpenTech.ADAL.1|<authority>|<resource>|<client ID>`, each of the three parts
///   trimmed, lowercased and base64url-encoded without padding; an empty or missing resource (the
///   multi-resource refresh token item) is written as the fixed text ``nilResourceMarker`` instead.
/// - `account` = the base64url of ADAL's user ID (the UPN), trimmed and lowercased.
/// - the keychain's `generic` attribute is ``libraryTag``.
///
/// ``value`` is the item's data as ADAL stored it: an `NSKeyedArchiver` archive of an
/// `ADTokenCacheItem` (read by ``ADALTokenCacheItem/init(archive:)``). Stores keep it byte for byte.
/// `description` shows the key, never the data.
public struct ADALKeyedItem: Sendable, Hashable, CustomStringConvertible {
    /// The item's service: `MSOpenTech.ADAL.1|…` (see the type's description).
    public var service: String
    /// The item's account: the base64url of the lowercased user ID.
    public var account: String
    /// The item's data: ADAL's archived `ADTokenCacheItem`. Holds tokens: a secret.
    public var value: Data

    /// ADAL's library tag, the first part of every service and the keychain `generic` attribute.
    public static let libraryTag = "MSOpenTech.ADAL.1"
    /// What ADAL writes in place of an empty resource: `CC3513A0-0E69-4B4D-97FC-DFB6C91EE132`
    /// (`MSID_LEGACY_CACHE_NIL_KEY`).
    public static let nilResourceMarker = "CC3513A0-0E69-4B4D-97FC-DFB6C91EE132"

    /// Creates an item from its stored key and data.
    public init(service: String, account: String, value: Data) {
        self.service = service
        self.account = account
        self.value = value
    }

    /// Creates an item under the key ADAL computes for an authority, resource, client ID and user ID.
    /// - Parameters:
    ///   - authority: the authority URL as ADAL kept it, e.g. `https://login.microsoftonline.com/contoso.com`.
    ///   - resource: the v1 resource; `nil` or empty for a multi-resource refresh token item.
    ///   - clientID: the application (client) ID.
    ///   - userID: ADAL's user ID (the UPN).
    ///   - value: the archived `ADTokenCacheItem`.
    public init(authority: String, resource: String?, clientID: String, userID: String, value: Data) {
        self.init(
            service: Self.service(authority: authority, resource: resource, clientID: clientID),
            account: Self.account(userID: userID), value: value)
    }

    /// ADAL's service for an authority, resource and client ID (see the type's description).
    /// - Returns: `MSOpenTech.ADAL.1|<b64url authority>|<b64url resource or the nil marker>|<b64url client ID>`.
    public static func service(authority: String, resource: String?, clientID: String) -> String {
        func encoded(_ text: String) -> String { Base64URL.encode(Data(normalized(text).utf8)) }
        let resourcePart = normalized(resource ?? "").isEmpty ? nilResourceMarker : encoded(resource!)
        return [libraryTag, encoded(authority), resourcePart, encoded(clientID)].joined(separator: "|")
    }

    /// ADAL's account for a user ID: the base64url (no padding) of the trimmed, lowercased user ID.
    public static func account(userID: String) -> String {
        Base64URL.encode(Data(normalized(userID).utf8))
    }

    /// The parts of a service, decoded.
    public struct ServiceParts: Sendable, Hashable {
        /// The authority (lowercased, as ADAL keyed it).
        public var authority: String
        /// The resource (lowercased); `nil` for the multi-resource refresh token item.
        public var resource: String?
        /// The client ID (lowercased).
        public var clientID: String

        /// Creates the parts.
        public init(authority: String, resource: String?, clientID: String) {
            self.authority = authority
            self.resource = resource
            self.clientID = clientID
        }
    }

    /// Decodes ``service``.
    /// - Returns: the authority, resource and client ID; `nil` when the service is not
    ///   `MSOpenTech.ADAL.1` followed by three base64url parts of UTF-8 text (an app-key suffix, which
    ///   ADAL added for brokered apps, also gives `nil`).
    public var serviceParts: ServiceParts? {
        let parts = service.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4, parts[0] == Self.libraryTag,
              let authority = Self.decodedText(parts[1]), !authority.isEmpty,
              let clientID = Self.decodedText(parts[3]), !clientID.isEmpty
        else { return nil }
        var resource: String?
        if parts[2] != Self.nilResourceMarker {
            guard let text = Self.decodedText(parts[2]) else { return nil }
            resource = text.isEmpty ? nil : text
        }
        return ServiceParts(authority: authority, resource: resource, clientID: clientID)
    }

    /// Decodes ``account``: the user ID; `nil` when it is not base64url of UTF-8 text.
    public var userID: String? {
        Self.decodedText(account).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `ADALKeyedItem(<service>, <account>, <n> bytes)`: no token. (The account is PII but not a secret.)
    public var description: String { "ADALKeyedItem(\(service), \(account), \(value.count) bytes)" }

    private static func normalized(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }

    private static func decodedText(_ part: String) -> String? {
        guard !part.isEmpty, let data = Base64URL.decode(part) else { return nil }
        return String(data: data, encoding: .utf8)
    }
}

/// A token cache store that also keeps ADAL's keyed items (``ADALKeyedItem``) beside its MSAL
/// entries, in its own access group: the place MSAL for iOS/macOS reads ADAL's items from when it
/// looks accounts up by username (they share the keychain access group `com.microsoft.adalcache`).
///
/// Conformers: ``InMemoryTokenCacheStore``, ``JSONFileTokenCacheStore``, and the SQLite, encrypted
/// file and keyring stores. ``ADALKeyedTokenCache`` reads these items for the migration; nothing in
/// swift-msal writes them during sign-ins. ``setADALKeyedItem(_:)`` exists to bring items over
/// (e.g. exported from a Mac's keychain) and for tests.
///
/// Guarantees: the same as the store's for its entries (atomic per call, other processes, no
/// partial write); keyed items never appear in ``TokenCacheStore/readAll()``'s entries, and MSAL
/// writes never remove them.
public protocol ADALKeyedItemStore: TokenCacheStore {
    /// Every keyed item of this store's access group.
    /// - Returns: the items, sorted by service then account.
    /// - Throws: ``MSALError`` as the store's ``TokenCacheStore/readAll()`` does.
    func adalKeyedItems() throws(MSALError) -> [ADALKeyedItem]

    /// Stores an item, replacing the one with the same service and account.
    /// - Throws: ``MSALError`` as the store's ``TokenCacheStore/apply(_:)`` does; then nothing was stored.
    func setADALKeyedItem(_ item: ADALKeyedItem) throws(MSALError)

    /// Removes the item with this service and account, if any.
    /// - Throws: ``MSALError`` as the store's ``TokenCacheStore/apply(_:)`` does.
    func removeADALKeyedItem(service: String, account: String) throws(MSALError)
}

/// How the file-based stores and the in-memory store keep keyed items: a section of the access
/// group's MSAL JSON document, ``sectionName``, an object of services, each an object of accounts
/// whose value is the item's data in standard base64. Other MSALs keep unknown sections, so the
/// items travel with the file untouched.
public enum ADALKeyedItemSection {
    /// The section's name: `swift-msal.ADALKeyedItems`.
    public static let sectionName = "swift-msal.ADALKeyedItems"

    /// The items in `contents`' section.
    /// - Returns: the items sorted by service then account. A member whose value is not a base64
    ///   string is returned with empty data, so that a reader reports it as malformed rather than
    ///   losing sight of it; a section that is not an object of objects gives no items.
    public static func items(in contents: TokenCacheContents) -> [ADALKeyedItem] {
        guard case .object(let services)? = contents.unknownSections[sectionName] else { return [] }
        var items: [ADALKeyedItem] = []
        for (service, accounts) in services {
            guard case .object(let byAccount) = accounts else { continue }
            for (account, value) in byAccount {
                let data = value.stringValue.flatMap { Data(base64Encoded: $0) } ?? Data()
                items.append(ADALKeyedItem(service: service, account: account, value: data))
            }
        }
        return items.sorted { ($0.service, $0.account) < ($1.service, $1.account) }
    }

    /// Stores `item` in `contents`' section, replacing the one with its key.
    public static func set(_ item: ADALKeyedItem, in contents: inout TokenCacheContents) {
        var services = contents.unknownSections[sectionName]?.objectValue ?? [:]
        var accounts = services[item.service]?.objectValue ?? [:]
        accounts[item.account] = .string(item.value.base64EncodedString())
        services[item.service] = .object(accounts)
        contents.unknownSections[sectionName] = .object(services)
    }

    /// Removes the item with this key from `contents`' section (and the section when it empties).
    /// - Returns: whether an item was removed.
    @discardableResult
    public static func remove(service: String, account: String, from contents: inout TokenCacheContents) -> Bool {
        guard var services = contents.unknownSections[sectionName]?.objectValue,
              var accounts = services[service]?.objectValue, accounts.removeValue(forKey: account) != nil
        else { return false }
        services[service] = accounts.isEmpty ? nil : .object(accounts)
        contents.unknownSections[sectionName] = services.isEmpty ? nil : .object(services)
        return true
    }
}

/// A store that keeps each access group as one MSAL JSON document and changes it whole under its
/// lock (the in-memory, JSON file and encrypted file stores): its ADAL keyed items live in the
/// group's section ``ADALKeyedItemSection/sectionName``, and ``ADALKeyedItemStore`` comes with it.
public protocol DocumentTokenCacheStore: ADALKeyedItemStore {
    /// Under the store's lock: reads this group's contents, lets `body` change them, and when `body`
    /// returns `true` stores them atomically (as ``TokenCacheStore/apply(_:)`` stores a change).
    /// - Throws: ``MSALError`` as ``TokenCacheStore/apply(_:)`` does; then nothing was stored.
    func updateContents(_ body: (inout TokenCacheContents) -> Bool) throws(MSALError)
}

extension DocumentTokenCacheStore {
    /// The keyed items of the group's section, sorted by service then account.
    /// - Throws: as ``TokenCacheStore/readAll()``.
    public func adalKeyedItems() throws(MSALError) -> [ADALKeyedItem] {
        ADALKeyedItemSection.items(in: try readAll())
    }

    /// Stores the item in the group's section (one ``updateContents(_:)``).
    /// - Throws: as ``TokenCacheStore/apply(_:)``.
    public func setADALKeyedItem(_ item: ADALKeyedItem) throws(MSALError) {
        try updateContents { ADALKeyedItemSection.set(item, in: &$0); return true }
    }

    /// Removes the item from the group's section; nothing is written when there is none.
    /// - Throws: as ``TokenCacheStore/apply(_:)``.
    public func removeADALKeyedItem(service: String, account: String) throws(MSALError) {
        try updateContents { ADALKeyedItemSection.remove(service: service, account: account, from: &$0) }
    }
}

extension InMemoryTokenCacheStore: DocumentTokenCacheStore {
    /// Runs `body` on the contents under the lock; the stamp moves when it returns `true`. Never throws.
    public func updateContents(_ body: (inout TokenCacheContents) -> Bool) throws(MSALError) {
        update(body)
    }
}
