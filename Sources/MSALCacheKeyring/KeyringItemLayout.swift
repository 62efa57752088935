internal import Foundation
public import MSALCache
internal import MSALCore

/// How ``KeyringTokenCacheStore`` lays token cache entries out as Secret Service items: one item per
/// entry, in the default collection, with attributes that mirror MSAL for iOS/macOS's keychain items,
/// so the keyring reads like MSAL's keychain in Seahorse or `secret-tool search`.
///
/// Every item carries the attribute `xdg:schema` = ``tokenCacheSchema`` and:
///
/// | Attribute | Value |
/// |---|---|
/// | `access_group` | the store's access group (MSAL: `kSecAttrAccessGroup`) |
/// | `account` | `<home account id>-<environment>` (MSAL: `kSecAttrAccount`); `<environment>` for app metadata |
/// | `service` | access and ID tokens: `<credential type>-<client id>-<realm>-<target>` (empty target for ID tokens); refresh tokens: `refreshtoken-<family id, else client id>--` (no realm, no target); accounts: `<realm>`; app metadata: `appmetadata-<client id>` (MSAL: `kSecAttrService`) |
/// | `type` | the number MSAL stores in `kSecAttrType` (see ``type(of:authorityType:)``) |
/// | `kind` | the section: `AccessToken`, `RefreshToken`, `IdToken`, `Account`, `AppMetadata` |
/// | `key` | the key the entry is stored under (its ``CacheEntry/key``) |
///
/// `account` and `service` are trimmed and lowercased, as MSAL builds them. The label names the store
/// and the section only (no personal data, no secret). The secret is a JSON object
/// `{"kind": …, "key": …, "entry": <the entry's MSAL JSON>}` (UTF-8, content type
/// `application/json`): the entry's MSAL JSON keeps the fields this version does not model, and kind
/// and key travel with it, so that ``KeyringTokenCacheStore/readAll()`` can rebuild the cache from one
/// search and one bulk secret transfer, without reading each item's attributes.
///
/// Source: MSAL for iOS/macOS keychain layout, `MSIDDefaultCredentialCacheKey`,
/// `MSIDDefaultAccountCacheKey` and `MSIDAppMetadataCacheKey` in
/// AzureAD/microsoft-authentication-library-common-for-objc (`IdentityCore/src/cache/key/`).
public enum KeyringItemLayout {
    /// The schema name of token cache items (their `xdg:schema` attribute): `org.swift-msal.TokenCache`.
    public static let tokenCacheSchema = "org.swift-msal.TokenCache"
    /// The schema name of ``KeyringSecret`` items: `org.swift-msal.Secret`.
    public static let secretSchema = "org.swift-msal.Secret"
    /// The schema name of ADAL keyed items (``ADALKeyedItem``): `org.swift-msal.ADALKeyedItem`. Such
    /// an item carries `access_group`, `service` and `account` (the item's key, as MSAL for iOS/macOS
    /// keeps ADAL's items in the keychain) and `generic` = `MSOpenTech.ADAL.1`; its secret is the JSON
    /// object `{"service": …, "account": …, "value": <the item's data in base64>}`.
    public static let adalKeyedItemSchema = "org.swift-msal.ADALKeyedItem"
    /// The attribute libsecret uses for the schema name: `xdg:schema`.
    public static let schemaAttribute = "xdg:schema"

    /// The attribute names.
    public enum Attribute {
        /// `access_group`.
        public static let accessGroup = "access_group"
        /// `account`.
        public static let account = "account"
        /// `service`.
        public static let service = "service"
        /// `type`.
        public static let type = "type"
        /// `kind`.
        public static let kind = "kind"
        /// `key`.
        public static let key = "key"
        /// `generic` (ADAL keyed items only: MSAL's `kSecAttrGeneric`).
        public static let generic = "generic"
        /// `name` (``KeyringSecret`` items only).
        public static let name = "name"
    }

    /// The `kind` of the store's change journal item (see ``KeyringTokenCacheStore``).
    public static let journalKind = "swift-msal.Journal"

    /// The number MSAL for iOS/macOS stores in an item's `kSecAttrType`.
    ///
    /// - Access token 2001, refresh token 2002, ID token 2003: `2000 + MSIDCredentialType`
    ///   (`kCredentialTypePrefix` in `MSIDDefaultCredentialCacheKey.m`; MSAL's
    ///   `MSIDDefaultCredentialCacheQueryTests` expect `@2001`, `@2002`, `@2003`).
    /// - Account: `1000 + MSIDAccountType` (`kAccountTypePrefix` in `MSIDDefaultAccountCacheKey.m`):
    ///   1001 for `AAD`, 1002 for `MSA`, 1003 for `MSSTS`, 1004 for any other authority type
    ///   (`Other`, `ADFS`), as `MSIDAccountTypeHelpers accountTypeFromString:` maps them and
    ///   `MSIDStorageManagerMac.m` numbers `MSIDKeychainAccountType`.
    /// - App metadata 3001 (`MSIDAppMetadataType`; `MSIDAppMetadataCacheKeyTests` expect `@3001`).
    ///
    /// - Parameters:
    ///   - kind: the entry's section.
    ///   - authorityType: the account's `authority_type` (accounts only).
    /// - Returns: the number.
    public static func type(of kind: CacheEntryKind, authorityType: String? = nil) -> Int {
        switch kind {
        case .accessToken: 2001
        case .refreshToken: 2002
        case .idToken: 2003
        case .account:
            switch authorityType?.lowercased() {
            case "aad": 1001
            case "msa": 1002
            case "mssts": 1003
            default: 1004
            }
        case .appMetadata: 3001
        }
    }

    /// The attributes of the item holding `entry` (see the table above), `xdg:schema` included.
    /// - Returns: attribute names and values.
    public static func attributes(for entry: CacheEntry, accessGroup: String) -> [String: String] {
        attributes(kind: entry.kind, key: entry.key, msalJSONObject: entry.msalJSONObject, accessGroup: accessGroup)
    }

    /// The attributes of an item from its section, stored key and MSAL JSON object (missing fields
    /// count as empty), so that entries this version cannot read keep their layout too.
    static func attributes(kind: CacheEntryKind, key: String, msalJSONObject object: [String: JSONValue], accessGroup: String) -> [String: String] {
        func field(_ name: String) -> String { normalized(object[name]?.stringValue ?? "") }
        let account: String
        let service: String
        var authorityType: String?
        switch kind {
        case .accessToken, .idToken:
            account = field("home_account_id") + "-" + field("environment")
            let target = kind == .accessToken ? field("target") : ""
            service = [kind.rawValue.lowercased(), field("client_id"), field("realm"), target].joined(separator: "-")
        case .refreshToken:
            account = field("home_account_id") + "-" + field("environment")
            let familyID = field("family_id")
            service = ["refreshtoken", familyID.isEmpty ? field("client_id") : familyID, "", ""].joined(separator: "-")
        case .account:
            account = field("home_account_id") + "-" + field("environment")
            service = field("realm")
            authorityType = object["authority_type"]?.stringValue
        case .appMetadata:
            account = field("environment")
            service = "appmetadata-" + field("client_id")
        }
        return [
            schemaAttribute: tokenCacheSchema,
            Attribute.accessGroup: accessGroup,
            Attribute.kind: kind.rawValue,
            Attribute.key: key,
            Attribute.account: account,
            Attribute.service: service,
            Attribute.type: String(type(of: kind, authorityType: authorityType)),
        ]
    }

    /// The label of a token cache item: the store and the section, nothing personal.
    static func label(kind: String, accessGroup: String) -> String {
        "swift-msal token cache (\(accessGroup)): \(kind)"
    }

    /// Trimmed and lowercased, as MSAL's `msidTrimmedString.lowercaseString`.
    private static func normalized(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }
}
