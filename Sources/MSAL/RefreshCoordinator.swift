import MSALCore
internal import Synchronization

/// Keeps one network refresh in flight per account, authority and scopes: concurrent silent calls
/// for the same key wait on the first call's refresh instead of each redeeming the refresh token
/// (which, with rotating refresh tokens, would invalidate each other).
///
/// The first caller for a key (the leader) runs the refresh in its own task, so an uncontended
/// refresh costs no task creation and no thread hand-off; later callers suspend until the leader
/// hands them its result. When the leader's task is canceled during the refresh, its result (the
/// cancellation) is not handed on: the waiting callers try again, and one of them leads.
final class RefreshCoordinator: Sendable {
    typealias Outcome = Result<AuthenticationResult, MSALError>

    /// What a waiting caller is resumed with.
    private enum Handoff: Sendable {
        case result(Outcome)
        /// The leader was canceled or had already finished: try again.
        case retry
    }

    /// The callers waiting on each key's running refresh; a key is present while its refresh runs.
    private let waiting = Mutex<[String: [CheckedContinuation<Handoff, Never>]]>([:])

    /// Runs `operation` unless one with the same key is running, in which case it waits for that one.
    /// - Returns: the result of the single refresh.
    /// - Throws: the refresh's ``MSALError``.
    func run(
        key: String,
        _ operation: @escaping @Sendable () async -> Outcome
    ) async throws(MSALError) -> AuthenticationResult {
        while true {
            let leads = waiting.withLock { waiting -> Bool in
                guard waiting[key] == nil else { return false }
                waiting[key] = []
                return true
            }
            if leads {
                let outcome = await operation()
                let handoff: Handoff = Task.isCancelled ? .retry : .result(outcome)
                let waiters = waiting.withLock { $0.removeValue(forKey: key) ?? [] }
                for waiter in waiters { waiter.resume(returning: handoff) }
                return try outcome.get()
            }
            let handoff = await withCheckedContinuation { (continuation: CheckedContinuation<Handoff, Never>) in
                let queued = waiting.withLock { waiting -> Bool in
                    guard waiting[key] != nil else { return false }
                    waiting[key]!.append(continuation)
                    return true
                }
                // The leader finished between the check and now.
                if !queued { continuation.resume(returning: .retry) }
            }
            if case .result(let outcome) = handoff { return try outcome.get() }
        }
    }
}
