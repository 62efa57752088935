import Foundation
internal import MSALCore

/// The `AccessToken` section of a ``TokenCacheContents``: access token entries by the key they are
/// stored under, with the operations of a dictionary keyed by that string.
///
/// Why not `[String: AccessTokenEntry]`: a cache holds one access token per account, tenant and
/// scope set, and each key (`<home_account_id>-<environment>-accesstoken-<client_id>-<realm>-<target>`,
/// about 300 bytes) is the entry's own fields joined. Kept as strings, keys are the largest part of
/// a large cache (about 32 MB for 100k tokens). This section keeps a key only when it differs from
/// the entry's ``AccessTokenEntry/key`` (a key written by another MSAL); otherwise the entry's fields
/// are hashed and compared as its key, without building it. Keys compare as Swift strings do
/// (canonical equivalence), so the section behaves as a dictionary keyed by the stored key would.
public struct AccessTokenSection: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// A stored key and its entry.
    public typealias Element = (key: String, value: AccessTokenEntry)

    /// One member: an entry, and its stored key when that is not the entry's own. Hashed and compared
    /// by the stored key alone; the key's hash is computed once, when the slot is made, so the set's
    /// probes and resizes do not read the key again. A probe built from a key has no entry.
    fileprivate struct Slot: Hashable, Sendable {
        let storedKey: String?
        let entry: AccessTokenEntry?
        let keyHash: Int

        init(storedKey: String?, entry: AccessTokenEntry?) {
            self.storedKey = storedKey
            self.entry = entry
            var hasher = Hasher()
            if let storedKey {
                hashKey(storedKey, into: &hasher)
            } else {
                entry!.hashDerivedKey(into: &hasher)
            }
            keyHash = hasher.finalize()
        }

        /// The same key with another entry (its hash is not computed again).
        init(_ slot: Slot, entry: AccessTokenEntry) {
            storedKey = slot.storedKey
            self.entry = entry
            keyHash = slot.keyHash
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(keyHash)
        }

        static func == (lhs: Slot, rhs: Slot) -> Bool {
            guard lhs.keyHash == rhs.keyHash else { return false }
            return switch (lhs.storedKey, rhs.storedKey) {
            case let (l?, r?): l == r
            case let (l?, nil): rhs.entry!.hasKey(l)
            case let (nil, r?): lhs.entry!.hasKey(r)
            case (nil, nil): lhs.entry!.hasSameKey(as: rhs.entry!)
            }
        }
    }

    private var slots: Set<Slot>

    /// An empty section.
    public init() {
        slots = []
    }

    /// A section holding `elements`; a key given twice keeps its last entry.
    public init(dictionaryLiteral elements: (String, AccessTokenEntry)...) {
        self.init()
        for (key, entry) in elements { self[key] = entry }
    }

    /// A section holding the entries of `dictionary` under its keys.
    public init(_ dictionary: [String: AccessTokenEntry]) {
        self.init()
        reserveCapacity(dictionary.count)
        for (key, entry) in dictionary { self[key] = entry }
    }

    /// The entry stored under `key`, or `nil`; setting `nil` removes it, setting an entry stores it
    /// under `key` (replacing what was there).
    public subscript(key: String) -> AccessTokenEntry? {
        get {
            guard let index = slots.firstIndex(of: Slot(storedKey: key, entry: nil)) else { return nil }
            return slots[index].entry
        }
        set {
            guard let newValue else {
                slots.remove(Slot(storedKey: key, entry: nil))
                return
            }
            slots.update(with: Slot(storedKey: newValue.hasKey(key, exactly: true) ? nil : key, entry: newValue))
        }
    }

    /// Stores `entry` under its own ``AccessTokenEntry/key`` (replacing what was there), without
    /// building the key.
    public mutating func store(_ entry: AccessTokenEntry) {
        slots.update(with: Slot(storedKey: nil, entry: entry))
    }

    /// The number of entries.
    public var count: Int { slots.count }

    /// Whether the section holds no entry.
    public var isEmpty: Bool { slots.isEmpty }

    /// The stored keys, in no particular order.
    public var keys: [String] { slots.map { $0.storedKey ?? $0.entry!.key } }

    /// The entries, in no particular order.
    public var values: [AccessTokenEntry] { slots.map { $0.entry! } }

    /// Some stored key and its entry, or `nil` when the section is empty.
    public var first: Element? { slots.first.map(Self.element) }

    /// How many entries are stored under a key that is not their own (kept as a string).
    var foreignKeyCount: Int { slots.count { $0.storedKey != nil } }

    /// Removes the entry stored under `key`.
    /// - Returns: the removed entry, or `nil` when none was stored under `key`.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> AccessTokenEntry? {
        slots.remove(Slot(storedKey: key, entry: nil))?.entry
    }

    /// Reserves room for `capacity` entries.
    public mutating func reserveCapacity(_ capacity: Int) {
        slots.reserveCapacity(capacity)
    }

    /// The pairs of stored key and entry, in no particular order (a key that is the entry's own is
    /// built as it is read).
    public func makeIterator() -> some IteratorProtocol<Element> {
        slots.lazy.map(Self.element).makeIterator()
    }

    /// Whether both hold the same entries under the same keys.
    public static func == (lhs: AccessTokenSection, rhs: AccessTokenSection) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for slot in lhs.slots {
            guard let index = rhs.slots.firstIndex(of: slot), rhs.slots[index].entry == slot.entry else { return false }
        }
        return true
    }

    /// Replaces the entry stored under `entry`'s own ``AccessTokenEntry/key`` by `transform` of it,
    /// unless `transform` returns `nil`. The new entry must have that key too (it is filed under it).
    /// - Returns: the old entry, or `nil` when nothing is stored under the key or nothing was replaced.
    mutating func replaceValue(ownKeyOf entry: AccessTokenEntry, _ transform: (AccessTokenEntry) -> AccessTokenEntry?) -> AccessTokenEntry? {
        guard let index = slots.firstIndex(of: Slot(storedKey: nil, entry: entry)) else { return nil }
        let slot = slots[index]
        guard let new = transform(slot.entry!) else { return nil }
        slots.update(with: Slot(slot, entry: new))
        return slot.entry
    }

    /// Replaces every entry by `transform` of it; `transform` must keep each entry's ``AccessTokenEntry/key``.
    mutating func replaceValues(_ transform: (AccessTokenEntry) -> AccessTokenEntry) {
        var replaced = Set<Slot>(minimumCapacity: slots.count)
        for slot in slots { replaced.insert(Slot(slot, entry: transform(slot.entry!))) }
        slots = replaced
    }

    /// Calls `body` with each entry and its stored key, `nil` when that is the entry's own
    /// ``AccessTokenEntry/key`` (not built).
    func forEachStored(_ body: (String?, AccessTokenEntry) -> Void) {
        for slot in slots { body(slot.storedKey, slot.entry!) }
    }

    private static func element(_ slot: Slot) -> Element {
        (slot.storedKey ?? slot.entry!.key, slot.entry!)
    }
}

/// Hashes a key as the section compares it: its bytes when it is ASCII, else the bytes of its
/// canonical composition (NFC), so canonically equivalent keys hash alike; then a terminator.
private func hashKey(_ key: String, into hasher: inout Hasher) {
    var key = key
    let ascii = key.withUTF8 { bytes -> Bool in
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return false }
        hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        return true
    }
    if !ascii {
        var composed = key.precomposedStringWithCanonicalMapping
        composed.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
    withUnsafeBytes(of: UInt8(0xFF)) { hasher.combine(bytes: $0) }
}

extension AccessTokenEntry {
    /// Part `index` (0 to 5) of ``key``: the parts are joined by `-` and lowercased.
    private func keyPart(_ index: Int) -> String {
        switch index {
        case 0: homeAccountID
        case 1: environment
        case 2: "accesstoken"
        case 3: clientID
        case 4: realm
        default: target
        }
    }

    private static let keyPartCount = 6

    /// Hashes ``key`` as `hashKey` hashes it, without building it when it is ASCII.
    fileprivate func hashDerivedKey(into hasher: inout Hasher) {
        var streamed = hasher
        if streamASCIIKey(into: &streamed) {
            hasher = streamed
        } else {
            hashKey(key, into: &hasher)
        }
    }

    /// Feeds ``key``'s bytes (parts lowercased, joined by `-`) and the terminator to `hasher`;
    /// `false` (and `hasher` unusable) when a part is not ASCII. A part already in lowercase (as
    /// identifiers usually are) is fed as it is, one call per part.
    private func streamASCIIKey(into hasher: inout Hasher) -> Bool {
        for index in 0 ..< Self.keyPartCount {
            if index > 0 { withUnsafeBytes(of: UInt8(ascii: "-")) { hasher.combine(bytes: $0) } }
            var part = keyPart(index)
            let ascii = part.withUTF8 { bytes -> Bool in
                switch asciiCase(bytes) {
                case .lowercase:
                    hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
                    return true
                case .mixedCase:
                    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bytes.count) { lowered in
                        for (offset, byte) in bytes.enumerated() { lowered[offset] = byte.asciiLowercased }
                        hasher.combine(bytes: UnsafeRawBufferPointer(lowered))
                    }
                    return true
                case .notASCII:
                    return false
                }
            }
            guard ascii else { return false }
        }
        withUnsafeBytes(of: UInt8(0xFF)) { hasher.combine(bytes: $0) }
        return true
    }

    /// Whether ``key`` equals `other` (as strings compare, or byte for byte when `exactly`), without
    /// building ``key`` while both are ASCII: the first two ASCII bytes that differ decide; a
    /// non-ASCII byte leaves it to `==` (or to comparing the bytes). A key stored in another Unicode
    /// form than the entry's own is equal as a string but must be kept as written, so whether a key
    /// need not be kept is asked `exactly`.
    func hasKey(_ other: String, exactly: Bool = false) -> Bool {
        guard let answer = compareKey(other, partCount: Self.keyPartCount, part: keyPart) else {
            return exactly ? key.utf8.elementsEqual(other.utf8) : key == other
        }
        return answer
    }

    /// Whether the two entries' ``key``s are equal, without building them while their parts are ASCII
    /// of the same lengths (then the keys are equal exactly when each part is, lowercased).
    func hasSameKey(as other: AccessTokenEntry) -> Bool {
        if sharesStorage(with: other) { return true }
        for index in 0 ..< Self.keyPartCount {
            switch compareLowercasedASCII(keyPart(index), other.keyPart(index)) {
            case .equal: continue
            case .different: return false
            case .asciiOfOtherLength where index == Self.keyPartCount - 1:
                return false  // the parts before are equal and as long: the keys differ in length
            case .undecided, .asciiOfOtherLength: return key == other.key
            }
        }
        return true
    }
}

private enum PartComparison { case equal, different, asciiOfOtherLength, undecided }

/// Compares two key parts lowercased: `undecided` unless both are ASCII.
private func compareLowercasedASCII(_ a: String, _ b: String) -> PartComparison {
    if a == b, a.utf8.count == b.utf8.count { return .equal }  // the same string (shared identifiers), or equal bytes
    var a = a, b = b
    guard a.utf8.count == b.utf8.count else {
        return a.utf8.allSatisfy({ $0 < 0x80 }) && b.utf8.allSatisfy({ $0 < 0x80 }) ? .asciiOfOtherLength : .undecided
    }
    return a.withUTF8 { lhs in
        b.withUTF8 { rhs in
            for index in 0 ..< lhs.count {
                let l = lhs[index], r = rhs[index]
                guard l < 0x80, r < 0x80 else { return .undecided }
                if l != r, l.asciiLowercased != r.asciiLowercased { return .different }
            }
            return .equal
        }
    }
}

private enum ASCIICase { case lowercase, mixedCase, notASCII }

/// Whether `bytes` are ASCII without capital letters, ASCII with some, or not ASCII.
private func asciiCase(_ bytes: UnsafeBufferPointer<UInt8>) -> ASCIICase {
    var capitals = false
    for byte in bytes {
        if byte >= 0x80 { return .notASCII }
        if byte >= 0x41 && byte <= 0x5A { capitals = true }
    }
    return capitals ? .mixedCase : .lowercase
}
