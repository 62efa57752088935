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

    /// The scopes as (lowercased, spelling first seen), sorted by the lowercased scope without
    /// duplicates: scope sets are small, and a sorted array answers membership, subset and
    /// iteration in order without hashing or sorting again.
    private var storage: [(lower: String, original: String)]

    /// Creates a set from scopes; each is trimmed, empty ones are dropped, duplicates that differ
    /// only in case collapse to the first spelling.
    public init(_ scopes: some Sequence<String>) {
        var pairs: [(lower: String, original: String, position: Int)] = []
        for scope in scopes {
            let trimmed = scope.trimmingASCIIWhitespace()
            guard !trimmed.isEmpty else { continue }
            pairs.append((trimmed.lowercased(), trimmed, pairs.count))
        }
        storage = Self.sortedUnique(pairs)
    }

    /// Sorts by lowercased scope and keeps the first spelling of each (by position).
    private static func sortedUnique(_ pairs: [(lower: String, original: String, position: Int)]) -> [(lower: String, original: String)] {
        guard pairs.count > 1 else { return pairs.map { ($0.lower, $0.original) } }
        let sorted = pairs.sorted { $0.lower != $1.lower ? $0.lower < $1.lower : $0.position < $1.position }
        var unique: [(lower: String, original: String)] = []
        unique.reserveCapacity(sorted.count)
        for pair in sorted where unique.last?.lower != pair.lower { unique.append((pair.lower, pair.original)) }
        return unique
    }

    /// Creates a set from an array literal.
    public init(arrayLiteral elements: String...) { self.init(elements) }

    /// Parses a space-delimited scope string, as in a token response's `scope` field (RFC 6749 §3.3).
    public init(spaceDelimited string: String) {
        guard string.isSimpleASCII else {
            self.init(string.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init))
            return
        }
        // ASCII without CR: every byte is a Character, so splitting the bytes splits the same way.
        self.init(string.utf8.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A }).map { String(decoding: $0, as: UTF8.self) })
    }

    /// The scopes in their original spelling, sorted by lowercased value.
    public var scopes: [String] { storage.map(\.original) }

    /// ``scopes`` of the set parsed from a space-delimited string: the same as
    /// `ScopeSet(spaceDelimited: string).scopes`, without building the set when the string already
    /// lists its scopes once each, in order (as cached `target` values written by MSAL do).
    /// - Returns: the scopes in their original spelling, sorted by lowercased value, without duplicates.
    public static func sortedScopes(spaceDelimited string: String) -> [String] {
        var string = string
        let fast = string.withUTF8 { bytes -> [String]? in
            // Scope boundaries, then: strictly increasing by lowercased bytes means already sorted,
            // no duplicates, nothing to trim (String's order is byte order for ASCII).
            var ranges: [Range<Int>] = []
            var start: Int?
            for index in 0...bytes.count {
                let byte: UInt8 = index < bytes.count ? bytes[index] : 0x20
                guard byte < 0x80, byte != 0x0D else { return nil }
                if byte == 0x20 || byte == 0x09 || byte == 0x0A {
                    if let first = start { ranges.append(first..<index) }
                    start = nil
                } else if start == nil {
                    start = index
                }
            }
            for (previous, next) in zip(ranges, ranges.dropFirst()) where !asciiLowercasedLess(bytes, previous, next) {
                return nil
            }
            return ranges.map { String(decoding: UnsafeBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }
        }
        return fast ?? ScopeSet(spaceDelimited: string).scopes
    }

    /// Whether the lowercased bytes at `lhs` sort before those at `rhs` (ASCII only).
    private static func asciiLowercasedLess(_ bytes: UnsafeBufferPointer<UInt8>, _ lhs: Range<Int>, _ rhs: Range<Int>) -> Bool {
        for offset in 0..<Swift.min(lhs.count, rhs.count) {
            let l = bytes[lhs.lowerBound + offset].asciiLowercased, r = bytes[rhs.lowerBound + offset].asciiLowercased
            if l != r { return l < r }
        }
        return lhs.count < rhs.count
    }

    /// The lowercased scopes, sorted.
    public var normalized: [String] { storage.map(\.lower) }

    /// Calls `body` with each lowercased scope, in ``normalized`` order, without building an array.
    package func forEachNormalized<E: Error>(_ body: (String) throws(E) -> Void) throws(E) {
        for index in storage.indices { try body(storage[index].lower) }
    }

    /// The scopes joined with single spaces, in ``scopes`` order: the wire form of RFC 6749 §3.3.
    public var joined: String { scopes.joined(separator: " ") }

    /// The number of scopes.
    public var count: Int { storage.count }

    /// Whether the set has no scope.
    public var isEmpty: Bool { storage.isEmpty }

    /// The position of the lowercased scope `lower` in ``storage``, or where it would go.
    private func position(of lower: String) -> (index: Int, found: Bool) {
        var low = 0, high = storage.count
        while low < high {
            let middle = (low + high) / 2
            if storage[middle].lower < lower { low = middle + 1 } else { high = middle }
        }
        return (low, low < storage.count && storage[low].lower == lower)
    }

    /// Whether `scope` is in the set, ignoring case.
    public func contains(_ scope: String) -> Bool { position(of: scope.trimmingASCIIWhitespace().lowercased()).found }

    /// Whether every scope of `other` is in this set, ignoring case.
    public func isSuperset(of other: ScopeSet) -> Bool {
        var index = 0
        for (lower, _) in other.storage {
            while index < storage.count && storage[index].lower < lower { index += 1 }
            guard index < storage.count, storage[index].lower == lower else { return false }
            index += 1
        }
        return true
    }

    /// Whether every scope of this set is in `other`, ignoring case.
    public func isSubset(of other: ScopeSet) -> Bool { other.isSuperset(of: self) }

    /// Whether the two sets share at least one scope, ignoring case.
    public func intersects(_ other: ScopeSet) -> Bool {
        var i = 0, j = 0
        while i < storage.count && j < other.storage.count {
            if storage[i].lower == other.storage[j].lower { return true }
            if storage[i].lower < other.storage[j].lower { i += 1 } else { j += 1 }
        }
        return false
    }

    /// The scopes of both sets; a scope in both keeps this set's spelling.
    public func union(_ other: ScopeSet) -> ScopeSet {
        var result = ScopeSet()
        result.storage.reserveCapacity(storage.count + other.storage.count)
        var i = 0, j = 0
        while i < storage.count || j < other.storage.count {
            if j == other.storage.count || (i < storage.count && storage[i].lower < other.storage[j].lower) {
                result.storage.append(storage[i])
                i += 1
            } else if i == storage.count || other.storage[j].lower < storage[i].lower {
                result.storage.append(other.storage[j])
                j += 1
            } else {
                result.storage.append(storage[i])
                i += 1
                j += 1
            }
        }
        return result
    }

    /// The scopes of this set that are not in `other`.
    public func subtracting(_ other: ScopeSet) -> ScopeSet {
        var result = ScopeSet()
        var j = 0
        for pair in storage {
            while j < other.storage.count && other.storage[j].lower < pair.lower { j += 1 }
            if j < other.storage.count && other.storage[j].lower == pair.lower { continue }
            result.storage.append(pair)
        }
        return result
    }

    /// Iterates ``scopes``.
    public func makeIterator() -> IndexingIterator<[String]> { scopes.makeIterator() }

    /// Equal when the lowercased scopes are equal.
    public static func == (lhs: ScopeSet, rhs: ScopeSet) -> Bool {
        lhs.storage.count == rhs.storage.count && zip(lhs.storage, rhs.storage).allSatisfy { $0.lower == $1.lower }
    }

    /// Hashes the lowercased scopes.
    public func hash(into hasher: inout Hasher) {
        for (lower, _) in storage { hasher.combine(lower) }
    }

    /// ``joined``.
    public var description: String { joined }

    /// Whether the set asks for a resource's static permissions (`<resource>/.default`), for which a
    /// server answers with the resource's individual scopes rather than echoing the request.
    public var containsDefaultScope: Bool { storage.contains { $0.lower.hasSuffix("/.default") || $0.lower == ".default" } }

    /// Validates the scopes an app passes to a token request, as MSAL for iOS/macOS does.
    ///
    /// An empty list is allowed: a sign-in then asks only for the reserved OIDC scopes, and a silent
    /// request matches any cached access token of the account (as MSAL Python answers its
    /// `empty_scope_list` fixture query).
    ///
    /// - Returns: the normalized set (possibly empty).
    /// - Throws: ``MSALError`` `.internal(.invalidScope)` when a scope is empty, contains whitespace
    ///   or a character RFC 6749 §3.3 does not allow, or when a reserved scope (`openid`, `profile`,
    ///   `offline_access`) is passed: swift-msal adds those itself.
    public static func validatedRequest(_ scopes: [String]) throws(MSALError) -> ScopeSet {
        if let set = validatedSimpleRequest(scopes) { return set }
        if scopes.contains("") {
            throw .internal(.invalidScope, "A scope may not be empty (RFC 6749 §3.3: a scope token has at least one character); pass no scope instead.")
        }
        for scope in scopes where scope.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) {
            throw .internal(.invalidScope, "A scope may not contain whitespace (pass each scope separately): '\(MSALError.oneLine(scope))'.")
        }
        // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ): printable ASCII but `"` and `\`.
        for scope in scopes {
            let valid = scope.unicodeScalars.allSatisfy { scalar in
                scalar.value == 0x21 || (0x23...0x5B).contains(scalar.value) || (0x5D...0x7E).contains(scalar.value)
            }
            if !valid {
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

    /// ``validatedRequest(_:)`` for the common case, without a `Character` walk: every scope is
    /// non-empty printable ASCII other than `"` and `\` (RFC 6749 §3.3) and none is reserved.
    /// - Returns: the set, or `nil` when a scope is anything else (then the full checks decide,
    ///   with their messages).
    private static func validatedSimpleRequest(_ scopes: [String]) -> ScopeSet? {
        var set = ScopeSet()
        set.storage.reserveCapacity(scopes.count)
        for scope in scopes {
            var scope = scope
            let valid = scope.withUTF8 { bytes in
                !bytes.isEmpty && bytes.allSatisfy { $0 == 0x21 || ($0 >= 0x23 && $0 <= 0x5B) || ($0 >= 0x5D && $0 <= 0x7E) }
            }
            guard valid else { return nil }
            let lower = scope.lowercasedIfNeeded()
            guard !reservedOIDCScopes.position(of: lower).found else { return nil }
            // Insertion keeps the set sorted; a later spelling of a scope already in it is dropped.
            let (index, found) = set.position(of: lower)
            if !found { set.storage.insert((lower, scope), at: index) }
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
    /// Whether every byte is ASCII and none is a carriage return: then each byte is one `Character`
    /// (CR LF is the only ASCII pair that forms one), so byte-wise and `Character`-wise walks agree.
    var isSimpleASCII: Bool {
        utf8.withContiguousStorageIfAvailable { bytes in bytes.allSatisfy { $0 < 0x80 && $0 != 0x0D } }
            ?? utf8.allSatisfy { $0 < 0x80 && $0 != 0x0D }
    }

    /// The string without leading and trailing ASCII spaces, tabs and line breaks.
    func trimmingASCIIWhitespace() -> String {
        if isSimpleASCII {
            let bytes = utf8
            let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A }
            guard let first = bytes.first, let last = bytes.last else { return self }
            if !isSpace(first) && !isSpace(last) { return self }
            guard let start = bytes.firstIndex(where: { !isSpace($0) }) else { return "" }
            let end = bytes.lastIndex(where: { !isSpace($0) })!
            return String(decoding: bytes[start...end], as: UTF8.self)
        }
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = lastIndex(where: { !isSpace($0) })!
        return String(self[start...end])
    }
}
