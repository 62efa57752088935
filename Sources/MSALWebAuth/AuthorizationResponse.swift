internal import COpenSSL
public import Foundation
public import MSALCore

/// What arrived at the redirect URI after the user signed in: an authorization code or an error
/// (RFC 6749 §4.1.2, §4.1.2.1).
///
/// ``description``, ``debugDescription`` and the mirror never show the code.
public enum AuthorizationResponse: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The authorization code (`code`), to redeem with ``AuthorizationRequest/tokenParameters(code:)``.
    /// An empty string means the response matched the request's `state` but carried no usable
    /// code; ``error`` reports it.
    case code(String)
    /// The server's error response: `error`, `error_description`, `error_uri` (RFC 6749 §4.1.2.1)
    /// and Entra ID's `suberror` (on the authorize redirect Entra names it `error_subcode`, e.g.
    /// `cancel` when the user canceled).
    case error(error: String, description: String?, uri: String?, subError: String?)

    /// Interprets the parameters of a redirect.
    ///
    /// - Parameters:
    ///   - queryItems: the decoded query parameters of the redirect.
    ///   - expectedState: the `state` of the ``AuthorizationRequest`` this answers.
    /// - Returns: `nil` when `state` is missing, differs from `expectedState`, or `expectedState` is
    ///   empty: the redirect does not belong to this request (RFC 6749 §10.12, a CSRF defence), so
    ///   the caller rejects it and keeps waiting. The comparison takes time independent of where
    ///   the values differ (OpenSSL `CRYPTO_memcmp`). Otherwise ``error(error:description:uri:subError:)``
    ///   when `error` is present (even alongside a code; `subError` from `suberror`, else
    ///   `error_subcode`), else ``code(_:)`` with `code`, or with
    ///   `""` when `code` is missing.
    public static func parse(queryItems: [String: String], expectedState: String) -> AuthorizationResponse? {
        guard let state = queryItems["state"], !expectedState.isEmpty, constantTimeEqual(state, expectedState) else {
            return nil
        }
        if let error = queryItems["error"] {
            return .error(
                error: error,
                // A server should never echo a token in its error; if one does, it is redacted here.
                description: queryItems["error_description"].map(MSALError.redactingTokens),
                uri: queryItems["error_uri"],
                subError: queryItems["suberror"] ?? queryItems["error_subcode"]
            )
        }
        return .code(queryItems["code"] ?? "")
    }

    /// Interprets a full redirect URL (e.g. `http://localhost:51234/cb?code=...&state=...`).
    ///
    /// The query is decoded as `application/x-www-form-urlencoded` (RFC 6749 Appendix B): `+` is a
    /// space and `%2B` a plus sign.
    /// - Returns: as ``parse(queryItems:expectedState:)``; also `nil` when the URL has no query or a
    ///   parameter appears more than once (RFC 6749 §3.1: parameters must not be repeated).
    public static func parse(url: URL, expectedState: String) -> AuthorizationResponse? {
        guard let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQueryItems else {
            return nil
        }
        var parameters: [String: String] = [:]
        for item in items {
            let name = formDecode(item.name)
            guard parameters[name] == nil else { return nil }
            parameters[name] = formDecode(item.value ?? "")
        }
        return parse(queryItems: parameters, expectedState: expectedState)
    }

    /// The response as an ``MSALError``, or `nil` for a non-empty code.
    ///
    /// - `access_denied` (the user declined to sign in or to consent, RFC 6749 §4.1.2.1) gives
    ///   `.userCanceled`, as MSAL for iOS/macOS reports it;
    /// - any other `error` gives `.serverError` with ``MSALError/oauthError``,
    ///   ``MSALError/oauthErrorDescription`` and ``MSALError/subError`` set from the response;
    /// - an empty or missing code gives `.serverError` with internal code `.invalidResponse`.
    public var error: MSALError? {
        switch self {
        case .code(let code):
            guard code.isEmpty else { return nil }
            return MSALError(
                .serverError,
                internalCode: .invalidResponse,
                message: "The authorization response matched the request but carried no authorization code."
            )
        case .error(let error, let description, _, let subError):
            if error == "access_denied" {
                return MSALError(
                    .userCanceled,
                    message: "The user declined to sign in or to consent (access_denied).",
                    oauthError: error,
                    oauthErrorDescription: description,
                    subError: subError
                )
            }
            var message = "The authorization server answered with the error '\(error)'"
            if let description, !description.isEmpty { message += ": \(description)" }
            return MSALError(
                .serverError,
                message: message,
                oauthError: error,
                oauthErrorDescription: description,
                subError: subError
            )
        }
    }

    /// `code(<redacted>)`, or the error fields; never the code.
    public var description: String {
        switch self {
        case .code(let code):
            return code.isEmpty ? "AuthorizationResponse.code(<empty>)" : "AuthorizationResponse.code(<redacted>)"
        case .error(let error, let description, let uri, let subError):
            var parts = ["error: \(error)"]
            if let description { parts.append("description: \(description)") }
            if let uri { parts.append("uri: \(uri)") }
            if let subError { parts.append("subError: \(subError)") }
            return "AuthorizationResponse.error(\(parts.joined(separator: ", ")))"
        }
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// A mirror that shows ``description`` only, so `dump` does not print the code.
    public var customMirror: Mirror {
        Mirror(self, children: ["value": description], displayStyle: .enum)
    }

    // MARK: - Helpers

    /// Compares the UTF-8 bytes in time that depends on the length only (OpenSSL `CRYPTO_memcmp`).
    static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf8)
        let right = Array(rhs.utf8)
        guard left.count == right.count else { return false }
        guard !left.isEmpty else { return true }
        return left.withUnsafeBytes { l in
            right.withUnsafeBytes { r in CRYPTO_memcmp(l.baseAddress, r.baseAddress, l.count) == 0 }
        }
    }

    /// `application/x-www-form-urlencoded` decoding: `+` is a space, then percent-decoding; a
    /// malformed escape leaves the text as it was.
    private static func formDecode(_ string: String) -> String {
        let spaced = string.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
