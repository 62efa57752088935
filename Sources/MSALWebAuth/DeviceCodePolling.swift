public import Foundation
public import MSALCore

/// The client side of the device authorization grant's polling (RFC 8628 §3.4–3.5) as a pure
/// state machine: no I/O, no clock of its own; every transition is given the current instant.
///
/// Use: ``start(now:)`` once the user has been shown the code, then, after each poll that the
/// token endpoint answered with an OAuth `error`, ``received(oauthError:now:)``. Each returns the
/// next ``Action``. A successful poll needs no transition: the flow is over.
///
/// Rules (RFC 8628 §3.5): `authorization_pending` polls again after ``interval``; `slow_down`
/// first adds 5 seconds to ``interval`` (for this and all later polls); `expired_token` fails with
/// `.internal(.deviceCodeExpired)`; `access_denied` (and Entra ID's `authorization_declined`) fails
/// with `.userCanceled`; any other error fails with `.serverError`. A poll that would happen after
/// ``expiresAt`` fails with `.internal(.deviceCodeExpired)` instead of polling. After a failure
/// every transition repeats it.
public struct DeviceCodePolling: Sendable {
    /// What the caller must do next.
    public enum Action: Sendable, Equatable {
        /// Wait this many seconds, then poll the token endpoint once.
        case poll(after: TimeInterval)
        /// Stop: the flow failed with this error.
        case fail(MSALError)
    }

    /// Seconds to wait between polls: the server's `interval` (RFC 8628 §3.2; negative or
    /// non-finite values count as 0), plus 5 for each `slow_down` received.
    public private(set) var interval: TimeInterval
    /// The instant the device code expires (`expires_in` after the device authorization response arrived).
    public let expiresAt: Date
    /// The failure the machine ended with, or `nil` while polling goes on.
    public private(set) var failure: MSALError?

    /// The seconds RFC 8628 §3.5 adds to the interval on `slow_down`.
    public static let slowDownIncrement: TimeInterval = 5

    /// Creates the machine for one device code.
    /// - Parameters:
    ///   - interval: the device authorization response's `interval`, in seconds.
    ///   - expiresAt: when the device code expires.
    public init(interval: TimeInterval, expiresAt: Date) {
        self.interval = interval.isFinite ? max(0, interval) : 0
        self.expiresAt = expiresAt
    }

    /// Starts polling: the first poll waits one ``interval`` (RFC 8628 §3.4).
    /// - Parameter now: the current instant.
    /// - Returns: `.poll(after: interval)`, or `.fail(.internal(.deviceCodeExpired))` when that poll
    ///   would come after ``expiresAt``.
    public mutating func start(now: Date) -> Action {
        if let failure { return .fail(failure) }
        return schedule(now: now)
    }

    /// Moves on after a poll that the token endpoint answered with the OAuth error `oauthError`.
    /// - Parameters:
    ///   - oauthError: the response's `error` field.
    ///   - now: the current instant.
    /// - Returns: the next poll, or the failure: `.internal(.deviceCodeExpired)` for `expired_token`
    ///   or an expiry before the next poll, `.userCanceled` for `access_denied` and
    ///   `authorization_declined`, `.serverError` for any other error (the caller should prefer the
    ///   server's own mapping of it). Failures carry `oauthError` when the server sent one.
    public mutating func received(oauthError: String, now: Date) -> Action {
        if let failure { return .fail(failure) }
        switch oauthError {
        case "authorization_pending":
            return schedule(now: now)
        case "slow_down":
            interval += Self.slowDownIncrement
            return schedule(now: now)
        case "expired_token":
            return finish(MSALError(
                .internal, internalCode: .deviceCodeExpired,
                message: "The device code expired before the user finished signing in (RFC 8628 §3.5 expired_token).",
                oauthError: oauthError
            ))
        case "access_denied", "authorization_declined":
            return finish(MSALError(
                .userCanceled,
                message: "The user declined the sign-in on the verification page (\(oauthError)).",
                oauthError: oauthError
            ))
        default:
            return finish(MSALError(
                .serverError,
                message: "The token endpoint answered the device code poll with error '\(oauthError)'.",
                oauthError: oauthError
            ))
        }
    }

    private mutating func schedule(now: Date) -> Action {
        if now.addingTimeInterval(interval) > expiresAt {
            return finish(MSALError(
                .internal, internalCode: .deviceCodeExpired,
                message: "The device code expires at \(expiresAt.ISO8601Format()) (UTC), before the next poll in \(secondsNumber(interval)) s: the user did not finish signing in in time."
            ))
        }
        return .poll(after: interval)
    }

    private mutating func finish(_ error: MSALError) -> Action {
        failure = error
        return .fail(error)
    }
}
