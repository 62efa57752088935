public import Foundation
public import MSALCore

/// Access groups: the partitions of a token cache store that apps of one publisher share.
///
/// Every ``TokenCacheStore`` is partitioned by access group. Apps (different client IDs, separate
/// processes) that open a store with the same group share its accounts and refresh tokens (family
/// refresh tokens included); apps with different groups see nothing of each other's entries, even
/// in one file or one keyring.
///
/// Source: MSAL for iOS/macOS keychain sharing groups (`MSALCacheConfig.keychainSharingGroup`,
/// default `com.microsoft.adalcache`).
public enum TokenCacheAccessGroup {
    /// The group every store uses unless told otherwise: `com.microsoft.adalcache`, the keychain
    /// group MSAL for iOS/macOS and ADAL share by default.
    public static let `default` = "com.microsoft.adalcache"

    /// The longest access group accepted, in UTF-8 bytes.
    public static let maximumLength = 255

    /// Checks that `group` can name an access group: not empty, at most ``maximumLength`` UTF-8 bytes,
    /// no control characters and no `/` (groups name keyring attributes and JSON members).
    /// - Returns: `group` unchanged.
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` saying what is wrong.
    @discardableResult
    public static func validate(_ group: String) throws(MSALError) -> String {
        guard !group.isEmpty else {
            throw .internal(.invalidParameter, "The access group is empty; leave it out to use \(Self.default), or name one such as com.contoso.shared.")
        }
        guard group.utf8.count <= maximumLength else {
            throw .internal(.invalidParameter, "The access group is \(group.utf8.count) bytes long; at most \(maximumLength) are allowed.")
        }
        guard !group.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == "/" }) else {
            throw .internal(.invalidParameter, "The access group contains a control character or '/'; use a reverse-DNS name such as com.contoso.shared.")
        }
        return group
    }
}

/// One MSAL JSON document holding several access groups: the default group in MSAL's top-level
/// sections (so MSAL Python, MSAL .NET and the Azure CLI read and write it as their own cache), every
/// other group in the top-level section ``sectionName``, an object of MSAL JSON documents by group.
/// Other MSALs keep unknown top-level sections, so they carry the other groups along untouched.
///
/// Used by the file-based stores (``JSONFileTokenCacheStore`` and the encrypted file), which parse a
/// file once per change: read a group with ``contents(accessGroup:)``, write it back with
/// ``replace(accessGroup:with:)`` and ``serialized()``.
public struct AccessGroupPartitionedJSON: Sendable {
    /// The top-level section that holds the groups other than ``TokenCacheAccessGroup/default``.
    public static let sectionName = "swift-msal.AccessGroups"

    /// The whole document: MSAL's sections, unknown sections, and ``sectionName``.
    private var root: [String: JSONValue]
    /// The groups other than the default one, by name.
    private var groups: [String: [String: JSONValue]]

    /// Parses a document; `nil`, empty or all-whitespace data is an empty document.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when `data` is not a JSON object, or the
    ///   groups section is not an object of objects.
    public init(data: Data?) throws(MSALError) {
        guard let data, !data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) else {
            root = [:]
            groups = [:]
            return
        }
        guard case .object(var root)? = JSONValue(parsing: data) else {
            throw .internal(.cacheError, "The token cache is not MSAL JSON (expected a JSON object of sections). Delete the cache file to start over; users will sign in again.")
        }
        var groups: [String: [String: JSONValue]] = [:]
        if let section = root.removeValue(forKey: Self.sectionName) {
            guard case .object(let byName) = section else { throw Self.malformedSection }
            for (name, value) in byName {
                guard case .object(let document) = value else { throw Self.malformedSection }
                groups[name] = document
            }
        }
        self.root = root
        self.groups = groups
    }

    /// The entries of `accessGroup`; the section of other groups is never part of them.
    /// - Returns: that group's contents (empty when the document has none).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when a known section of the group is not an object.
    public func contents(accessGroup: String) throws(MSALError) -> TokenCacheContents {
        if accessGroup == TokenCacheAccessGroup.default { return try TokenCacheContents(msalJSONObject: root) }
        guard let document = groups[accessGroup] else { return TokenCacheContents() }
        return try TokenCacheContents(msalJSONObject: document)
    }

    /// The access groups the document holds: ``TokenCacheAccessGroup/default`` (its sections are the
    /// document's top level, possibly empty) and every group of ``sectionName``, sorted.
    public var accessGroups: [String] {
        ([TokenCacheAccessGroup.default] + groups.keys.filter { $0 != TokenCacheAccessGroup.default }).sorted()
    }

    /// Replaces the entries of `accessGroup` with `contents`; other groups and unknown sections stay.
    public mutating func replace(accessGroup: String, with contents: TokenCacheContents) {
        if accessGroup == TokenCacheAccessGroup.default {
            root = contents.msalJSONObject()
        } else {
            groups[accessGroup] = contents.msalJSONObject()
        }
    }

    /// The document as MSAL JSON: UTF-8, sorted keys, indented, with ``sectionName`` when any group
    /// other than the default one exists. A new document has MSAL's five sections.
    /// - Returns: the JSON text.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` if a preserved value cannot be encoded.
    public func serialized() throws(MSALError) -> Data {
        var document = root.isEmpty ? TokenCacheContents().msalJSONObject() : root
        if !groups.isEmpty { document[Self.sectionName] = .object(groups.mapValues { .object($0) }) }
        return try encodeJSON(.object(document), pretty: true)
    }

    private static var malformedSection: MSALError {
        .internal(.cacheError, "The token cache's \(sectionName) section is not a JSON object of access groups. Delete the cache file to start over; users will sign in again.")
    }
}
