public import Foundation

/// A redirect URI for interactive sign-in, validated when the application is configured, as
/// MSAL for iOS/macOS validates its redirect URI (`MSALRedirectUriVerifier`).
///
/// On Linux the app's *application ID* is its reverse-DNS desktop-file ID (e.g. `com.contoso.App`),
/// which plays the part of the iOS bundle ID in the broker-style `msauth.<application ID>://auth`.
/// Two kinds are accepted:
/// - a loopback redirect `http://127.0.0.1[:port][/path]` or `http://localhost[:port][/path]`,
///   served by a listener of the app (RFC 8252 §7.3);
/// - a private-use URI scheme such as `com.contoso.app:/callback`, `myapp://auth` or
///   `msauth.<application ID>://auth`, delivered by the desktop environment (RFC 8252 §7.1).
///
/// ``url`` keeps the spelling it was given: it is the `redirect_uri` sent to the authorization and
/// token endpoints, which must match the registration exactly (RFC 6749 §3.1.2, §4.1.3).
public struct RedirectURI: Sendable, Hashable, CustomStringConvertible {
    /// How the authorization response reaches the app.
    public enum Kind: Sendable, Hashable {
        /// A listener on the loopback interface receives the redirect (RFC 8252 §7.3).
        /// - `host`: `127.0.0.1` or `localhost` (lowercased).
        /// - `port`: the port to listen on; `nil` when the URI names none and the listener picks
        ///   any free port (RFC 8252 §7.3: the server must allow any port for loopback redirects).
        /// - `path`: the path to expect, `/` when the URI has none.
        case loopback(host: String, port: UInt16?, path: String)
        /// A private-use URI scheme the desktop environment hands to the app (RFC 8252 §7.1);
        /// `scheme` is lowercased (RFC 3986 §3.1: schemes are case-insensitive).
        case customScheme(scheme: String)
    }

    /// The redirect URI as given (surrounding whitespace removed).
    public let url: URL
    /// What kind of redirect this is.
    public let kind: Kind

    /// Validates a redirect URI.
    ///
    /// Accepts `http://127.0.0.1[:port][/path]`, `http://localhost[:port][/path]` (RFC 8252 §7.3),
    /// `msauth.<applicationID>://auth` (as MSAL for iOS/macOS builds it from the bundle ID) and other
    /// private-use schemes such as `com.contoso.app:/callback` or `myapp://auth` (RFC 8252 §7.1).
    ///
    /// - Parameters:
    ///   - string: the redirect URI the app registered.
    ///   - applicationID: the app's reverse-DNS application ID (desktop-file ID), or `nil` when the
    ///     app did not configure one.
    /// - Throws: ``MSALError`` `.internal(.invalidRedirectURI)`, with the broken rule in the message,
    ///   when the URI: is `urn:ietf:wg:oauth:2.0:oob` (no out-of-band flow, RFC 8252 §7); has a
    ///   fragment (RFC 6749 §3.1.2); has no scheme, or a scheme that is not RFC 3986 §3.1 syntax;
    ///   uses `http` without a host, on a host that is not `127.0.0.1` or `localhost`, with user
    ///   information or with port 0; uses `https` at all (a non-loopback `https` redirect would go to
    ///   a web server, and a loopback listener cannot serve TLS); is `msauth.<id>` with `<id>` other
    ///   than `applicationID` (compared ignoring case) or not of the form `msauth.<id>://auth`; is
    ///   `msauth.` while `applicationID` is `nil`; or is a private-use scheme with nothing after it.
    public init(_ string: String, applicationID: String?) throws(MSALError) {
        let trimmed = string.trimmingASCIIWhitespace()
        if trimmed.lowercased().hasPrefix("urn:ietf:wg:oauth:2.0:oob") {
            throw Self.invalid("'urn:ietf:wg:oauth:2.0:oob' (out-of-band) is not supported; use a loopback redirect such as http://localhost (RFC 8252 §7.3).")
        }
        if trimmed.contains("#") {
            throw Self.invalid("The redirect URI '\(trimmed)' may not contain a fragment (RFC 6749 §3.1.2).")
        }
        guard let scheme = Self.scheme(of: trimmed) else {
            throw Self.invalid("The redirect URI '\(trimmed)' has no scheme; write it in full, e.g. http://localhost:8400/ or myapp://auth.")
        }
        guard Self.isValidScheme(scheme) else {
            throw Self.invalid("'\(scheme)' is not a valid URI scheme: it must start with a letter followed by letters, digits, '+', '-' or '.' (RFC 3986 §3.1).")
        }
        guard let components = URLComponents(string: trimmed), let url = components.url else {
            throw Self.invalid("The redirect URI '\(trimmed)' is not a valid URI (RFC 3986).")
        }
        let lowerScheme = scheme.lowercased()

        switch lowerScheme {
        case "http", "https":
            guard let rawHost = components.host, !rawHost.isEmpty else {
                throw Self.invalid("The redirect URI '\(trimmed)' has no host.")
            }
            let host = rawHost.lowercased()
            guard host == "127.0.0.1" || host == "localhost" else {
                throw Self.invalid(
                    "An http(s) redirect URI must be a loopback redirect on 127.0.0.1 or localhost (RFC 8252 §7.3), not '\(rawHost)'; for another host use a private-use scheme such as myapp://auth."
                )
            }
            guard lowerScheme == "http" else {
                throw Self.invalid("A loopback redirect URI must use http, not https: the loopback listener cannot serve TLS (RFC 8252 §7.3, §8.3).")
            }
            if components.user != nil || components.password != nil {
                throw Self.invalid("A loopback redirect URI may not carry user information.")
            }
            var port: UInt16?
            if let given = components.port {
                guard given > 0, let value = UInt16(exactly: given) else {
                    throw Self.invalid("The loopback port must be 1–65535; leave it out to let the listener pick a free port.")
                }
                port = value
            }
            let path = components.path.isEmpty ? "/" : components.path
            self.url = url
            self.kind = .loopback(host: host, port: port, path: path)

        default:
            if lowerScheme.hasPrefix("msauth.") {
                let claimedID = String(scheme.dropFirst("msauth.".count))
                guard let applicationID, !applicationID.isEmpty else {
                    throw Self.invalid(
                        "An msauth.<application ID>://auth redirect URI needs the application ID to be configured (the app's reverse-DNS desktop-file ID, e.g. com.contoso.App)."
                    )
                }
                guard claimedID.lowercased() == applicationID.lowercased() else {
                    throw Self.invalid(
                        "The redirect URI '\(trimmed)' names another application: expected \(Self.msauth(applicationID: applicationID)), as MSAL for iOS/macOS requires msauth.<bundle id>://auth."
                    )
                }
                guard components.host?.lowercased() == "auth", components.path.isEmpty || components.path == "/",
                      components.query == nil, components.port == nil, components.user == nil
                else {
                    throw Self.invalid("An msauth redirect URI must be exactly \(Self.msauth(applicationID: applicationID)).")
                }
            }
            let hasHost = !(components.host ?? "").isEmpty
            let hasPath = !components.path.isEmpty
            guard hasHost || hasPath else {
                throw Self.invalid("The redirect URI '\(trimmed)' has nothing after its scheme; use a form such as \(scheme):/callback or \(scheme)://auth.")
            }
            self.url = url
            self.kind = .customScheme(scheme: lowerScheme)
        }
    }

    private init(url: URL, kind: Kind) {
        self.url = url
        self.kind = kind
    }

    /// Whether this is a loopback redirect served by a local listener (RFC 8252 §7.3).
    public var isLoopback: Bool {
        if case .loopback = kind { return true }
        return false
    }

    /// The same redirect with the port the loopback listener actually bound.
    ///
    /// Entra ID and RFC 8252 §7.3 let the port of a loopback redirect vary at request time, so the
    /// `redirect_uri` sent to the server is this URI, not the registered one.
    /// - Returns: for a loopback redirect, the URI with `port` in ``url`` and ``kind``; for a
    ///   private-use scheme, `self` unchanged.
    public func withPort(_ port: UInt16) -> RedirectURI {
        guard case .loopback(let host, _, let path) = kind,
              var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return self }
        components.port = Int(port)
        guard let newURL = components.url else { return self }
        return RedirectURI(url: newURL, kind: .loopback(host: host, port: port, path: path))
    }

    /// The broker-style redirect URI MSAL for iOS/macOS derives from the bundle ID, here from the
    /// application ID.
    /// - Returns: `msauth.<applicationID>://auth`.
    public static func msauth(applicationID: String) -> String {
        "msauth.\(applicationID)://auth"
    }

    /// ``url`` as a string.
    public var description: String { url.absoluteString }

    // MARK: - Helpers

    private static func invalid(_ message: String) -> MSALError {
        .internal(.invalidRedirectURI, message)
    }

    /// The text before the first `:`, when a scheme can be there at all: `nil` when a `/`, `?` or
    /// `#` comes first, when nothing precedes the colon, or when what follows looks like a port
    /// (`localhost:8080`, `127.0.0.1:8080/cb`: a host with its scheme left out).
    private static func scheme(of string: String) -> String? {
        guard let colon = string.firstIndex(of: ":") else { return nil }
        let candidate = string[..<colon]
        if candidate.isEmpty || candidate.contains(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { return nil }
        let rest = string[string.index(after: colon)...]
        let digits = rest.prefix(while: { $0.isASCII && $0.isNumber })
        if !digits.isEmpty {
            let after = rest.dropFirst(digits.count)
            if after.isEmpty || after.first == "/" || after.first == "?" { return nil }
        }
        return String(candidate)
    }

    /// RFC 3986 §3.1: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    private static func isValidScheme(_ scheme: String) -> Bool {
        guard let first = scheme.unicodeScalars.first, first.isASCIILetter else { return false }
        return scheme.unicodeScalars.allSatisfy { $0.isASCIILetter || ("0"..."9").contains($0) || $0 == "+" || $0 == "-" || $0 == "." }
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}
