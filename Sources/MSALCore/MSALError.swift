public import Foundation

/// An error from swift-msal: a value with a stable ``Code`` and the context a caller needs to act on it.
///
/// Equality compares ``code`` and ``internalCode`` only, so `error == MSALError(.interactionRequired)`
/// reads naturally. The ``description`` never contains a token, an authorization code, a device code
/// or a refresh token: only the message written by swift-msal and the server's error fields.
///
/// Source: the error domain of MSAL for iOS/macOS (`MSALErrorInteractionRequired`,
/// `MSALErrorServerDeclinedScopes`, `MSALErrorUserCanceled`, `MSALErrorServerError`,
/// `MSALErrorInternal` with an `MSALInternalError` sub-code), and RFC 6749 §5.2 for the OAuth fields.
public struct MSALError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What a caller should do about the error.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The user must sign in interactively (no account, a rejected refresh token, consent needed).
        case interactionRequired
        /// The server granted fewer scopes than requested; ``MSALError/grantedScopes`` and
        /// ``MSALError/declinedScopes`` say which.
        case serverDeclinedScopes
        /// The user or the app canceled the flow (device code denied, task canceled).
        case userCanceled
        /// The identity provider answered with an error or with something that is not a valid answer.
        case serverError
        /// The resource requires an app protection policy (Intune) the app does not have:
        /// Entra ID's `protection_policy_required` suberror (MSAL for iOS/macOS
        /// `MSALErrorServerProtectionPoliciesRequired`).
        case serverProtectionPoliciesRequired
        /// Something in swift-msal or in the app's input went wrong; ``MSALError/internalCode`` says what.
        case `internal`
    }

    /// The precise reason for an ``Code/internal`` error (and, for some server errors, a refinement).
    public enum InternalCode: String, Sendable, Hashable, CaseIterable {
        /// A parameter passed by the app is invalid (empty client id, bad option).
        case invalidParameter
        /// The authority is not a URL, uses `http` on a non-loopback host, or cannot be classified.
        case invalidAuthority
        /// Instance discovery does not know the authority's host: Entra ID answered
        /// `invalid_instance` (AADSTS50049), so the host is not a Microsoft Entra cloud
        /// (MSAL for iOS/macOS `MSALInternalErrorFailedAuthorityValidation`). Check the host, list a
        /// trusted host in `knownAuthorities`, or turn authority validation off.
        case failedAuthorityValidation
        /// A scope is empty, contains whitespace, or is one of the reserved OpenID Connect scopes.
        case invalidScope
        /// The identity provider could not be reached (refused, DNS, TLS, reset).
        case networkError
        /// The identity provider did not answer in time.
        case timeout
        /// A response body could not be understood (not JSON, HTML, empty, missing fields).
        case invalidResponse
        /// The ID token is malformed or failed validation (`iss`, `aud`, `exp`, `nonce`).
        case invalidIDToken
        /// The device code expired before the user finished signing in (RFC 8628 §3.5 `expired_token`).
        case deviceCodeExpired
        /// The token cache could not be read or written.
        case cacheError
        /// The chosen token cache backend cannot be used on this machine at all: no D-Bus session,
        /// no Secret Service provider, or a keyring that is locked; the message says what to install
        /// or unlock. An app may fall back to another store.
        case cacheUnavailable
        /// Several cached accounts match a username lookup; look the account up by identifier.
        case ambiguousAccount
        /// The user who signed in is not the account the interactive request named.
        case mismatchedUser
        /// An interactive sign-in is already running in this application; one at a time (MSAL for
        /// iOS/macOS `MSALErrorInteractiveSessionAlreadyRunning`).
        case interactiveSessionAlreadyRunning
        /// Set with ``Code/serverError`` when the provider answered `invalid_grant` to a request
        /// that was not a silent refresh (e.g. a bad authorization code).
        case invalidGrant
        /// Set with ``Code/serverError`` when the provider answered `invalid_client`: the client ID
        /// or its registration is wrong.
        case invalidClient
        /// Set with ``Code/serverError`` when the provider answered `unauthorized_client`: the app
        /// is not allowed this grant.
        case unauthorizedClient
        /// The redirect URI is not allowed (a fragment, no scheme or host, `urn:ietf:wg:oauth:2.0:oob`,
        /// `http` on a host that is not loopback, `https` anywhere (a loopback listener serves no
        /// TLS), or `msauth.<other app id>://auth`); the message says which rule it broke. Thrown
        /// when the application is configured.
        case invalidRedirectURI
        /// A redirect to the app's private-use scheme arrived for the running interactive sign-in
        /// with a missing or foreign `state` (RFC 6749 §10.12: a forged or misrouted response); the
        /// sign-in is ended rather than completed (MSAL for iOS/macOS `MSALInternalErrorInvalidState`).
        case invalidState
        /// The app ended the running interactive sign-in with
        /// `PublicClientApplication.cancelCurrentInteractiveSession()` (MSAL for iOS/macOS
        /// `MSALErrorSessionCanceled`).
        case sessionCanceled
        /// An invariant of swift-msal was broken; please report it.
        case unexpected
    }

    /// The stable error code.
    public var code: Code
    /// The precise internal reason, set for ``Code/internal`` and sometimes for other codes.
    public var internalCode: InternalCode?
    /// A human-readable explanation written by swift-msal. Never contains a secret.
    public var message: String
    /// The OAuth `error` field from the server (RFC 6749 §5.2), e.g. `invalid_grant`.
    public var oauthError: String?
    /// The server's `error_description`, as sent except for anything that looks like a token (a JWT,
    /// or a long run of random base64url; see the error model), which is replaced by `<redacted>`.
    public var oauthErrorDescription: String?
    /// Entra ID's `suberror` field, e.g. `basic_action`, `consent_required`.
    public var subError: String?
    /// Entra ID's `error_codes` (AADSTS numbers).
    public var errorCodes: [Int]
    /// The correlation ID of the request (`correlation_id` or the `client-request-id` header).
    public var correlationID: String?
    /// The HTTP status of the response that caused the error, if there was one.
    public var httpStatusCode: Int?
    /// For ``Code/serverDeclinedScopes``: the scopes the server granted.
    public var grantedScopes: [String]
    /// For ``Code/serverDeclinedScopes``: the requested scopes the server did not grant.
    public var declinedScopes: [String]
    /// For ``Code/serverDeclinedScopes``: the result for the scopes that were granted (an
    /// `AuthenticationResult` of the `MSAL` module, which reads it as `declinedScopesResult`),
    /// as MSAL for iOS/macOS puts it under `MSALInvalidResultKey`. Never part of ``description``.
    public var partialResult: (any Sendable)?
    /// How long to wait before sending the same request again, in seconds, when known.
    ///
    /// Set from the response's `Retry-After` header (RFC 9110 §10.2.3, delta-seconds or an
    /// HTTP-date, measured from when the response arrived) on a server error, and on an error
    /// swift-msal raises without contacting the server because the request is throttled: then it is
    /// the time left until the throttle ends (MSAL.NET's `MsalThrottledServiceException` carries
    /// the original response's `Retry-After` the same way). `nil` when the server said nothing.
    public var retryAfter: TimeInterval?

    /// Creates an error.
    /// - Parameters:
    ///   - code: the stable code.
    ///   - internalCode: the precise reason (required in spirit for ``Code/internal``).
    ///   - message: a human-readable explanation; must not contain a secret.
    public init(
        _ code: Code,
        internalCode: InternalCode? = nil,
        message: String,
        oauthError: String? = nil,
        oauthErrorDescription: String? = nil,
        subError: String? = nil,
        errorCodes: [Int] = [],
        correlationID: String? = nil,
        httpStatusCode: Int? = nil,
        grantedScopes: [String] = [],
        declinedScopes: [String] = [],
        retryAfter: TimeInterval? = nil
    ) {
        self.code = code
        self.internalCode = internalCode
        self.message = message
        self.oauthError = oauthError
        self.oauthErrorDescription = oauthErrorDescription
        self.subError = subError
        self.errorCodes = errorCodes
        self.correlationID = correlationID
        self.httpStatusCode = httpStatusCode
        self.grantedScopes = grantedScopes
        self.declinedScopes = declinedScopes
        self.partialResult = nil
        self.retryAfter = retryAfter
    }

    /// Shorthand for an ``Code/internal`` error with its reason.
    /// - Returns: an error whose ``code`` is ``Code/internal`` and ``internalCode`` is `internalCode`.
    public static func `internal`(_ internalCode: InternalCode, _ message: String) -> MSALError {
        MSALError(.internal, internalCode: internalCode, message: message)
    }

    /// Compares ``code`` and ``internalCode`` only; the context fields do not take part.
    public static func == (lhs: MSALError, rhs: MSALError) -> Bool {
        lhs.code == rhs.code && lhs.internalCode == rhs.internalCode
    }

    /// The code as one stable string: `interactionRequired`, or `internal.cacheError` for internal errors.
    public var codeString: String {
        if let internalCode { return "\(code.rawValue).\(internalCode.rawValue)" }
        return code.rawValue
    }

    /// One line: the code, the message, then the OAuth fields, HTTP status, `retry_after` (whole
    /// seconds, rounded up) and correlation ID when present.
    /// Control characters a server may have put in its fields (line breaks in Entra's
    /// `error_description`, terminal escapes) are replaced by spaces, so it stays one line.
    public var description: String {
        MSALError.oneLine(rawDescription)
    }

    /// `text` from a server (an `error_description`) with what looks like a token replaced by
    /// `<redacted>`. The text is cut into runs of the characters tokens are made of (letters,
    /// digits, `-`, `_`, `.`, `+`, `!`, `*`, `$`); a run (less its trailing dots) is a token when it
    /// starts with `eyJ` and has 20 or more characters (a JWT), or has 32 or more and, somewhere,
    /// 16 or more letters and digits in a row with upper- and lowercase letters and digits among
    /// them (random base64url: refresh tokens, codes, Microsoft account tokens). Words, dotted or
    /// underscored names (permissions, domains, policies, exception types), GUIDs and home account
    /// IDs have no such stretch; URLs and `key=value` pairs are cut at `:`, `/`, `=`.
    /// A server should never echo a credential in an error; if one does, it stays out of messages
    /// and logs.
    /// - Returns: the text, redacted.
    package static func redactingTokens(_ text: String) -> String {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20 else { return text }
        func isTokenByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "+"), UInt8(ascii: "!"), UInt8(ascii: "*"),
                 UInt8(ascii: "$"):
                true
            default:
                false
            }
        }
        func looksLikeToken(_ run: ArraySlice<UInt8>) -> Bool {
            if run.count >= 20, run.starts(with: Array("eyJ".utf8)) { return true }
            guard run.count >= 32 else { return false }
            // Some stretch of 16 or more letters and digits, between the other characters, holds
            // upper- and lowercase letters and digits: random base64 does; a policy, permission or
            // exception name's words do not.
            var length = 0, upper = false, lower = false, digit = false
            for byte in run {
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): upper = true
                case UInt8(ascii: "a")...UInt8(ascii: "z"): lower = true
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = true
                default:
                    length = 0
                    upper = false
                    lower = false
                    digit = false
                    continue
                }
                length += 1
                if length >= 16, upper, lower, digit { return true }
            }
            return false
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        var changed = false
        while index < bytes.count {
            guard isTokenByte(bytes[index]) else {
                out.append(bytes[index])
                index += 1
                continue
            }
            var end = index
            while end < bytes.count, isTokenByte(bytes[end]) { end += 1 }
            var core = end  // the run less its trailing dots (the end of a sentence)
            while core > index, bytes[core - 1] == UInt8(ascii: ".") { core -= 1 }
            if looksLikeToken(bytes[index..<core]) {
                out.append(contentsOf: Array("<redacted>".utf8))
                out.append(contentsOf: bytes[core..<end])
                changed = true
            } else {
                out.append(contentsOf: bytes[index..<end])
            }
            index = end
        }
        return changed ? String(decoding: out, as: UTF8.self) : text
    }

    /// `text` with every control character (C0, DEL, C1) replaced by a space.
    static func oneLine(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            (scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)) ? " " : scalar
        }))
    }

    private var rawDescription: String {
        var parts = ["\(codeString): \(message)"]
        if let oauthError { parts.append("error=\(oauthError)") }
        if let subError { parts.append("suberror=\(subError)") }
        if !errorCodes.isEmpty { parts.append("error_codes=\(errorCodes.map(String.init).joined(separator: ","))") }
        if let httpStatusCode { parts.append("http_status=\(httpStatusCode)") }
        if let retryAfter { parts.append("retry_after=\(Int(retryAfter.rounded(.up)))s") }
        if let correlationID { parts.append("correlation_id=\(correlationID)") }
        if !declinedScopes.isEmpty { parts.append("declined_scopes=\(declinedScopes.joined(separator: " "))") }
        return parts.joined(separator: " ")
    }
}

extension MSALError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}
