/// A set of OAuth 2.0 scopes (RFC 6749 §3.3) that compares case-insensitively and keeps the
/// spelling it was first given.
///
/// Scopes are trimmed of surrounding whitespace and empty strings are dropped. Membership,
/// equality and subset tests ignore ASCII case, as MSAL for iOS/macOS does when it matches a
/// request against cached access tokens. Iteration order is sorted by the lowercased scope, so
/// ``joined`` is stable.
public struct ScopeSet: Sendable, Hashable, Sequence, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// The OpenID Connect scopes every request carries and an app may not pass itself:
    /// `openid`, `profile`, `offline_access` (OpenID Connect Core §3.1.2.1, §11).
    public static let reservedOIDCScopes: ScopeSet = ["openid", "profile", "offline_access"]

    /// Lowercased scope -> the spelling first seen.
    private var storage: [String: String]

    /// Creates a set from scopes; each is trimmed, empty ones are dropped, duplicates that differ
    /// only in case collapse to the first spelling.
    public init(_ scopes: some Sequence<String>) {
        storage = [:]
        for scope in scopes {
            let trimmed = scope.trimmingASCIIWhitespace()
            guard !trimmed.isEmpty else { continue }
            let key = trimmed.lowercased()
            if storage[key] == nil { storage[key] = trimmed }
        }
    }

    /// Creates a set from an array literal.
    public init(arrayLiteral elements: String...) { self.init(elements) }

    /// Parses a space-delimited scope string, as in a token response's `scope` field (RFC 6749 §3.3).
    public init(spaceDelimited string: String) {
        self.init(string.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init))
    }

    /// The scopes in their original spelling, sorted by lowercased value.
    public var scopes: [String] { storage.keys.sorted().map { storage[$0]! } }

    /// The lowercased scopes, sorted.
    public var normalized: [String] { storage.keys.sorted() }

    /// The scopes joined with single spaces, in ``scopes`` order: the wire form of RFC 6749 §3.3.
    public var joined: String { scopes.joined(separator: " ") }

    /// The number of scopes.
    public var count: Int { storage.count }

    /// Whether the set has no scope.
    public var isEmpty: Bool { storage.isEmpty }

    /// Whether `scope` is in the set, ignoring case.
    public func contains(_ scope: String) -> Bool { storage[scope.trimmingASCIIWhitespace().lowercased()] != nil }

    /// Whether every scope of `other` is in this set, ignoring case.
    public func isSuperset(of other: ScopeSet) -> Bool { other.storage.keys.allSatisfy { storage[$0] != nil } }

    /// Whether every scope of this set is in `other`, ignoring case.
    public func isSubset(of other: ScopeSet) -> Bool { other.isSuperset(of: self) }

    /// Whether the two sets share at least one scope, ignoring case.
    public func intersects(_ other: ScopeSet) -> Bool { other.storage.keys.contains { storage[$0] != nil } }

    /// The scopes of both sets; a scope in both keeps this set's spelling.
    public func union(_ other: ScopeSet) -> ScopeSet {
        var result = self
        for (key, value) in other.storage where result.storage[key] == nil { result.storage[key] = value }
        return result
    }

    /// The scopes of this set that are not in `other`.
    public func subtracting(_ other: ScopeSet) -> ScopeSet {
        var result = self
        for key in other.storage.keys { result.storage[key] = nil }
        return result
    }

    /// Iterates ``scopes``.
    public func makeIterator() -> IndexingIterator<[String]> { scopes.makeIterator() }

    /// Equal when the lowercased scopes are equal.
    public static func == (lhs: ScopeSet, rhs: ScopeSet) -> Bool { lhs.storage.keys.sorted() == rhs.storage.keys.sorted() }

    /// Hashes the lowercased scopes.
    public func hash(into hasher: inout Hasher) {
        for key in storage.keys.sorted() { hasher.combine(key) }
    }

    /// ``joined``.
    public var description: String { joined }

    /// Whether the set asks for a resource's static permissions (`<resource>/.default`), for which a
    /// server answers with the resource's individual scopes rather than echoing the request.
    public var containsDefaultScope: Bool { storage.keys.contains { $0.hasSuffix("/.default") || $0 == ".default" } }

    /// Validates the scopes an app passes to a token request, as MSAL for iOS/macOS does.
    ///
    /// An empty list is allowed: a sign-in then asks only for the reserved OIDC scopes, and a silent
    /// request matches any cached access token of the account (as MSAL Python answers its
    /// `empty_scope_list` fixture query).
    ///
    /// - Returns: the normalized set (possibly empty).
    /// - Throws: ``MSALError`` `.internal(.invalidScope)` when a scope contains whitespace or a
    ///   character RFC 6749 §3.3 does not allow, or when a reserved scope (`openid`, `profile`,
    ///   `offline_access`) is passed: swift-msal adds those itself.
    public static func validatedRequest(_ scopes: [String]) throws(MSALError) -> ScopeSet {
        for scope in scopes where scope.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) {
            throw .internal(.invalidScope, "A scope may not contain whitespace (pass each scope separately): '\(MSALError.oneLine(scope))'.")
        }
        // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ): printable ASCII but `"` and `\`.
        for scope in scopes {
            let valid = scope.unicodeScalars.allSatisfy { scalar in
                scalar.value == 0x21 || (0x23...0x5B).contains(scalar.value) || (0x5D...0x7E).contains(scalar.value)
            }
            if !valid && !scope.isEmpty {
                throw .internal(.invalidScope, "A scope may contain only printable ASCII characters other than '\"' and '\\' (RFC 6749 §3.3): '\(MSALError.oneLine(scope))'.")
            }
        }
        let set = ScopeSet(scopes)
        let reserved = set.filter { reservedOIDCScopes.contains($0) }
        if !reserved.isEmpty {
            let names = reserved.map { "'\($0)'" }.joined(separator: ", ")
            throw .internal(
                .invalidScope,
                reserved.count == 1
                    ? "The reserved scope \(names) is added by MSAL to every request and must not be passed by the app."
                    : "The reserved scopes \(names) are added by MSAL to every request and must not be passed by the app."
            )
        }
        return set
    }

    /// The scope that asks for all of a v1 resource's statically configured permissions:
    /// `<resource>/.default`. A resource that ends in `/` gives `<resource>//.default`, which is
    /// what Entra ID expects for such resources (e.g. `https://management.core.windows.net/`).
    ///
    /// Source: Microsoft identity platform, "Scopes and permissions", the `.default` scope.
    /// - Returns: the scope string.
    public static func defaultScope(forResource resource: String) -> String {
        resource + "/.default"
    }
}

extension String {
    /// The string without leading and trailing ASCII spaces, tabs and line breaks.
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = lastIndex(where: { !isSpace($0) })!
        return String(self[start...end])
    }
}
