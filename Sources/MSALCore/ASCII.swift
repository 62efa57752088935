extension UInt8 {
    /// Whether every byte of `bytes` is ASCII and none is a capital letter (`A`–`Z`). Reads eight
    /// bytes at a time: identifiers (home account IDs, hosts, GUIDs) are checked on every lookup.
    @inlinable package static func isLowercaseASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        let highBits: UInt64 = 0x8080_8080_8080_8080
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            if word & highBits != 0 { return false }
            // Each byte is below 0x80, so adding to it never carries into the next byte: the high
            // bit of a byte of `atLeastA` is set when it is `A` (0x41) or above, of `aboveZ` when
            // it is above `Z` (0x5A).
            let atLeastA = word &+ 0x3F3F_3F3F_3F3F_3F3F
            let aboveZ = word &+ 0x2525_2525_2525_2525
            if atLeastA & ~aboveZ & highBits != 0 { return false }
            offset += 8
        }
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte >= 0x80 || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) { return false }
            offset += 1
        }
        return true
    }

    /// This byte with an ASCII capital letter (`A`–`Z`) turned into its small letter; any other byte
    /// unchanged. What identifiers, hosts, header names and scopes are compared and keyed by
    /// (MSAL's cache keys are lowercase; RFC 9110 §5.1 header names are case-insensitive ASCII).
    @inlinable package var asciiLowercased: UInt8 {
        self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z") ? self | 0x20 : self
    }
}

extension String {
    /// Whether the UTF-8 bytes of `needle` occur in this string's, compared byte for byte: for an
    /// ASCII needle in a lowercased header value, what Foundation's `contains` answers, without its
    /// `NSString` search (about 0.6 µs per call on Linux, against 0.1). Unlike that search, a
    /// combining mark right after the needle (`text/html\u{301}`) does not hide it.
    package func containsBytes(of needle: String) -> Bool {
        var haystack = self, needle = needle
        return haystack.withUTF8 { bytes in
            needle.withUTF8 { wanted in
                guard !wanted.isEmpty else { return true }
                guard bytes.count >= wanted.count else { return false }
                candidates: for start in 0...(bytes.count - wanted.count) {
                    for offset in 0..<wanted.count where bytes[start + offset] != wanted[offset] { continue candidates }
                    return true
                }
                return false
            }
        }
    }
}

extension String {
    /// Whether the two strings are equal after `lowercased()`, without allocating for ASCII strings.
    @inlinable package func equalsIgnoringCase(_ other: String) -> Bool {
        if self == other { return true }
        let ascii = utf8.withContiguousStorageIfAvailable { lhs in
            other.utf8.withContiguousStorageIfAvailable { rhs -> Bool? in
                guard lhs.allSatisfy({ $0 < 0x80 }), rhs.allSatisfy({ $0 < 0x80 }) else { return nil }
                guard lhs.count == rhs.count else { return false }
                for index in 0..<lhs.count where lhs[index].asciiLowercased != rhs[index].asciiLowercased { return false }
                return true
            } ?? nil
        } ?? nil
        return ascii ?? (lowercased() == other.lowercased())
    }
}

extension String {
    /// `lowercased()`, cheaper for ASCII, as identifiers (GUIDs, hosts) and scopes usually are: the
    /// string itself (no copy) when it is ASCII without a capital letter, its bytes with `A`–`Z` made
    /// small when it is other ASCII, and `lowercased()` (Unicode case mapping) otherwise.
    @inlinable package func lowercasedIfNeeded() -> String {
        // The common case first, in one pass that reads nothing else: ASCII without a capital.
        let plain = utf8.withContiguousStorageIfAvailable { bytes in UInt8.isLowercaseASCII(bytes) }
        if plain == true { return self }
        let lowered = utf8.withContiguousStorageIfAvailable { bytes -> String? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            return String(unsafeUninitializedCapacity: bytes.count) { buffer in
                for index in bytes.indices { buffer[index] = bytes[index].asciiLowercased }
                return bytes.count
            }
        }
        return (lowered ?? nil) ?? lowercased()
    }
}

extension String {
    /// Whether this string, which is lowercase already (as the cache index keys identifiers), is
    /// `other.lowercased()`: without making the lowercased copy when `other` is ASCII, eight bytes
    /// at a time, stopping at the first difference (two tenant GUIDs differ in their first bytes).
    /// Otherwise `other` is lowercased and compared with `==` (Unicode lowercasing may change the
    /// byte count, and `==` compares canonical equivalence).
    @inlinable @inline(__always) package func isLowercased(of other: String) -> Bool {
        let ascii = utf8.withContiguousStorageIfAvailable { lowered -> Bool? in
            other.utf8.withContiguousStorageIfAvailable { given -> Bool? in UInt8.isLowercasedASCII(lowered, of: given) } ?? nil
        }
        if let ascii = ascii ?? nil { return ascii }
        return self == other.lowercased()
    }
}

extension UInt8 {
    /// Whether `lowered` is `given` with its ASCII capitals made small; `nil` when either has a
    /// non-ASCII byte before the answer is known (lowercasing is then Unicode's, and `==` compares
    /// canonical equivalence). Reads eight bytes at a time; every byte of an ASCII prefix lowercases
    /// to itself or its small letter whatever follows, so a difference between two ASCII bytes decides.
    @inlinable @inline(__always) package static func isLowercasedASCII(_ lowered: UnsafeBufferPointer<UInt8>, of given: UnsafeBufferPointer<UInt8>) -> Bool? {
        let highBits: UInt64 = 0x8080_8080_8080_8080
        var offset = 0
        if let left = lowered.baseAddress, let right = given.baseAddress {
            let loweredRaw = UnsafeRawPointer(left), givenRaw = UnsafeRawPointer(right)
            while offset + 8 <= given.count && offset + 8 <= lowered.count {
                let word = givenRaw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                let loweredWord = loweredRaw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                if (word | loweredWord) & highBits != 0 { break }
                // As in `isLowercaseASCII`: the high bit of a byte marks `A`–`Z`; shifted to 0x20,
                // it makes that byte small.
                let capitals = (word &+ 0x3F3F_3F3F_3F3F_3F3F) & ~(word &+ 0x2525_2525_2525_2525) & highBits
                if word | (capitals >> 2) != loweredWord { return false }
                offset += 8
            }
        }
        while offset < given.count {
            let byte = given[offset]
            if byte >= 0x80 { return nil }
            if offset >= lowered.count { return false }
            if lowered[offset] >= 0x80 { return nil }
            if lowered[offset] != byte.asciiLowercased { return false }
            offset += 1
        }
        return lowered.count == given.count
    }
}

extension String {
    /// Whether the two strings have the same UTF-8 bytes. `==` compares canonical equivalence (the
    /// Kelvin sign equals `K`), which a table that keeps what a string was checked to be must not:
    /// RFC 6749 §3.3 allows `K` in a scope and refuses the Kelvin sign.
    @inlinable package func hasSameUTF8(as other: String) -> Bool {
        let lhs = utf8, rhs = other.utf8
        guard lhs.count == rhs.count else { return false }
        let contiguous = lhs.withContiguousStorageIfAvailable { left in
            rhs.withContiguousStorageIfAvailable { right -> Bool in
                // The same storage (the same string, or one shared by interning) decides at once.
                if left.baseAddress == right.baseAddress { return true }
                for index in 0..<left.count where left[index] != right[index] { return false }
                return true
            }
        }
        return (contiguous ?? nil) ?? lhs.elementsEqual(rhs)
    }
}

extension Array where Element == String {
    /// Whether both arrays hold strings with the same UTF-8 bytes, in the same order
    /// (``Swift/String/hasSameUTF8(as:)``).
    @inlinable package func hasSameUTF8(as other: [String]) -> Bool {
        guard count == other.count else { return false }
        // The same storage (the same array) holds the same strings.
        if count > 0, withUnsafeBufferPointer({ left in other.withUnsafeBufferPointer { left.baseAddress == $0.baseAddress } }) {
            return true
        }
        for index in indices where !self[index].hasSameUTF8(as: other[index]) { return false }
        return true
    }
}
