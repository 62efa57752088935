public import Foundation
public import MSALCore

/// Takes modelled fields out of a JSON entry; what is left becomes `additionalFields`.
struct FieldReader {
    var fields: [String: JSONValue]
    let section: CacheEntryKind

    /// A string field that must be present.
    mutating func requiredString(_ name: String) throws(MSALError) -> String {
        guard let value = fields[name]?.stringValue else {
            throw .internal(.cacheError, "A \(section.rawValue) entry has no '\(name)' string; it was kept as is and is not used.")
        }
        fields[name] = nil
        return value
    }

    /// A string field that may be absent or `null`; a value of another type stays in the extra fields.
    mutating func optionalString(_ name: String) -> String? {
        switch fields[name] {
        case .string(let value)?: fields[name] = nil; return value
        case .null?: fields[name] = nil; return nil
        default: return nil
        }
    }

    /// An epoch-seconds field that must be present.
    mutating func requiredDate(_ name: String) throws(MSALError) -> Date {
        guard let value = fields[name], let date = parseEpochSeconds(value) else {
            throw .internal(.cacheError, "A \(section.rawValue) entry has no '\(name)' epoch-seconds time; it was kept as is and is not used.")
        }
        fields[name] = nil
        return date
    }

    /// An epoch-seconds field that may be absent or `null`; an unparseable value stays in the extra fields.
    mutating func optionalDate(_ name: String) -> Date? {
        guard let value = fields[name] else { return nil }
        if value == .null { fields[name] = nil; return nil }
        guard let date = parseEpochSeconds(value) else { return nil }
        fields[name] = nil
        return date
    }

    /// Checks `credential_type` (if present) names the section's credential type, and removes it.
    mutating func credentialType(_ expected: String) throws(MSALError) {
        guard let value = fields["credential_type"] else { return }
        guard value.stringValue?.lowercased() == expected.lowercased() else {
            throw .internal(
                .cacheError,
                "A \(section.rawValue) entry has credential_type '\(value.stringValue ?? "?")', which this version does not use; it was kept as is.")
        }
        fields["credential_type"] = nil
    }
}

extension CacheEntry {
    /// Reads one entry of MSAL's unified cache JSON (the object stored under a key of a section).
    ///
    /// Timestamps are accepted as epoch-second strings (what every MSAL writes) or numbers. Fields this
    /// version does not model go to the entry's `additionalFields`. A `credential_type` other than the
    /// section's (e.g. .NET's `AccessToken_With_AuthScheme`) is refused, so such tokens are never
    /// served as Bearer tokens.
    ///
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when a required field (see each entry type) is
    ///   missing or has the wrong type. The message names the field, never a value.
    public init(kind: CacheEntryKind, msalJSONObject object: [String: JSONValue]) throws(MSALError) {
        var reader = FieldReader(fields: object, section: kind)
        switch kind {
        case .accessToken:
            try reader.credentialType("AccessToken")
            let homeAccountID = try reader.requiredString("home_account_id")
            let environment = try reader.requiredString("environment")
            let clientID = try reader.requiredString("client_id")
            let realm = try reader.requiredString("realm")
            let target = try reader.requiredString("target")
            let secret = try reader.requiredString("secret")
            let tokenType = reader.optionalString("token_type") ?? "Bearer"
            let cachedAt = try reader.requiredDate("cached_at")
            let expiresOn = try reader.requiredDate("expires_on")
            let extendedExpiresOn = reader.optionalDate("extended_expires_on")
            let refreshOn = reader.optionalDate("refresh_on")
            self = .accessToken(AccessTokenEntry(
                homeAccountID: homeAccountID, environment: environment, clientID: clientID, realm: realm,
                target: target, secret: secret, tokenType: tokenType, cachedAt: cachedAt, expiresOn: expiresOn,
                extendedExpiresOn: extendedExpiresOn, refreshOn: refreshOn, additionalFields: reader.fields))
        case .refreshToken:
            try reader.credentialType("RefreshToken")
            let homeAccountID = try reader.requiredString("home_account_id")
            let environment = try reader.requiredString("environment")
            let clientID = try reader.requiredString("client_id")
            let secret = try reader.requiredString("secret")
            let familyID = reader.optionalString("family_id")
            let target = reader.optionalString("target")
            self = .refreshToken(RefreshTokenEntry(
                homeAccountID: homeAccountID, environment: environment, clientID: clientID,
                familyID: familyID?.isEmpty == true ? nil : familyID, secret: secret, target: target,
                additionalFields: reader.fields))
        case .idToken:
            try reader.credentialType("IdToken")
            let homeAccountID = try reader.requiredString("home_account_id")
            let environment = try reader.requiredString("environment")
            let clientID = try reader.requiredString("client_id")
            let realm = try reader.requiredString("realm")
            let secret = try reader.requiredString("secret")
            self = .idToken(IDTokenEntry(
                homeAccountID: homeAccountID, environment: environment, clientID: clientID, realm: realm,
                secret: secret, additionalFields: reader.fields))
        case .account:
            let homeAccountID = try reader.requiredString("home_account_id")
            let environment = try reader.requiredString("environment")
            let realm = try reader.requiredString("realm")
            let localAccountID = try reader.requiredString("local_account_id")
            let authorityType = try reader.requiredString("authority_type")
            self = .account(AccountEntry(
                homeAccountID: homeAccountID, environment: environment, realm: realm,
                localAccountID: localAccountID, username: reader.optionalString("username"),
                authorityType: authorityType, accountSource: reader.optionalString("account_source"),
                name: reader.optionalString("name"), givenName: reader.optionalString("given_name"),
                familyName: reader.optionalString("family_name"), additionalFields: reader.fields))
        case .appMetadata:
            let clientID = try reader.requiredString("client_id")
            let environment = try reader.requiredString("environment")
            let familyID = reader.optionalString("family_id")
            self = .appMetadata(AppMetadataEntry(
                clientID: clientID, environment: environment, familyID: familyID, additionalFields: reader.fields))
        }
    }

    /// The entry as MSAL's unified cache JSON object: modelled fields under their MSAL names,
    /// timestamps as epoch-second strings, `additionalFields` merged in (a modelled field wins).
    public var msalJSONObject: [String: JSONValue] {
        var object: [String: JSONValue]
        func set(_ name: String, _ value: String?) { if let value { object[name] = .string(value) } }
        func set(_ name: String, _ value: Date?) { if let value { object[name] = .string(formatEpochSeconds(value)) } }
        switch self {
        case .accessToken(let entry):
            object = entry.additionalFields
            set("credential_type", "AccessToken")
            set("home_account_id", entry.homeAccountID)
            set("environment", entry.environment)
            set("client_id", entry.clientID)
            set("realm", entry.realm)
            set("target", entry.target)
            set("secret", entry.secret)
            set("token_type", entry.tokenType)
            set("cached_at", entry.cachedAt)
            set("expires_on", entry.expiresOn)
            set("extended_expires_on", entry.extendedExpiresOn)
            set("refresh_on", entry.refreshOn)
        case .refreshToken(let entry):
            object = entry.additionalFields
            set("credential_type", "RefreshToken")
            set("home_account_id", entry.homeAccountID)
            set("environment", entry.environment)
            set("client_id", entry.clientID)
            set("family_id", entry.familyID)
            set("secret", entry.secret)
            set("target", entry.target)
        case .idToken(let entry):
            object = entry.additionalFields
            set("credential_type", "IdToken")
            set("home_account_id", entry.homeAccountID)
            set("environment", entry.environment)
            set("client_id", entry.clientID)
            set("realm", entry.realm)
            set("secret", entry.secret)
        case .account(let entry):
            object = entry.additionalFields
            set("home_account_id", entry.homeAccountID)
            set("environment", entry.environment)
            set("realm", entry.realm)
            set("local_account_id", entry.localAccountID)
            set("username", entry.username)
            set("authority_type", entry.authorityType)
            set("account_source", entry.accountSource)
            set("name", entry.name)
            set("given_name", entry.givenName)
            set("family_name", entry.familyName)
        case .appMetadata(let entry):
            object = entry.additionalFields
            set("client_id", entry.clientID)
            set("environment", entry.environment)
            set("family_id", entry.familyID)
        }
        return object
    }

    /// The entry as compact UTF-8 JSON with sorted keys (see ``msalJSONObject``).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` if encoding fails (a non-finite number in
    ///   `additionalFields`).
    public func msalJSONData() throws(MSALError) -> Data {
        try encodeJSON(JSONValue.object(msalJSONObject), pretty: false)
    }

    /// Reads one entry from UTF-8 JSON text (see ``init(kind:msalJSONObject:)``).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the data is not a JSON object or a
    ///   required field is missing.
    public init(kind: CacheEntryKind, msalJSONData data: Data) throws(MSALError) {
        guard let object = JSONValue(parsing: data)?.objectValue else {
            throw .internal(.cacheError, "A stored \(kind.rawValue) entry is not a JSON object.")
        }
        try self.init(kind: kind, msalJSONObject: object)
    }
}

/// Encodes a JSON value with sorted keys and unescaped slashes (as MSAL Python writes URLs).
func encodeJSON(_ value: JSONValue, pretty: Bool) throws(MSALError) -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
    do {
        return try encoder.encode(value)
    } catch {
        throw .internal(.cacheError, "The token cache could not be encoded as JSON (a field holds a value JSON cannot represent).")
    }
}
