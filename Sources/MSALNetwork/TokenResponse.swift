public import Foundation
public import MSALCore

/// A token endpoint's successful answer (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3), with
/// Entra ID's extensions (`ext_expires_in`, `refresh_in`, `client_info`, `foci`).
///
/// Durations are seconds relative to when the response arrived; numbers sent as strings
/// (`"3600"`) are accepted. ``description`` and the mirror used by `dump` and test failures show
/// whether a token is present but never its value.
public struct TokenResponse: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// `access_token`. Never log it.
    public var accessToken: String
    /// `token_type`, usually `Bearer`; `Bearer` when the server omitted it.
    public var tokenType: String
    /// `expires_in`: seconds until the access token expires, if sent.
    public var expiresIn: TimeInterval?
    /// `ext_expires_in` (Entra ID): seconds the token stays usable during an outage, if sent.
    public var extendedExpiresIn: TimeInterval?
    /// `refresh_in` (Entra ID): seconds after which a proactive refresh is advised, if sent.
    public var refreshIn: TimeInterval?
    /// `refresh_token`, if issued. Never log it.
    public var refreshToken: String?
    /// `id_token`, the raw JWT, if issued.
    public var idToken: String?
    /// `scope`: the granted scopes, space-delimited (RFC 6749 §3.3), if sent.
    public var scope: String?
    /// `client_info` (Entra ID): base64url JSON with `uid` and `utid`, if sent.
    public var clientInfo: String?
    /// `foci` (Entra ID): the family of client IDs the refresh token belongs to, e.g. `"1"`.
    public var familyID: String?
    /// The body's `correlation_id`, else the `client-request-id` response header, else the one sent.
    public var correlationID: String?
    /// Every other field of the body, as sent.
    public var additionalFields: [String: JSONValue]

    /// The fields this type models; everything else lands in ``additionalFields``.
    static let modeledFields: Set<String> = [
        "access_token", "token_type", "expires_in", "ext_expires_in", "refresh_in", "refresh_token",
        "id_token", "scope", "client_info", "foci", "correlation_id",
    ]

    /// Creates a response.
    public init(
        accessToken: String,
        tokenType: String = "Bearer",
        expiresIn: TimeInterval? = nil,
        extendedExpiresIn: TimeInterval? = nil,
        refreshIn: TimeInterval? = nil,
        refreshToken: String? = nil,
        idToken: String? = nil,
        scope: String? = nil,
        clientInfo: String? = nil,
        familyID: String? = nil,
        correlationID: String? = nil,
        additionalFields: [String: JSONValue] = [:]
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.extendedExpiresIn = extendedExpiresIn
        self.refreshIn = refreshIn
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.scope = scope
        self.clientInfo = clientInfo
        self.familyID = familyID
        self.correlationID = correlationID
        self.additionalFields = additionalFields
    }

    /// Reads the fields of a 2xx answer.
    /// - Throws: ``MSALError`` `.serverError` with `.invalidResponse` when `access_token` is missing.
    init(json object: [String: JSONValue], host: @autoclosure () -> String, status: Int, correlationID: String?) throws(MSALError) {
        guard let accessToken = object.string("access_token") else {
            throw ServerResponse.missingField("access_token", endpoint: "token endpoint", host: host(), status: status, correlationID: correlationID)
        }
        self.init(
            accessToken: accessToken,
            tokenType: object.string("token_type") ?? "Bearer",
            expiresIn: object.seconds("expires_in"),
            extendedExpiresIn: object.seconds("ext_expires_in"),
            refreshIn: object.seconds("refresh_in"),
            refreshToken: object.string("refresh_token"),
            idToken: object.string("id_token"),
            scope: object["scope"]?.stringValue,
            clientInfo: object.string("client_info"),
            familyID: object.string("foci") ?? object["foci"]?.doubleValue.map { String(Int($0)) },
            correlationID: correlationID,
            additionalFields: Self.additionalFields(of: object)
        )
    }

    /// The fields of `object` that this type does not model; an empty dictionary (no allocation)
    /// when there are none, as in most responses.
    private static func additionalFields(of object: [String: JSONValue]) -> [String: JSONValue] {
        var additional: [String: JSONValue] = [:]
        for (name, value) in object where !modeledFields.contains(name) { additional[name] = value }
        return additional
    }

    /// The token type, lifetimes, scope, correlation ID and which tokens are present; no token value.
    public var description: String {
        var parts = ["tokenType: \(tokenType)", "accessToken: <redacted>"]
        if let expiresIn { parts.append("expiresIn: \(secondsNumber(expiresIn)) s") }
        if let extendedExpiresIn { parts.append("extendedExpiresIn: \(secondsNumber(extendedExpiresIn)) s") }
        if let refreshIn { parts.append("refreshIn: \(secondsNumber(refreshIn)) s") }
        parts.append("refreshToken: \(refreshToken == nil ? "none" : "<redacted>")")
        parts.append("idToken: \(idToken == nil ? "none" : "<redacted>")")
        if let scope { parts.append("scope: \(scope)") }
        if let familyID { parts.append("familyID: \(familyID)") }
        if let correlationID { parts.append("correlationID: \(correlationID)") }
        if !additionalFields.isEmpty { parts.append("additionalFields: [\(additionalFields.keys.sorted().joined(separator: ", "))]") }
        return "TokenResponse(" + parts.joined(separator: ", ") + ")"
    }

    /// The fields, with every token and the additional fields' values redacted.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "accessToken": "<redacted>",
            "tokenType": tokenType,
            "expiresIn": expiresIn as Any,
            "extendedExpiresIn": extendedExpiresIn as Any,
            "refreshIn": refreshIn as Any,
            "refreshToken": refreshToken == nil ? "none" : "<redacted>",
            "idToken": idToken == nil ? "none" : "<redacted>",
            "scope": scope as Any,
            "clientInfo": clientInfo as Any,
            "familyID": familyID as Any,
            "correlationID": correlationID as Any,
            "additionalFields": additionalFields.keys.sorted(),
        ])
    }
}
