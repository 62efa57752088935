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

    /// The value kept for `key`, or the one `make` returns, then kept.
    func value(for key: Key, orMake make: () -> Value) -> Value {
        if let kept = value(for: key) { return kept }
        let value = make()
        keep(value, for: key)
        return value
    }
}
