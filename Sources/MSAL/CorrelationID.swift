internal import Synchronization

/// Makes the correlation IDs of requests that do not bring their own: version 4 UUIDs
/// (RFC 9562 §5.4), lowercased, as MSAL sends them in `client-request-id`.
///
/// A silent request makes one even when the cache answers it, so it must cost far less than the
/// lookup: instead of asking the system for 16 random bytes per ID (Foundation's `UUID()` opens and
/// reads `/dev/urandom` each time), each ID mixes a per-process random 128-bit base with a counter
/// through SplitMix64's finalizer, a bijection: IDs never repeat within a process, and processes
/// start from unrelated bases. Correlation IDs are not secrets; nothing relies on them being
/// unpredictable.
final class CorrelationIDGenerator: Sendable {
    /// The generator every application uses.
    static let shared = CorrelationIDGenerator()

    private let base: (UInt64, UInt64)
    private let counter = Atomic<UInt64>(0)

    init() {
        var random = SystemRandomNumberGenerator()
        base = (random.next(), random.next())
    }

    /// The next ID, `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx` in lowercase hex, written out only when
    /// it is read (``RequestCorrelationID/string``): a cache hit carries its ID in the result, and
    /// most callers never read it.
    func nextID() -> RequestCorrelationID {
        let count = counter.add(1, ordering: .relaxed).newValue
        var high = Self.mix(base.0 &+ count &* 0x9E37_79B9_7F4A_7C15)
        var low = Self.mix(base.1 ^ count)
        high = (high & ~0xF000) | 0x4000  // version 4 (the high nibble of byte 6)
        low = (low & ~(0xC0 << 56)) | (0x80 << 56)  // variant 10 (the top bits of byte 8)
        return .generated(high: high, low: low)
    }

    /// The UUID whose 16 bytes are `high` then `low` (big-endian), in its string form: lowercase
    /// hexadecimal digits in groups of 8-4-4-4-12 (RFC 9562 §4).
    static func format(high: UInt64, low: UInt64) -> String {
        // One allocation: the string's own storage, written in place, group by group.
        String(unsafeUninitializedCapacity: 36) { bytes in
            Self.writeHex(high >> 32, digits: 8, to: bytes, at: 0)
            bytes[8] = UInt8(ascii: "-")
            Self.writeHex(high >> 16, digits: 4, to: bytes, at: 9)
            bytes[13] = UInt8(ascii: "-")
            Self.writeHex(high, digits: 4, to: bytes, at: 14)
            bytes[18] = UInt8(ascii: "-")
            Self.writeHex(low >> 48, digits: 4, to: bytes, at: 19)
            bytes[23] = UInt8(ascii: "-")
            Self.writeHex(low, digits: 12, to: bytes, at: 24)
            return 36
        }
    }

    /// Writes the lowest `digits` hexadecimal digits of `value` (lowercase, most significant first)
    /// to `bytes` from `position`.
    @inline(__always)
    private static func writeHex(_ value: UInt64, digits: Int, to bytes: UnsafeMutableBufferPointer<UInt8>, at position: Int) {
        var value = value
        for offset in stride(from: digits - 1, through: 0, by: -1) {
            bytes[position + offset] = hexDigit(UInt8(truncatingIfNeeded: value) & 0xF)
            value >>= 4
        }
    }

    /// The lowercase hexadecimal digit of a value below 16.
    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// SplitMix64's output function (Steele, Lea and Flood 2014): a bijection on 64-bit values.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A request's correlation ID as a request carries it: the caller's (already a string), or one
/// ``CorrelationIDGenerator`` made (its 128 bits), written out when it is read.
enum RequestCorrelationID: Sendable, Hashable {
    /// An ID given as a string.
    case given(String)
    /// A generated ID: the UUID's bytes, `high` then `low` (big-endian).
    case generated(high: UInt64, low: UInt64)

    /// The ID: the given string, or the generated UUID in lowercase (``CorrelationIDGenerator/format(high:low:)``).
    /// The same string every time it is read.
    var string: String {
        switch self {
        case .given(let id): id
        case .generated(let high, let low): CorrelationIDGenerator.format(high: high, low: low)
        }
    }
}
