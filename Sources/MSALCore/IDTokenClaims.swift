public import Foundation

/// The claims of an OpenID Connect ID token (OpenID Connect Core §2), decoded from the JWT payload.
///
/// swift-msal, as a public client, reads the claims but does not verify the signature: the token
/// came straight from the token endpoint over TLS (OpenID Connect Core §3.1.3.7, item 6). It does
/// validate `iss`, `aud`, `exp` and `nonce` (``validate(issuer:clientID:nonce:now:allowedClockSkew:)``).
public struct IDTokenClaims: Sendable, Hashable {
    /// The claims and the JWT, in one shared object: every cache hit's result carries the claims,
    /// and copying one reference costs less than copying two.
    private final class Storage: Sendable {
        let all: [String: JSONValue]
        let rawValue: String

        init(all: [String: JSONValue], rawValue: String) {
            self.all = all
            self.rawValue = rawValue
        }
    }

    private let storage: Storage

    /// Every claim of the payload.
    public var all: [String: JSONValue] { storage.all }
    /// The raw JWT (a secret-like value: never log it).
    public var rawValue: String { storage.rawValue }

    /// Whether the claims and the JWT are equal.
    public static func == (lhs: IDTokenClaims, rhs: IDTokenClaims) -> Bool {
        lhs.storage === rhs.storage || (lhs.rawValue == rhs.rawValue && lhs.all == rhs.all)
    }

    /// Hashes the claims and the JWT.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(all)
        hasher.combine(rawValue)
    }

    /// Decodes the payload of a compact JWT (RFC 7519 §7.2); the signature is not checked.
    /// - Throws: ``MSALError`` `.internal(.invalidIDToken)` when the token does not have three
    ///   dot-separated parts or the payload is not base64url JSON object.
    public init(jwt: String) throws(MSALError) {
        // The dots, found in the bytes in one pass (the token is 1-2 KB).
        var token = jwt
        let payload = token.withUTF8 { bytes -> String? in
            var dots = 0, first = 0, second = 0
            for index in bytes.indices where bytes[index] == UInt8(ascii: ".") {
                dots += 1
                if dots == 1 { first = index } else if dots == 2 { second = index }
            }
            guard dots == 2 || dots == 4 else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[(first + 1)..<second]), as: UTF8.self)
        }
        guard let payload else {
            throw .internal(.invalidIDToken, "The ID token is not a compact JWT (expected three dot-separated parts).")
        }
        guard let data = Base64URL.decode(payload),
              case .object(let object)? = JSONValue(parsing: data)
        else {
            throw .internal(.invalidIDToken, "The ID token's payload is not base64url-encoded JSON.")
        }
        storage = Storage(all: object, rawValue: jwt)
    }

    /// `iss`: the issuer identifier.
    public var issuer: String? { all["iss"]?.stringValue }
    /// `sub`: the subject, unique per issuer.
    public var subject: String? { all["sub"]?.stringValue }
    /// `aud`: the audiences (a string or an array in the JWT; always an array here).
    public var audiences: [String] {
        if let single = all["aud"]?.stringValue { return [single] }
        return all["aud"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }
    /// `exp`: the expiry instant (UTC).
    public var expiresOn: Date? { all["exp"]?.doubleValue.map(Date.init(timeIntervalSince1970:)) }
    /// `iat`: the issue instant (UTC).
    public var issuedAt: Date? { all["iat"]?.doubleValue.map(Date.init(timeIntervalSince1970:)) }
    /// `nonce`: the value the client sent in the authorization request.
    public var nonce: String? { all["nonce"]?.stringValue }
    /// `oid`: Entra ID's object ID of the user in this tenant.
    public var objectID: String? { all["oid"]?.stringValue }
    /// `tid`: Entra ID's tenant ID.
    public var tenantID: String? { all["tid"]?.stringValue }
    /// `preferred_username`, else `upn`, else `email`: the username shown to people.
    public var preferredUsername: String? {
        all["preferred_username"]?.stringValue ?? all["upn"]?.stringValue ?? all["email"]?.stringValue
    }
    /// `name`: the display name.
    public var name: String? { all["name"]?.stringValue }
    /// `email`.
    public var email: String? { all["email"]?.stringValue }

    /// Validates the claims a public client must check (OpenID Connect Core §3.1.3.7 items 2, 3, 9, 11).
    ///
    /// - Parameters:
    ///   - issuer: the issuer from the provider's discovery document; Entra's multi-tenant
    ///     placeholder `{tenantid}` is replaced by the token's `tid`. `nil` skips the check.
    ///   - clientID: must be one of the audiences.
    ///   - nonce: when one was sent, the token must carry the same value.
    ///   - now: the current instant, from the app's ``WallClock``.
    ///   - allowedClockSkew: seconds by which `exp` may lie in the past (default 300).
    /// - Throws: ``MSALError`` `.internal(.invalidIDToken)` naming the failing claim.
    public func validate(
        issuer: String?,
        clientID: String,
        nonce: String?,
        now: Date,
        allowedClockSkew: TimeInterval = 300
    ) throws(MSALError) {
        if let issuer {
            var expected = issuer
            // Only multi-tenant discovery documents carry the placeholder: skip the search otherwise.
            // The standard library's replacing (Foundation's replacingOccurrences goes through NSString).
            if let tid = tenantID, expected.utf8.contains(UInt8(ascii: "{")) {
                expected = expected.replacing("{tenantid}", with: tid)
            }
            guard let actual = self.issuer, IDTokenClaims.sameIssuer(actual, expected) else {
                throw .internal(.invalidIDToken, "The ID token's issuer '\(self.issuer ?? "(none)")' is not the provider's issuer '\(expected)'.")
            }
        }
        guard audiences.contains(clientID) else {
            throw .internal(.invalidIDToken, "The ID token's audience does not include the client ID '\(clientID)'.")
        }
        guard let expiresOn else {
            throw .internal(.invalidIDToken, "The ID token has no exp claim.")
        }
        if expiresOn.addingTimeInterval(allowedClockSkew) < now {
            throw .internal(.invalidIDToken, "The ID token expired at \(expiresOn) (clock skew allowed: \(Int(allowedClockSkew)) s).")
        }
        if let nonce, self.nonce != nonce {
            throw .internal(.invalidIDToken, "The ID token's nonce does not match the nonce sent in the request.")
        }
    }

    /// Issuers compare exactly, except for a trailing slash.
    static func sameIssuer(_ a: String, _ b: String) -> Bool {
        func trim(_ s: String) -> String { s.hasSuffix("/") ? String(s.dropLast()) : s }
        return trim(a) == trim(b)
    }
}

extension IDTokenClaims: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The claims' names only: neither the raw JWT (``rawValue``, secret-like) nor the claims'
    /// values (personal data: names, usernames, object IDs) are shown, so printing an ``Account``
    /// or an ID token's claims never puts them in a log line.
    public var description: String {
        "IDTokenClaims(claims: [\(all.keys.sorted().joined(separator: ", "))], rawValue: <redacted>)"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// The claims' names only, so `dump` and debuggers show neither the JWT nor the values.
    public var customMirror: Mirror {
        Mirror(self, children: ["claims": all.keys.sorted(), "rawValue": "<redacted>"], displayStyle: .struct)
    }
}
