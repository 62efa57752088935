public import Foundation
internal import Synchronization

/// The claims of an OpenID Connect ID token (OpenID Connect Core §2), decoded from the JWT payload.
///
/// swift-msal, as a public client, reads the claims but does not verify the signature: the token
/// came straight from the token endpoint over TLS (OpenID Connect Core §3.1.3.7, item 6). It does
/// validate `iss`, `aud`, `exp` and `nonce` (``validate(issuer:clientID:nonce:now:allowedClockSkew:)``).
public struct IDTokenClaims: Sendable, Hashable {
    /// The claims this type reads, taken from the payload in one pass over simdjson's values: most
    /// ID tokens are read for these alone (every refresh validates one), so the dictionary of
    /// every claim (``all``) is built only when first asked for.
    private struct Modeled: Sendable {
        var issuer: String?, subject: String?, audience: JSONValue?, expiry: Double?, issuedAt: Double?
        var nonce: String?, objectID: String?, tenantID: String?
        var preferredUsername: String?, upn: String?, email: String?, name: String?, givenName: String?, familyName: String?

        /// Takes the member if this type models it; a later member of the same name overwrites an
        /// earlier one, as in the dictionary of every claim.
        mutating func read(_ name: JSONMemberName, _ value: JSONMemberValue) {
            if name == "iss" { issuer = value.stringValue }
            else if name == "sub" { subject = value.stringValue }
            else if name == "aud" { audience = value.value }
            else if name == "exp" { expiry = value.doubleValue }
            else if name == "iat" { issuedAt = value.doubleValue }
            else if name == "nonce" { nonce = value.stringValue }
            else if name == "oid" { objectID = value.stringValue }
            else if name == "tid" { tenantID = value.stringValue }
            else if name == "preferred_username" { preferredUsername = value.stringValue }
            else if name == "upn" { upn = value.stringValue }
            else if name == "email" { email = value.stringValue }
            else if name == "name" { self.name = value.stringValue }
            else if name == "given_name" { givenName = value.stringValue }
            else if name == "family_name" { familyName = value.stringValue }
        }
    }

    /// The claims and the JWT, in one shared object: every cache hit's result carries the claims,
    /// and copying one reference costs less than copying two.
    private final class Storage: Sendable {
        let modeled: Modeled
        let rawValue: String
        /// The JWT's payload (base64url), decoded again for ``all``.
        let payload: Substring
        /// Every claim, once asked for.
        let all = Mutex<[String: JSONValue]?>(nil)

        init(modeled: Modeled, rawValue: String, payload: Substring) {
            self.modeled = modeled
            self.rawValue = rawValue
            self.payload = payload
        }
    }

    private let storage: Storage

    /// Every claim of the payload (decoded on the first read, then kept).
    public var all: [String: JSONValue] {
        storage.all.withLock { all in
            if let all { return all }
            // The payload decoded when the claims were made, so it decodes again to an object.
            let object = Base64URL.decode(storage.payload).flatMap { JSONValue(parsing: $0)?.objectValue } ?? [:]
            all = object
            return object
        }
    }
    /// The raw JWT (a secret-like value: never log it).
    public var rawValue: String { storage.rawValue }

    /// Whether the JWTs are equal (the claims are decoded from the JWT, so they are then equal too).
    public static func == (lhs: IDTokenClaims, rhs: IDTokenClaims) -> Bool {
        lhs.storage === rhs.storage || lhs.rawValue == rhs.rawValue
    }

    /// Hashes the JWT (which determines the claims).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(rawValue)
    }

    /// Decodes the payload of a compact JWT (RFC 7519 §7.2); the signature is not checked.
    /// - Throws: ``MSALError`` `.internal(.invalidIDToken)` when the token does not have three
    ///   dot-separated parts or the payload is not base64url JSON object.
    public init(jwt: String) throws(MSALError) {
        // The dots, found in the bytes in one pass (the token is 1-2 KB).
        var token = jwt
        let bounds = token.withUTF8 { bytes -> (Int, Int)? in
            var dots = 0, first = 0, second = 0
            for index in bytes.indices where bytes[index] == UInt8(ascii: ".") {
                dots += 1
                if dots == 1 { first = index } else if dots == 2 { second = index }
            }
            guard dots == 2 || dots == 4 else { return nil }
            return (first + 1, second)
        }
        guard let bounds else {
            throw .internal(.invalidIDToken, "The ID token is not a compact JWT (expected three dot-separated parts).")
        }
        let utf8 = jwt.utf8
        let payload = jwt[utf8.index(utf8.startIndex, offsetBy: bounds.0)..<utf8.index(utf8.startIndex, offsetBy: bounds.1)]
        var modeled = Modeled()
        guard let data = Base64URL.decode(payload),
              JSONValue.forEachMember(ofObjectIn: data, { modeled.read($0, $1) })
        else {
            throw .internal(.invalidIDToken, "The ID token's payload is not base64url-encoded JSON.")
        }
        storage = Storage(modeled: modeled, rawValue: jwt, payload: payload)
    }

    /// `iss`: the issuer identifier.
    public var issuer: String? { storage.modeled.issuer }
    /// `sub`: the subject, unique per issuer.
    public var subject: String? { storage.modeled.subject }
    /// `aud`: the audiences (a string or an array in the JWT; always an array here).
    public var audiences: [String] {
        if let single = storage.modeled.audience?.stringValue { return [single] }
        return storage.modeled.audience?.arrayValue?.compactMap(\.stringValue) ?? []
    }
    /// `exp`: the expiry instant (UTC).
    public var expiresOn: Date? { storage.modeled.expiry.map(Date.init(timeIntervalSince1970:)) }
    /// `iat`: the issue instant (UTC).
    public var issuedAt: Date? { storage.modeled.issuedAt.map(Date.init(timeIntervalSince1970:)) }
    /// `nonce`: the value the client sent in the authorization request.
    public var nonce: String? { storage.modeled.nonce }
    /// `oid`: Entra ID's object ID of the user in this tenant.
    public var objectID: String? { storage.modeled.objectID }
    /// `tid`: Entra ID's tenant ID.
    public var tenantID: String? { storage.modeled.tenantID }
    /// `preferred_username`, else `upn`, else `email`: the username shown to people.
    public var preferredUsername: String? {
        storage.modeled.preferredUsername ?? storage.modeled.upn ?? storage.modeled.email
    }
    /// `name`: the display name.
    public var name: String? { storage.modeled.name }
    /// `given_name`: the given (first) name (OpenID Connect Core §5.1).
    public var givenName: String? { storage.modeled.givenName }
    /// `family_name`: the surname (OpenID Connect Core §5.1).
    public var familyName: String? { storage.modeled.familyName }
    /// `email`.
    public var email: String? { storage.modeled.email }

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
