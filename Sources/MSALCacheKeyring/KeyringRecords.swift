internal import Foundation
internal import MSALCache
internal import MSALCore

/// The section and stored key of one keyring item: what the `kind` and `key` attributes hold.
struct ItemKey: Sendable, Hashable {
    /// The section name (`AccessToken`, ...) or ``KeyringItemLayout/journalKind``.
    var kind: String
    /// The stored key.
    var key: String

    /// The attributes that find every item of this key in `accessGroup` (with the store's `extra`
    /// attributes).
    func searchAttributes(accessGroup: String, extra: [String: String] = [:]) -> [String: String] {
        extra.merging([
            KeyringItemLayout.schemaAttribute: KeyringItemLayout.tokenCacheSchema,
            KeyringItemLayout.Attribute.accessGroup: accessGroup,
            KeyringItemLayout.Attribute.kind: kind,
            KeyringItemLayout.Attribute.key: key,
        ]) { $1 }
    }

    /// The journal's key (one journal per access group).
    static let journal = ItemKey(kind: KeyringItemLayout.journalKind, key: "journal")
}

/// The secret of a token cache item: `{"kind": …, "key": …, "entry": <MSAL JSON>}` (see
/// ``KeyringItemLayout``), or the journal's `{"kind": "swift-msal.Journal", "key": "journal",
/// "before": [...]}` (see ``JournalRecord``).
struct ItemRecord: Sendable, Equatable {
    /// Section and stored key.
    var itemKey: ItemKey
    /// The entry's MSAL JSON (any JSON value for an item this version cannot read).
    var entry: JSONValue

    /// A record of any section, key and entry value.
    init(itemKey: ItemKey, entry: JSONValue) {
        self.itemKey = itemKey
        self.entry = entry
    }

    /// The record of `entry` under its own key.
    init(_ entry: CacheEntry) {
        itemKey = ItemKey(kind: entry.kind.rawValue, key: entry.key)
        self.entry = .object(entry.msalJSONObject)
    }

    /// Decodes a secret; `nil` when it is not a JSON object with string `kind` and `key`.
    init?(decoding secret: [UInt8]) {
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(secret)),
              let kind = object["kind"]?.stringValue, let key = object["key"]?.stringValue else { return nil }
        itemKey = ItemKey(kind: kind, key: key)
        entry = object["entry"] ?? .null
    }

    /// The secret bytes (compact UTF-8 JSON, sorted keys).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the entry holds a number JSON cannot
    ///   represent.
    func encoded() throws(MSALError) -> [UInt8] {
        try encodeJSON(.object(["kind": .string(itemKey.kind), "key": .string(itemKey.key), "entry": entry]))
    }

    /// The readable entry, or `nil` (unknown section, or an entry MSAL's schema rules refuse).
    var cacheEntry: CacheEntry? {
        guard let kind = CacheEntryKind(rawValue: itemKey.kind), case .object(let object) = entry else { return nil }
        return try? CacheEntry(kind: kind, msalJSONObject: object)
    }

    /// The item's attributes: the full layout for a known section, else only schema, group, kind and
    /// key; plus the store's `extra` attributes.
    func attributes(accessGroup: String, extra: [String: String] = [:]) -> [String: String] {
        guard let kind = CacheEntryKind(rawValue: itemKey.kind) else { return itemKey.searchAttributes(accessGroup: accessGroup, extra: extra) }
        return extra.merging(KeyringItemLayout.attributes(kind: kind, key: itemKey.key, msalJSONObject: entry.objectValue ?? [:], accessGroup: accessGroup)) { $1 }
    }
}

/// The undo journal of one change: for every key the change touches, the secrets of the items that
/// held it before (none for a new key). Written before the change's first item, removed after its
/// last; whoever finds it restores those items, which puts the store back to the state before the
/// interrupted change.
struct JournalRecord: Sendable, Equatable {
    /// The items of one key before the change.
    struct Image: Sendable, Equatable {
        /// The key.
        var itemKey: ItemKey
        /// The secrets of the items that held it (usually zero or one).
        var secrets: [[UInt8]]
    }

    /// One image per touched key.
    var images: [Image]

    /// Encodes the journal as an item secret: secrets are base64 so that any bytes survive.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` if encoding fails.
    func encoded() throws(MSALError) -> [UInt8] {
        let before: [JSONValue] = images.map { image in
            .object([
                "kind": .string(image.itemKey.kind),
                "key": .string(image.itemKey.key),
                "secrets": .array(image.secrets.map { .string(Data($0).base64EncodedString()) }),
            ])
        }
        return try encodeJSON(.object([
            "kind": .string(ItemKey.journal.kind), "key": .string(ItemKey.journal.key), "before": .array(before),
        ]))
    }

    /// Decodes a journal secret.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when it is not a journal of this layout.
    init(decoding secret: [UInt8]) throws(MSALError) {
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(secret)),
              object["kind"]?.stringValue == ItemKey.journal.kind, case .array(let before)? = object["before"] else {
            throw Self.unreadable
        }
        var images: [Image] = []
        for value in before {
            guard case .object(let image) = value, let kind = image["kind"]?.stringValue, let key = image["key"]?.stringValue,
                  case .array(let secrets)? = image["secrets"] else { throw Self.unreadable }
            var decoded: [[UInt8]] = []
            for secret in secrets {
                guard let text = secret.stringValue, let data = Data(base64Encoded: text) else { throw Self.unreadable }
                decoded.append([UInt8](data))
            }
            images.append(Image(itemKey: ItemKey(kind: kind, key: key), secrets: decoded))
        }
        self.images = images
    }

    /// Creates a journal.
    init(images: [Image]) {
        self.images = images
    }

    private static var unreadable: MSALError {
        .internal(
            .cacheError,
            "The keyring holds a token cache change journal (item kind \(KeyringItemLayout.journalKind)) that this version cannot read, so an interrupted change cannot be undone. Remove the access group's items (secret-tool clear xdg:schema \(KeyringItemLayout.tokenCacheSchema) access_group <group>) to start over; users will sign in again.")
    }
}

/// Compact UTF-8 JSON with sorted keys and unescaped slashes (as MSAL Python writes URLs).
func encodeJSON(_ value: JSONValue) throws(MSALError) -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    do {
        return [UInt8](try encoder.encode(value))
    } catch {
        throw .internal(.cacheError, "A token cache entry could not be encoded as JSON (a field holds a value JSON cannot represent).")
    }
}
