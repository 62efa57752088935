internal import Synchronization

/// Values computed from a key and kept for reuse, at most ``limit`` of them: past it all are
/// dropped and computed again as needed. What an application keeps per cloud host, per ID token and
/// per access token `target`, none of which changes for a given key.
final class KeptValues<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// The most values kept.
    let limit: Int
    private let values = Mutex<[Key: Value]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// The value kept for `key`, or `nil`.
    func value(for key: Key) -> Value? {
        values.withLock { $0[key] }
    }

    /// Keeps `value` for `key`.
    func keep(_ value: Value, for key: Key) {
        values.withLock { kept in
            if kept.count >= limit { kept.removeAll() }
            kept[key] = value
        }
    }

    /// Drops every kept value.
    func removeAll() {
        let dropped = values.withLock { kept -> [Key: Value] in
            defer { kept = [:] }
            return kept
        }
        withExtendedLifetime(dropped) {}
    }

    /// The value kept for `key`, or the one `make` returns, then kept.
    /// - Throws: what `make` throws; nothing is kept then.
    func value<E: Error>(for key: Key, orMake make: () throws(E) -> Value) throws(E) -> Value {
        if let kept = value(for: key) { return kept }
        let value = try make()
        keep(value, for: key)
        return value
    }
}

/// A JWT as the key of a ``KeptValues`` table: equal when the whole token is, hashed from its length
/// and two 32-byte samples (the middle of the payload and the end). Hashing the whole token (1-2 KB)
/// would read every byte of it on each lookup, which for tokens of a large cache means many CPU-cache
/// misses; equality still compares every byte, and costs nothing when both are the same string (as a
/// cached entry's token and the key it was decoded under are).
struct JWTKey: Hashable, Sendable {
    let jwt: String

    static func == (lhs: JWTKey, rhs: JWTKey) -> Bool { lhs.jwt == rhs.jwt }

    func hash(into hasher: inout Hasher) {
        var jwt = jwt
        jwt.withUTF8 { bytes in
            hasher.combine(bytes.count)
            let sample = 32
            let raw = UnsafeRawBufferPointer(bytes)
            guard raw.count > 3 * sample else {
                hasher.combine(bytes: raw)
                return
            }
            let middle = raw.count / 2 - sample / 2
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw[middle..<(middle + sample)]))
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw[(raw.count - sample)...]))
        }
    }
}
