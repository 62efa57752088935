import Foundation

/// What a silent request does with the access token it found in the cache: the decision of the
/// silent flow as a pure function of the token's times, "now" and the request, so it is tested
/// without I/O (as MSAL for iOS/macOS decides in `MSIDSilentTokenRequest`).
enum SilentDecision: Equatable {
    /// Return the cached access token.
    case useCached
    /// Redeem the refresh token; there is no usable cached access token.
    case refresh
    /// The token is still valid but past its `refresh_in` instant: try a refresh, and return the
    /// cached token if the refresh fails.
    case refreshOrUseCached

    /// Decides.
    /// - Parameters:
    ///   - expiresOn: the cached token's expiry, or `nil` when no token matched.
    ///   - refreshOn: the cached token's proactive-refresh instant, if the server sent `refresh_in`.
    ///   - now: the current instant.
    ///   - expirationBuffer: seconds before expiry from which the token is no longer served (default 300).
    ///   - forceRefresh: the caller asked for a refresh.
    static func decide(expiresOn: Date?, refreshOn: Date?, now: Date, expirationBuffer: TimeInterval, forceRefresh: Bool) -> SilentDecision {
        guard !forceRefresh, let expiresOn else { return .refresh }
        guard expiresOn.timeIntervalSince(now) > expirationBuffer else { return .refresh }
        if let refreshOn, refreshOn <= now { return .refreshOrUseCached }
        return .useCached
    }
}
