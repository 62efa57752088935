import Foundation

/// Entra ID's `client_info`: a base64url JSON object with the user's object ID (`uid`) in the home
/// tenant and the home tenant ID (`utid`), returned when the token request carries `client_info=1`.
/// Together they form the home account ID `<uid>.<utid>` (MSAL's unified cache schema).
public struct ClientInfo: Sendable, Hashable {
    /// The user's object ID in the home tenant.
    public let uniqueID: String
    /// The home tenant ID.
    public let uniqueTenantID: String

    /// Creates client info from its parts.
    public init(uniqueID: String, uniqueTenantID: String) {
        self.uniqueID = uniqueID
        self.uniqueTenantID = uniqueTenantID
    }

    /// Decodes the `client_info` field of a token response.
    /// - Throws: ``MSALError`` `.serverError` with internal code `.invalidResponse` when it is not
    ///   base64url JSON with string `uid` and `utid`.
    public init(encoded: String) throws(MSALError) {
        guard let data = Base64URL.decode(encoded),
              case .object(let object)? = JSONValue(parsing: data),
              let uid = object["uid"]?.stringValue, !uid.isEmpty,
              let utid = object["utid"]?.stringValue, !utid.isEmpty
        else {
            throw MSALError(.serverError, internalCode: .invalidResponse, message: "The client_info in the token response is not valid base64url JSON with uid and utid.")
        }
        self.init(uniqueID: uid, uniqueTenantID: utid)
    }

    /// The home account ID, `<uid>.<utid>`.
    public var homeAccountID: String { "\(uniqueID).\(uniqueTenantID)" }

    /// The encoded form (base64url JSON), as a server sends it.
    public var encoded: String {
        let json = (try? JSONSerialization.data(
            withJSONObject: ["uid": uniqueID, "utid": uniqueTenantID], options: [.sortedKeys])) ?? Data()
        return Base64URL.encode(json)
    }
}
