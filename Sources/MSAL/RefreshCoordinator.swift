import MSALCore

/// Keeps one network refresh in flight per account, authority and scopes: concurrent silent calls
/// for the same key wait on the first call's refresh instead of each redeeming the refresh token
/// (which, with rotating refresh tokens, would invalidate each other).
actor RefreshCoordinator {
    private var inFlight: [String: Task<Result<AuthenticationResult, MSALError>, Never>] = [:]

    /// Runs `operation` unless one with the same key is running, in which case it waits for that one.
    /// - Returns: the result of the single refresh.
    /// - Throws: the refresh's ``MSALError``.
    func run(
        key: String,
        _ operation: @escaping @Sendable () async -> Result<AuthenticationResult, MSALError>
    ) async throws(MSALError) -> AuthenticationResult {
        if let running = inFlight[key] {
            return try await running.value.get()
        }
        let task = Task { await operation() }
        inFlight[key] = task
        let result = await task.value
        inFlight[key] = nil
        return try result.get()
    }
}
