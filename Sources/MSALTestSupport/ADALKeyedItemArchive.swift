public import Foundation
public import MSALCache
public import MSALCore

/// Writes ADAL keyed items as ADAL for iOS/macOS wrote them, for tests and `msal dev-provider`: an
/// `NSKeyedArchiver` binary property list whose root object (key `root`) has the class name
/// `ADTokenCacheItem` and whose `userInformation` has the class name `ADUserInformation`, with the
/// keys of ADAL's `ADTokenCacheItem encodeWithCoder:` (see ``ADALTokenCacheItem``).
///
/// swift-corelibs-foundation writes Swift class names (`Module.Class`) and ignores
/// `NSKeyedArchiver.setClassName(_:for:)`, so the archive is written as an XML property list, its
/// two class names replaced, and converted to the binary format ADAL used.
public enum ADALKeyedItemArchive {
    /// The archive of `item`.
    /// - Returns: a binary property list (`bplist00`).
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` if Foundation cannot write it.
    public static func archive(_ item: ADALTokenCacheItem) throws(MSALError) -> Data {
        let archiver = NSKeyedArchiver(requiringSecureCoding: true)
        archiver.outputFormat = .xml
        archiver.encode(ADALArchiveItemWriter(item), forKey: NSKeyedArchiveRootObjectKey)
        archiver.finishEncoding()
        var xml = String(decoding: archiver.encodedData, as: UTF8.self)
        for (writer, name) in [(String(reflecting: ADALArchiveItemWriter.self), "ADTokenCacheItem"), (String(reflecting: ADALArchiveUserWriter.self), "ADUserInformation")] {
            xml = xml.replacingOccurrences(of: "<string>\(writer)</string>", with: "<string>\(name)</string>")
        }
        do {
            let plist = try PropertyListSerialization.propertyList(from: Data(xml.utf8), format: nil)
            return try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
        } catch {
            throw .internal(.invalidParameter, "The ADAL token cache item could not be archived.")
        }
    }

    /// The keyed item ADAL stored for `item` under its authority, resource, client ID and `userID`.
    /// - Throws: as ``archive(_:)``; `.internal(.invalidParameter)` when the item has no authority
    ///   or client ID.
    public static func keyedItem(_ item: ADALTokenCacheItem, userID: String) throws(MSALError) -> ADALKeyedItem {
        guard let authority = item.authority, let clientID = item.clientID else {
            throw .internal(.invalidParameter, "An ADAL keyed item needs an authority and a client ID.")
        }
        return ADALKeyedItem(authority: authority, resource: item.resource, clientID: clientID, userID: userID, value: try archive(item))
    }
}

/// Encodes an item as ADAL did (top-level: Foundation names archived classes by their top-level name).
final class ADALArchiveItemWriter: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }
    let item: ADALTokenCacheItem
    init(_ item: ADALTokenCacheItem) { self.item = item }
    required init?(coder: NSCoder) { nil }

    func encode(with coder: NSCoder) {
        for (key, value) in [
            ("resource", item.resource), ("authority", item.authority), ("clientId", item.clientID), ("familyId", item.familyID),
            ("accessToken", item.accessToken), ("accessTokenType", item.accessTokenType), ("refreshToken", item.refreshToken),
            ("homeAccountId", item.homeAccountID),
        ] {
            if let value { coder.encode(NSString(string: value), forKey: key) }
        }
        if let expiresOn = item.expiresOn { coder.encode(NSDate(timeIntervalSinceReferenceDate: expiresOn.timeIntervalSinceReferenceDate), forKey: "expiresOn") }
        if item.rawIDToken != nil || item.userID != nil { coder.encode(ADALArchiveUserWriter(item), forKey: "userInformation") }
        let server = NSMutableDictionary()
        for (key, value) in item.additionalServer { server[NSString(string: key)] = NSString(string: value) }
        coder.encode(server, forKey: "additionalServer")
    }
}

/// Encodes `userInformation` as ADAL did.
final class ADALArchiveUserWriter: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }
    let item: ADALTokenCacheItem
    init(_ item: ADALTokenCacheItem) { self.item = item }
    required init?(coder: NSCoder) { nil }

    func encode(with coder: NSCoder) {
        if let raw = item.rawIDToken { coder.encode(NSString(string: raw), forKey: "rawIdToken") }
        if let userID = item.userID { coder.encode(NSString(string: userID), forKey: "userId") }
        if let displayable = item.isUserIDDisplayable { coder.encode(displayable, forKey: "userIdDisplayable") }
    }
}
