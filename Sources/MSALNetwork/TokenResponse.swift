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
            familyID: Self.familyID(object["foci"]),
            correlationID: correlationID,
            additionalFields: Self.additionalFields(of: object)
        )
    }

    /// Reads the body of a 2xx answer member by member (``JSONValue/forEachMember(ofObjectIn:_:)``),
    /// without the dictionary of ``init(json:host:status:correlationID:)``, to the same response.
    ///
    /// - Parameters:
    ///   - response: the answer; its status must be 2xx.
    ///   - requestCorrelationID: the `client-request-id` that was sent (the last fallback for
    ///     ``correlationID``, after the body's `correlation_id` and the response header).
    /// - Returns: `nil` for an answer ``ServerResponse/jsonObject(_:endpoint:host:requestCorrelationID:now:)``
    ///   would reject or that lacks `access_token` (an HTML page, a body that is not a JSON object,
    ///   a non-empty `error`): the caller reads those through it, which throws the error they mean.
    init?(readingSuccess response: HTTPResponse, requestCorrelationID: String?) {
        guard response.isSuccess, !ServerResponse.declaresHTML(response) else { return nil }
        var accessToken: String?, tokenType: String?, refreshToken: String?, idToken: String?, clientInfo: String?
        var expiresIn: TimeInterval?, extendedExpiresIn: TimeInterval?, refreshIn: TimeInterval?
        var scope: String?, foci: JSONValue?, bodyCorrelationID: String?, oauthError: String?
        var additional: [String: JSONValue] = [:]
        func nonEmpty(_ value: JSONMemberValue) -> String? { value.stringValue.flatMap { $0.isEmpty ? nil : $0 } }
        func seconds(_ value: JSONMemberValue) -> TimeInterval? { value.doubleValue.flatMap { $0.isFinite ? $0 : nil } }
        // Each member overwrites an earlier one of the same name, as in the parsed dictionary.
        let isObject = JSONValue.forEachMember(ofObjectIn: response.body) { name, value in
            if name == "access_token" { accessToken = nonEmpty(value) }
            else if name == "token_type" { tokenType = nonEmpty(value) }
            else if name == "expires_in" { expiresIn = seconds(value) }
            else if name == "ext_expires_in" { extendedExpiresIn = seconds(value) }
            else if name == "refresh_in" { refreshIn = seconds(value) }
            else if name == "refresh_token" { refreshToken = nonEmpty(value) }
            else if name == "id_token" { idToken = nonEmpty(value) }
            else if name == "scope" { scope = value.stringValue }
            else if name == "client_info" { clientInfo = nonEmpty(value) }
            else if name == "foci" { foci = value.value }
            else if name == "correlation_id" { bodyCorrelationID = value.stringValue }
            else {
                if name == "error" { oauthError = nonEmpty(value) }
                additional[name.string] = value.value
            }
        }
        guard isObject, oauthError == nil, let accessToken else { return nil }
        self.init(
            accessToken: accessToken, tokenType: tokenType ?? "Bearer", expiresIn: expiresIn,
            extendedExpiresIn: extendedExpiresIn, refreshIn: refreshIn, refreshToken: refreshToken, idToken: idToken,
            scope: scope, clientInfo: clientInfo, familyID: Self.familyID(foci),
            correlationID: bodyCorrelationID ?? ServerResponse.fallbackCorrelationID(response, requestCorrelationID: requestCorrelationID),
            additionalFields: additional)
    }

    /// `foci` as sent: a non-empty string, or a whole number in range written as one (`1` is `"1"`).
    static func familyID(_ value: JSONValue?) -> String? {
        if let string = value?.stringValue { return string.isEmpty ? nil : string }
        guard let number = value?.doubleValue, let whole = Int(exactly: number.rounded(.towardZero)) else { return nil }
        return String(whole)
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
