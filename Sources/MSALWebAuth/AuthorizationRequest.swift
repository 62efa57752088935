public import Foundation
public import MSALCore

/// The `prompt` parameter of an authorization request (OpenID Connect Core §3.1.2.1), with the
/// values Entra ID accepts.
public enum Prompt: String, Sendable, CaseIterable {
    /// Show the account picker even when one account is signed in (`select_account`).
    case selectAccount = "select_account"
    /// Ask for credentials even when a session exists (`login`).
    case login
    /// Show the consent screen even when consent was given (`consent`).
    case consent
    /// Offer to create an account (`create`, OpenID Connect Prompt Create 1.0; Entra External ID).
    case create
    /// Show nothing: succeed silently or fail with `login_required`, `interaction_required` or
    /// `consent_required` (sent as `prompt=none`). Named `never` so that `promptType: .never`
    /// cannot be mistaken for `Optional.none` (no `prompt` at all).
    case never = "none"
}

/// An authorization request for the authorization code grant with PKCE: the URL to open in the
/// system browser, and the token-endpoint parameters that redeem the code it yields.
///
/// Sources: RFC 6749 §4.1.1 (request) and §4.1.3 (redemption), RFC 7636 §4.3 and §4.5 (PKCE),
/// OpenID Connect Core §3.1.2.1 (`nonce`, `prompt`, `login_hint`, `claims`), RFC 8252 (native
/// apps). `state`, `nonce` and the code verifier are secrets of this request: ``description`` and
/// the mirror never show them, nor the login hint.
public struct AuthorizationRequest: Sendable, CustomStringConvertible, CustomReflectable {
    /// The authorization endpoint, from the authority's OpenID configuration. Query items it
    /// already has (e.g. an Azure AD B2C policy `p=`) are kept in ``url``.
    public var authorizationEndpoint: URL
    /// The application (client) ID, sent as `client_id`.
    public var clientID: String
    /// The redirect URI, sent as `redirect_uri`; for a loopback redirect, the URI with the port the
    /// listener bound (``RedirectURI/withPort(_:)``). The same value goes to the token endpoint.
    public var redirectURI: URL
    /// The scopes, sent as given as `scope` (space-separated). The facade adds the reserved OpenID
    /// Connect scopes (``ScopeSet/reservedOIDCScopes``) and any extra scopes to consent to.
    public var scopes: ScopeSet
    /// The `state` value (RFC 6749 §4.1.1, §10.12): the response must carry it back unchanged.
    public var state: String
    /// The `nonce` value (OpenID Connect Core §3.1.2.1): the ID token must carry it back.
    public var nonce: String
    /// The PKCE pair: the challenge goes into ``url``, the verifier into ``tokenParameters(code:)``.
    public var pkce: PKCE
    /// The `prompt` parameter, or `nil` to let the server decide.
    public var prompt: Prompt?
    /// The `login_hint` parameter: the user name to pre-fill.
    public var loginHint: String?
    /// The `domain_hint` parameter (Entra ID): skips home-realm discovery, e.g. `consumers` or a
    /// federated domain.
    public var domainHint: String?
    /// The `claims` parameter: a JSON object of requested claims or a claims challenge
    /// (OpenID Connect Core §5.5), sent as given.
    public var claims: String?
    /// Whether to send `client_info=1`, asking Entra ID for the `client_info` that identifies the
    /// home account.
    public var includeClientInfo: Bool
    /// Further query parameters (extension by parameters, RFC 6749 §8.2). A name used by a standard
    /// parameter (see ``standardParameterNames``) is ignored even when that parameter is not sent;
    /// a name the endpoint's own query already has replaces the endpoint's value.
    public var extraQueryParameters: [String: String]

    /// The names this request sets itself; ``extraQueryParameters`` with these names are ignored
    /// and endpoint query items with these names are dropped.
    public static let standardParameterNames: Set<String> = [
        "response_type", "client_id", "redirect_uri", "scope", "state", "nonce", "code_challenge",
        "code_challenge_method", "prompt", "login_hint", "domain_hint", "claims", "client_info",
    ]

    /// Creates a request with a fresh `state` and `nonce` (32 random bytes, 256 bits, each: 43
    /// base64url characters, from ``SecureRandom``) and a fresh ``PKCE`` pair.
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when `clientID` is empty;
    ///   `.internal(.unexpected)` when OpenSSL cannot produce random bytes.
    public init(
        authorizationEndpoint: URL,
        clientID: String,
        redirectURI: URL,
        scopes: ScopeSet,
        prompt: Prompt? = nil,
        loginHint: String? = nil,
        domainHint: String? = nil,
        claims: String? = nil,
        includeClientInfo: Bool = false,
        extraQueryParameters: [String: String] = [:]
    ) throws(MSALError) {
        guard !clientID.isEmpty else {
            throw .internal(.invalidParameter, "The client ID of an authorization request may not be empty.")
        }
        self.authorizationEndpoint = authorizationEndpoint
        self.clientID = clientID
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.state = try SecureRandom.base64URLString(byteCount: 32)
        self.nonce = try SecureRandom.base64URLString(byteCount: 32)
        self.pkce = try PKCE()
        self.prompt = prompt
        self.loginHint = loginHint
        self.domainHint = domainHint
        self.claims = claims
        self.includeClientInfo = includeClientInfo
        self.extraQueryParameters = extraQueryParameters
    }

    /// The standard parameters, in the order they appear in ``url``.
    private var standardParameters: [(String, String)] {
        var parameters: [(String, String)] = [
            ("response_type", "code"),
            ("client_id", clientID),
            ("redirect_uri", redirectURI.absoluteString),
            ("scope", scopes.joined),
            ("state", state),
            ("nonce", nonce),
            ("code_challenge", pkce.codeChallenge),
            ("code_challenge_method", pkce.codeChallengeMethod),
        ]
        if let prompt { parameters.append(("prompt", prompt.rawValue)) }
        if let loginHint { parameters.append(("login_hint", loginHint)) }
        if let domainHint { parameters.append(("domain_hint", domainHint)) }
        if let claims { parameters.append(("claims", claims)) }
        if includeClientInfo { parameters.append(("client_info", "1")) }
        return parameters
    }

    /// The URL to open in the browser: ``authorizationEndpoint`` with its own query items (minus
    /// standard names and names overridden by ``extraQueryParameters``), then `response_type=code`,
    /// `client_id`, `redirect_uri`, `scope`, `state`, `nonce`, `code_challenge`,
    /// `code_challenge_method=S256`, and when set `prompt`, `login_hint`, `domain_hint`, `claims`,
    /// `client_info=1`, then the extra parameters sorted by name.
    ///
    /// Names and values are percent-encoded except RFC 3986 §2.3 unreserved characters, so a `+`,
    /// `&`, `=` or space in a value arrives intact (`%2B`, `%26`, `%3D`, `%20`).
    public var url: URL {
        guard var components = URLComponents(url: authorizationEndpoint, resolvingAgainstBaseURL: false) else {
            return authorizationEndpoint
        }
        let extras = extraQueryParameters
            .filter { !Self.standardParameterNames.contains($0.key) }
            .sorted { $0.key < $1.key }
        let extraNames = Set(extras.map(\.key))
        var items = (components.percentEncodedQueryItems ?? []).filter { item in
            let name = item.name.removingPercentEncoding ?? item.name
            return !Self.standardParameterNames.contains(name) && !extraNames.contains(name)
        }
        for (name, value) in standardParameters + extras {
            items.append(URLQueryItem(name: Self.percentEncode(name), value: Self.percentEncode(value)))
        }
        components.percentEncodedQueryItems = items
        return components.url ?? authorizationEndpoint
    }

    /// The token-endpoint form parameters that redeem `code`: `grant_type=authorization_code`,
    /// `code`, `redirect_uri` (the same as in ``url``), `code_verifier` and `client_id`
    /// (RFC 6749 §4.1.3, RFC 7636 §4.5). Pass them to
    /// `OAuth2Client.redeem(tokenEndpoint:parameters:correlationID:)`.
    /// - Returns: the parameters; they contain the code and the verifier, so never log them.
    public func tokenParameters(code: String) -> [String: String] {
        [
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirectURI.absoluteString,
            "code_verifier": pkce.codeVerifier,
            "client_id": clientID,
        ]
    }

    /// Percent-encodes everything but RFC 3986 §2.3 unreserved characters (`A-Z a-z 0-9 - . _ ~`).
    static func percentEncode(_ string: String) -> String {
        var result = ""
        result.reserveCapacity(string.utf8.count)
        for byte in string.utf8 {
            if PKCE.isUnreserved(byte) {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }

    /// The endpoint, client ID, redirect URI, scopes and prompt; never `state`, `nonce`, the code
    /// verifier or the login hint.
    public var description: String {
        var text = "AuthorizationRequest(endpoint: \(authorizationEndpoint.absoluteString), clientID: \(clientID), redirectURI: \(redirectURI.absoluteString), scopes: \(scopes.joined)"
        if let prompt { text += ", prompt: \(prompt.rawValue)" }
        return text + ")"
    }

    /// A mirror with the fields ``description`` shows, so `dump` does not print a secret.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "authorizationEndpoint": authorizationEndpoint, "clientID": clientID, "redirectURI": redirectURI,
                "scopes": scopes, "prompt": prompt as Any,
            ],
            displayStyle: .struct
        )
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
