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
/// Used by the file-based stores (``JSONFileTokenCacheStore`` and the encrypted file).
public enum AccessGroupPartitionedJSON {
    /// The top-level section that holds the groups other than ``TokenCacheAccessGroup/default``.
    public static let sectionName = "swift-msal.AccessGroups"

    /// The contents of `accessGroup` in the document `data` (`nil` or empty: no document yet).
    /// - Returns: that group's entries; the section of other groups is never part of them.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when `data` is not MSAL JSON, or the groups
    ///   section or the group's document is not a JSON object.
    public static func contents(in data: Data?, accessGroup: String) throws(MSALError) -> TokenCacheContents {
        guard let data else { return TokenCacheContents() }
        if accessGroup == TokenCacheAccessGroup.default {
            var contents = try TokenCacheContents(msalJSON: data)
            contents.unknownSections[sectionName] = nil
            return contents
        }
        guard let group = try groups(in: data)[accessGroup] else { return TokenCacheContents() }
        return try TokenCacheContents(msalJSON: encodeJSON(group, pretty: false))
    }

    /// The document `data` with the entries of `accessGroup` replaced by `contents`; every other group
    /// and every unknown section is kept.
    /// - Returns: the new document (MSAL JSON, UTF-8, sorted keys).
    /// - Throws: as ``contents(in:accessGroup:)``.
    public static func replacing(accessGroup: String, with contents: TokenCacheContents, in data: Data?) throws(MSALError) -> Data {
        let isEmpty = data.map { $0.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 } } ?? true
        var groups = isEmpty ? [:] : try groups(in: data!)
        if accessGroup == TokenCacheAccessGroup.default {
            var contents = contents
            contents.unknownSections[sectionName] = groups.isEmpty ? nil : .object(groups)
            return try contents.msalJSON()
        }
        var root = isEmpty ? try decodeObject(TokenCacheContents().msalJSON()) : try decodeObject(data!)
        groups[accessGroup] = try decodeJSONValue(contents.msalJSON())
        root[sectionName] = .object(groups)
        return try encodeJSON(.object(root), pretty: true)
    }

    private static func groups(in data: Data) throws(MSALError) -> [String: JSONValue] {
        guard let section = try decodeObject(data)[sectionName] else { return [:] }
        guard case .object(let groups) = section, groups.values.allSatisfy({ if case .object = $0 { true } else { false } }) else {
            throw .internal(.cacheError, "The token cache's \(sectionName) section is not a JSON object of access groups. Delete the cache file to start over; users will sign in again.")
        }
        return groups
    }

    private static func decodeObject(_ data: Data) throws(MSALError) -> [String: JSONValue] {
        guard case .object(let root) = try decodeJSONValue(data) else {
            throw notMSALJSON
        }
        return root
    }

    private static func decodeJSONValue(_ data: Data) throws(MSALError) -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch _ {
            throw notMSALJSON
        }
    }

    private static var notMSALJSON: MSALError {
        .internal(.cacheError, "The token cache is not MSAL JSON (expected a JSON object of sections). Delete the cache file to start over; users will sign in again.")
    }
}
