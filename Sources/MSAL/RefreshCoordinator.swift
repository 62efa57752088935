import MSALCore
internal import Synchronization

/// Keeps one network refresh in flight per account, authority and scopes: concurrent silent calls
/// for the same key wait on the first call's refresh instead of each redeeming the refresh token
/// (which, with rotating refresh tokens, would invalidate each other).
///
/// The first caller for a key (the leader) runs the refresh in its own task, so an uncontended
/// refresh costs no task creation and no thread hand-off; later callers suspend until the leader
/// hands them its result. When the leader's task is canceled during the refresh, its result (the
/// cancellation) is not handed on: the waiting callers try again, and one of them leads. A waiting
/// caller whose own task is canceled returns at once with `.userCanceled`; the refresh goes on for
/// the others.
final class RefreshCoordinator: Sendable {
    typealias Outcome = Result<AuthenticationResult, MSALError>

    /// Every input that changes a refresh request, so calls that differ never share a result.
    /// Identifiers compare case-insensitively (lowercased once here); scopes as normalized.
    struct Key: Hashable, Sendable {
        /// `silent`, or `legacy` for the silent upgrade of an ADAL entry.
        let kind: String
        let clientID: String
        /// The authority URL, lowercased.
        let authority: String
        /// The account identifier (or the legacy user ID and cloud), lowercased.
        let account: String
        let scopes: [String]
        let forceRefresh: Bool
        let extraParameters: [String: String]
    }

    /// What a waiting caller is resumed with.
    private enum Handoff: Sendable {
        case result(Outcome)
        /// The leader was canceled or had already finished: try again.
        case retry
        /// This waiting caller's own task was canceled.
        case canceled
    }

    private struct State {
        /// The callers waiting on each key's running refresh; a key is present while its refresh runs.
        var waiting: [Key: [(id: UInt64, continuation: CheckedContinuation<Handoff, Never>)]] = [:]
        /// Waiting callers canceled before they were queued.
        var canceled: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Runs `operation` unless one with the same key is running, in which case it waits for that one.
    /// - Returns: the result of the single refresh.
    /// - Throws: the refresh's ``MSALError``; `.userCanceled` when this caller's task is canceled
    ///   while it waits for another caller's refresh (at once: it does not wait for the refresh).
    func run(
        key: Key,
        _ operation: @escaping @Sendable () async -> Outcome
    ) async throws(MSALError) -> AuthenticationResult {
        while true {
            let waiterID: UInt64? = state.withLock { state -> UInt64? in
                guard state.waiting[key] != nil else {
                    state.waiting[key] = []
                    return nil
                }
                state.nextID &+= 1
                return state.nextID
            }
            guard let waiterID else {
                let outcome = await operation()
                let handoff: Handoff = Task.isCancelled ? .retry : .result(outcome)
                let waiters = state.withLock { $0.waiting.removeValue(forKey: key) ?? [] }
                for waiter in waiters { waiter.continuation.resume(returning: handoff) }
                return try outcome.get()
            }
            let handoff = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Handoff, Never>) in
                    let immediate = state.withLock { state -> Handoff? in
                        if state.canceled.remove(waiterID) != nil { return .canceled }
                        // The leader finished between the check and now.
                        guard state.waiting[key] != nil else { return .retry }
                        state.waiting[key]!.append((waiterID, continuation))
                        return nil
                    }
                    if let immediate { continuation.resume(returning: immediate) }
                }
            } onCancel: {
                let waiter = state.withLock { state -> CheckedContinuation<Handoff, Never>? in
                    if let index = state.waiting[key]?.firstIndex(where: { $0.id == waiterID }) {
                        return state.waiting[key]!.remove(at: index).continuation
                    }
                    state.canceled.insert(waiterID)
                    return nil
                }
                waiter?.resume(returning: .canceled)
            }
            // A cancellation that came after this caller was resumed left its mark: remove it.
            state.withLock { _ = $0.canceled.remove(waiterID) }
            switch handoff {
            case .result(let outcome): return try outcome.get()
            case .canceled: throw MSALError(.userCanceled, message: "The silent request was canceled while it waited for another call's refresh.")
            case .retry: continue
            }
        }
    }
}
