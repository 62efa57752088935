public import Foundation
public import MSALCore

/// The content of one ADAL keyed item (``ADALKeyedItem/value``): ADAL for iOS/macOS's
/// `ADTokenCacheItem` (and MSAL's `MSIDLegacyTokenCacheItem`, which writes the same), stored as an
/// `NSKeyedArchiver` archive whose root object (key `root`) has the class name `ADTokenCacheItem`.
///
/// The archive's keys (ADAL `ADTokenCacheItem encodeWithCoder:`, MSAL `MSIDLegacyTokenCacheItem`):
/// `resource`, `authority`, `clientId`, `familyId`, `accessToken`, `accessTokenType`, `refreshToken`,
/// `sessionKey` (data), `expiresOn` (a date), `userInformation` (an `ADUserInformation` with
/// `rawIdToken`, and on iOS `userId` and `userIdDisplayable`), `additionalServer` (a dictionary:
/// `client_info`, `ext_expires_on`, `spe_info`, …) and, from MSAL, `homeAccountId`.
///
/// `description` names the authority, resource and client ID only.
public struct ADALTokenCacheItem: Sendable, Hashable, CustomStringConvertible {
    /// The v1 resource (`resource`); `nil` for a multi-resource refresh token item.
    public var resource: String?
    /// The authority (`authority`), e.g. `https://login.microsoftonline.com/contoso.com`.
    public var authority: String?
    /// The client ID (`clientId`).
    public var clientID: String?
    /// The FOCI family (`familyId`), e.g. `1`; `nil` when the refresh token is not a family one.
    public var familyID: String?
    /// The access token (`accessToken`). A secret.
    public var accessToken: String?
    /// The access token's type (`accessTokenType`), normally `Bearer`.
    public var accessTokenType: String?
    /// The refresh token (`refreshToken`). A secret.
    public var refreshToken: String?
    /// When the access token expires (`expiresOn`).
    public var expiresOn: Date?
    /// The raw ID token of `userInformation` (`rawIdToken`).
    public var rawIDToken: String?
    /// The user ID `userInformation` kept (`userId`; ADAL for iOS writes it), if any.
    public var userID: String?
    /// Whether that user ID is displayable (`userIdDisplayable`), if kept.
    public var isUserIDDisplayable: Bool?
    /// The text values of `additionalServer` (e.g. `client_info`); other values are left out.
    public var additionalServer: [String: String]
    /// MSAL's home account ID (`homeAccountId`), if kept.
    public var homeAccountID: String?

    /// Creates an item (all fields optional).
    public init(
        resource: String? = nil, authority: String? = nil, clientID: String? = nil, familyID: String? = nil,
        accessToken: String? = nil, accessTokenType: String? = nil, refreshToken: String? = nil, expiresOn: Date? = nil,
        rawIDToken: String? = nil, userID: String? = nil, isUserIDDisplayable: Bool? = nil,
        additionalServer: [String: String] = [:], homeAccountID: String? = nil
    ) {
        self.resource = resource
        self.authority = authority
        self.clientID = clientID
        self.familyID = familyID
        self.accessToken = accessToken
        self.accessTokenType = accessTokenType
        self.refreshToken = refreshToken
        self.expiresOn = expiresOn
        self.rawIDToken = rawIDToken
        self.userID = userID
        self.isUserIDDisplayable = isUserIDDisplayable
        self.additionalServer = additionalServer
        self.homeAccountID = homeAccountID
    }

    /// The class names an archive may give the item (ADAL's, and MSAL's own when it did not map it).
    public static let itemClassNames = ["ADTokenCacheItem", "MSIDLegacyTokenCacheItem"]
    /// The class names an archive may give `userInformation`.
    public static let userInformationClassNames = ["ADUserInformation", "MSIDUserInformation"]

    /// Reads an archived item (binary or XML property list). Only strings, numbers, booleans,
    /// dates, data, dictionaries and the class names above are accepted.
    ///
    /// The property list is parsed by Foundation's `PropertyListSerialization`; the object graph of
    /// the keyed archive is walked here, with every reference checked, rather than by
    /// `NSKeyedUnarchiver`, which in swift-corelibs-foundation stops the process on some damaged
    /// archives (an out-of-range or mistyped reference) instead of reporting an error.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the data is not a keyed archive, its root
    ///   is not an `ADTokenCacheItem`, a reference is broken, or a field has the wrong type. The
    ///   message names no value.
    public init(archive: Data) throws(MSALError) {
        let graph = try KeyedArchiveGraph(archive)
        let root = try graph.object(graph.root, classNames: Self.itemClassNames, what: "the root object")
        var item = ADALTokenCacheItem(
            resource: try graph.string(root, "resource"), authority: try graph.string(root, "authority"),
            clientID: try graph.string(root, "clientId"), familyID: try graph.string(root, "familyId"),
            accessToken: try graph.string(root, "accessToken"), accessTokenType: try graph.string(root, "accessTokenType"),
            refreshToken: try graph.string(root, "refreshToken"), expiresOn: try graph.date(root, "expiresOn"),
            homeAccountID: try graph.string(root, "homeAccountId"))
        if let reference = root["userInformation"], let user = try graph.resolve(reference) {
            let fields = try graph.object(user, classNames: Self.userInformationClassNames, what: "userInformation")
            item.rawIDToken = try graph.string(fields, "rawIdToken")
            item.userID = try graph.string(fields, "userId")
            if let displayable = fields["userIdDisplayable"] {
                guard let flag = displayable as? Bool else { throw KeyedArchiveGraph.malformed("userIdDisplayable is not a boolean") }
                item.isUserIDDisplayable = flag
            }
        }
        if let reference = root["additionalServer"], let server = try graph.resolve(reference) {
            for (key, value) in try graph.dictionary(server, what: "additionalServer") {
                if let text = value as? String { item.additionalServer[key] = text }
            }
        }
        self = item
    }

    /// `ADALTokenCacheItem(authority: …, resource: …, clientID: …)`: no token, no user.
    public var description: String {
        "ADALTokenCacheItem(authority: \(authority ?? "-"), resource: \(resource ?? "-"), clientID: \(clientID ?? "-"))"
    }
}

/// The object graph of an `NSKeyedArchiver` archive: `$objects`, and `$top`'s `root` reference.
///
/// References (`CF$UID`) are opaque objects once parsed, so the property list is parsed, written
/// back as XML, the reference key renamed (XML escapes `<` inside strings, so only real keys match)
/// and parsed again: references become one-key dictionaries holding the index.
struct KeyedArchiveGraph {
    /// The renamed reference key.
    static let referenceKey = "swift-msal$UID"

    let objects: [Any]
    let root: Any

    static func malformed(_ detail: String) -> MSALError {
        .internal(.cacheError, "The item is not a well-formed archived ADTokenCacheItem: \(detail).")
    }

    init(_ data: Data) throws(MSALError) {
        let plist: Any
        do {
            let parsed = try PropertyListSerialization.propertyList(from: data, format: nil)
            let xml = try PropertyListSerialization.data(fromPropertyList: parsed, format: .xml, options: 0)
            let renamed = String(decoding: xml, as: UTF8.self)
                .replacingOccurrences(of: "<key>CF$UID</key>", with: "<key>\(Self.referenceKey)</key>")
            plist = try PropertyListSerialization.propertyList(from: Data(renamed.utf8), format: nil)
        } catch {
            throw .internal(.cacheError, "The item is not a keyed archive (NSKeyedArchiver property list).")
        }
        guard let top = plist as? [String: Any], top["$archiver"] as? String == "NSKeyedArchiver",
              let objects = top["$objects"] as? [Any], let roots = top["$top"] as? [String: Any], let root = roots["root"]
        else {
            throw .internal(.cacheError, "The item is not a keyed archive (NSKeyedArchiver property list).")
        }
        self.objects = objects
        self.root = root
    }

    /// The object a reference points to; `nil` for the archive's null (`$null`).
    func resolve(_ reference: Any) throws(MSALError) -> Any? {
        guard let wrapper = reference as? [String: Any], wrapper.count == 1, let index = (wrapper[Self.referenceKey] as? NSNumber)?.intValue
        else { throw Self.malformed("a field is not a reference") }
        guard objects.indices.contains(index) else { throw Self.malformed("a reference points outside the archive") }
        let object = objects[index]
        if index == 0, object as? String == "$null" { return nil }
        return object
    }

    /// The class name of an encoded object (its `$class` reference's `$classname`).
    func className(_ fields: [String: Any]) throws(MSALError) -> String {
        guard let reference = fields["$class"], let description = try resolve(reference) as? [String: Any],
              let name = description["$classname"] as? String
        else { throw Self.malformed("an object has no class") }
        return name
    }

    /// The fields of the object `reference` (or an already resolved object) points to, which must
    /// be of one of `classNames`.
    func object(_ referenceOrObject: Any, classNames: [String], what: String) throws(MSALError) -> [String: Any] {
        var candidate: Any? = referenceOrObject
        if let wrapper = referenceOrObject as? [String: Any], wrapper[Self.referenceKey] != nil { candidate = try resolve(referenceOrObject) }
        guard let fields = candidate as? [String: Any], classNames.contains(try className(fields)) else {
            throw Self.malformed("\(what) is not an \(classNames[0])")
        }
        return fields
    }

    /// A string field (`NSString`, or `NSMutableString` as `NS.string`); `nil` when absent or null.
    func string(_ fields: [String: Any], _ key: String) throws(MSALError) -> String? {
        guard let reference = fields[key], let value = try resolve(reference) else { return nil }
        if let text = value as? String { return text }
        if let boxed = value as? [String: Any], ["NSMutableString", "NSString"].contains(try className(boxed)), let text = boxed["NS.string"] as? String {
            return text
        }
        throw Self.malformed("\(key) is not a string")
    }

    /// A date field (`NSDate`: `NS.time`, seconds since 2001-01-01 UTC); `nil` when absent or null.
    func date(_ fields: [String: Any], _ key: String) throws(MSALError) -> Date? {
        guard let reference = fields[key], let value = try resolve(reference) else { return nil }
        guard let boxed = value as? [String: Any], try className(boxed) == "NSDate", let time = boxed["NS.time"] as? NSNumber,
              time.doubleValue.isFinite
        else { throw Self.malformed("\(key) is not a date") }
        return Date(timeIntervalSinceReferenceDate: time.doubleValue)
    }

    /// A dictionary (`NS.keys` and `NS.objects`) with string keys; values are resolved (strings and
    /// numbers as themselves, other objects as their fields).
    func dictionary(_ value: Any, what: String) throws(MSALError) -> [String: Any] {
        guard let boxed = value as? [String: Any], ["NSDictionary", "NSMutableDictionary"].contains(try className(boxed)),
              let keys = boxed["NS.keys"] as? [Any], let values = boxed["NS.objects"] as? [Any], keys.count == values.count
        else { throw Self.malformed("\(what) is not a dictionary") }
        var result: [String: Any] = [:]
        for (key, value) in zip(keys, values) {
            guard let name = try resolve(key) as? String else { throw Self.malformed("\(what) has a key that is not a string") }
            if let resolved = try resolve(value) { result[name] = resolved }
        }
        return result
    }
}
