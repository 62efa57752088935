public import Foundation
public import MSALCore

/// What identifies "the same request" for client-side throttling: the client, the authority, the
/// scopes and the account.
///
/// Source: MSAL.NET's strict request thumbprint (`ThrottleCommon.GetRequestStrictThumbprint`:
/// client ID, canonical authority, scopes, home account ID) and msal-common's `RequestThumbprint`
/// (`clientId`, `authority`, `scopes`, `homeAccountIdentifier`). Scopes compare as a ``ScopeSet``
/// does (case-insensitively, order ignored); the authority as ``Authority`` does (normalized URL).
public struct ThrottleKey: Sendable, Hashable {
    /// The application's client ID.
    public var clientID: String
    /// The authority the request goes to.
    public var authority: Authority
    /// The scopes asked for, normalized.
    public var scopes: ScopeSet
    /// The account's home account ID (`<uid>.<utid>`), or `nil` for a request without an account
    /// (device code, interactive sign-in before an account is known).
    public var homeAccountId: String?

    /// Creates a key.
    public init(clientID: String, authority: Authority, scopes: ScopeSet, homeAccountId: String?) {
        self.clientID = clientID
        self.authority = authority
        self.scopes = scopes
        self.homeAccountId = homeAccountId
    }
}

/// Client-side throttling as MSAL does it: after the identity provider says "slow down" or "the
/// user must sign in", the same request is refused locally for a while instead of being sent again.
///
/// A pure value: no clock, no I/O. The caller passes "now" to every transition; ``Throttler`` wraps
/// it with a ``WallClock`` for concurrent use.
///
/// Rules (MSAL.NET `RetryAfterProvider`, `HttpStatusProvider`, `UiRequiredProvider`; msal-common
/// `ThrottlingUtils`; MSAL for Python `throttled_http_client`):
/// - **Retry-After.** An error answer (non-2xx) whose ``MSALError/retryAfter`` is set (the
///   `Retry-After` header, RFC 9110 §10.2.3) throttles the key for that long, capped at
///   ``maxRetryAfter`` (3600 s, the cap of all three MSALs). A `Retry-After` of 0 or a date in the
///   past throttles nothing: the server said "now".
/// - **429 and 5xx without Retry-After** throttle the key for ``defaultThrottleDuration`` (60 s,
///   MSAL.NET's `HttpStatusProvider` and msal-common's `DEFAULT_THROTTLE_TIME_SECONDS`; MSAL for
///   Python uses 5 s).
/// - **UI required.** An `.interactionRequired` error with HTTP 400 (`invalid_grant`,
///   `interaction_required`, `consent_required`, `login_required`) to a `refresh_token` grant
///   makes further `refresh_token` requests with the same key fail fast with the same error for
///   ``uiRequiredDuration`` (120 s, MSAL.NET's `s_uiRequiredExpiration`). Other grants are not
///   blocked by it, and ``clear(homeAccountId:)`` lifts it after an interactive sign-in.
///
/// Both rules replay the error the server gave (its OAuth fields, HTTP status and correlation ID),
/// with a message saying the request was not sent; a Retry-After replay sets
/// ``MSALError/retryAfter`` to the seconds left. Expired entries are ignored by ``check(_:grantType:now:)``
/// and dropped by every ``record(_:grantType:for:now:)``; beyond ``capacity`` entries the oldest
/// recorded is evicted (MSAL for Python bounds its throttling cache the same way, at 1024).
public struct ThrottlingState: Sendable {
    /// The longest a `Retry-After` is honoured, in seconds: 3600 (MSAL.NET `MaxRetryAfter`,
    /// msal-common `DEFAULT_MAX_THROTTLE_TIME_SECONDS`, MSAL for Python `min(3600, …)`).
    public static let maxRetryAfter: TimeInterval = 3600
    /// How long a 429 or 5xx answer without a valid `Retry-After` throttles, in seconds: 60
    /// (MSAL.NET `HttpStatusProvider.s_throttleDuration`, msal-common `DEFAULT_THROTTLE_TIME_SECONDS`).
    public static let defaultThrottleDuration: TimeInterval = 60
    /// How long a UI-required answer to a refresh-token request is replayed, in seconds: 120
    /// (MSAL.NET `UiRequiredProvider.s_uiRequiredExpiration`).
    public static let uiRequiredDuration: TimeInterval = 120
    /// The default bound on the number of entries: 1000.
    public static let defaultCapacity = 1000
    /// The request header MSAL.NET sends to tell Entra ID that it honours `Retry-After` and HTTP
    /// 429 (`ThrottleCommon.ThrottleRetryAfterHeaderName`); its value is
    /// ``libraryCapabilityHeaderValue``. Send it only from a client that records into a throttler.
    public static let libraryCapabilityHeaderName = "x-ms-lib-capability"
    /// The value of ``libraryCapabilityHeaderName``: `retry-after, h429`.
    public static let libraryCapabilityHeaderValue = "retry-after, h429"

    /// Which rule an entry comes from.
    enum Rule: Sendable, Hashable {
        case retryAfter
        case uiRequired
    }

    struct Slot: Sendable, Hashable {
        var key: ThrottleKey
        var rule: Rule
    }

    struct Entry: Sendable {
        var error: MSALError
        var expiresAt: Date
        var sequence: UInt64
    }

    private var entries: [Slot: Entry] = [:]
    private var sequence: UInt64 = 0

    /// The most entries kept; when a record would exceed it, the oldest entry is evicted.
    public let capacity: Int

    /// Creates an empty state.
    /// - Parameter capacity: the bound on entries (at least 1); default ``defaultCapacity``.
    public init(capacity: Int = ThrottlingState.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// The number of entries held, expired ones included until the next record or
    /// ``removeExpired(now:)``.
    public var count: Int { entries.count }

    /// Records a failed request and throttles its key when a rule applies (see ``ThrottlingState``).
    ///
    /// Errors without an HTTP status (transport failures, local validation) and 2xx answers are
    /// ignored. Expired entries are dropped first; a newer record for the same key and rule replaces
    /// the older. Record only what the server answered, never an error ``check(_:grantType:now:)``
    /// returned (``Throttler/perform(_:grantType:_:)`` keeps to that).
    /// - Parameters:
    ///   - error: the error the request ended with, as ``OAuth2Client`` throws it (with
    ///     ``MSALError/httpStatusCode`` and ``MSALError/retryAfter``).
    ///   - grantType: the `grant_type` that was sent, e.g. `refresh_token`.
    ///   - key: the request's key.
    ///   - now: when the answer arrived.
    public mutating func record(_ error: MSALError, grantType: String, for key: ThrottleKey, now: Date) {
        guard let status = error.httpStatusCode, !(200...299).contains(status) else { return }
        removeExpired(now: now)
        let retryDuration: TimeInterval?
        if let retryAfter = error.retryAfter {
            retryDuration = min(max(0, retryAfter), Self.maxRetryAfter)
        } else if status == 429 || (500...599).contains(status) {
            retryDuration = Self.defaultThrottleDuration
        } else {
            retryDuration = nil
        }
        if let retryDuration, retryDuration > 0 {
            insert(error, rule: .retryAfter, key: key, until: now.addingTimeInterval(retryDuration))
        }
        if error.code == .interactionRequired, status == 400, grantType == "refresh_token" {
            insert(error, rule: .uiRequired, key: key, until: now.addingTimeInterval(Self.uiRequiredDuration))
        }
    }

    /// Whether a request may go out.
    /// - Parameters:
    ///   - key: the request's key.
    ///   - grantType: the `grant_type` about to be sent; UI-required entries block only
    ///     `refresh_token`.
    ///   - now: the current instant.
    /// - Returns: `nil` when the request may be sent; otherwise the error to throw instead: the
    ///   recorded server error (its code, OAuth fields, HTTP status and correlation ID), with a
    ///   message saying it was not sent and, for the Retry-After rule, ``MSALError/retryAfter`` set
    ///   to the seconds left. The Retry-After rule is checked first.
    public func check(_ key: ThrottleKey, grantType: String, now: Date) -> MSALError? {
        guard !entries.isEmpty else { return nil }  // the usual case: no key is hashed
        if let entry = entries[Slot(key: key, rule: .retryAfter)], entry.expiresAt > now {
            let left = entry.expiresAt.timeIntervalSince(now)
            var error = entry.error
            error.retryAfter = left
            error.message = "Request not sent: the identity provider answered the same request with HTTP "
                + "\(error.httpStatusCode ?? 0) and swift-msal throttles it for \(Int(left.rounded(.up))) more seconds. "
                + "The answer was: \(entry.error.message)"
            return error
        }
        if grantType == "refresh_token", let entry = entries[Slot(key: key, rule: .uiRequired)], entry.expiresAt > now {
            var error = entry.error
            error.retryAfter = nil
            error.message = "Request not sent: the identity provider rejected the same silent request less than "
                + "\(Int(Self.uiRequiredDuration)) seconds ago; sign in interactively. The answer was: \(entry.error.message)"
            return error
        }
        return nil
    }

    /// Lifts the UI-required rule for an account, as a successful interactive sign-in should.
    /// Retry-After entries stay: the server's request to wait still holds.
    /// - Parameter homeAccountId: the account's home account ID, compared exactly.
    public mutating func clear(homeAccountId: String) {
        entries = entries.filter { $0.key.rule != .uiRequired || $0.key.key.homeAccountId != homeAccountId }
    }

    /// Drops the entries that have expired by `now`.
    public mutating func removeExpired(now: Date) {
        guard entries.values.contains(where: { $0.expiresAt <= now }) else { return }
        entries = entries.filter { $0.value.expiresAt > now }
    }

    /// Drops every entry.
    public mutating func removeAll() {
        entries = [:]
    }

    private mutating func insert(_ error: MSALError, rule: Rule, key: ThrottleKey, until expiresAt: Date) {
        sequence &+= 1
        entries[Slot(key: key, rule: rule)] = Entry(error: error, expiresAt: expiresAt, sequence: sequence)
        while entries.count > capacity, let oldest = entries.min(by: { $0.value.sequence < $1.value.sequence }) {
            entries[oldest.key] = nil
        }
    }
}

/// The concurrency-safe shell around a ``ThrottlingState``: one per application, reading "now"
/// from a ``WallClock``.
///
/// Use it around every token-endpoint request: ``check(_:grantType:)`` before sending,
/// ``record(_:grantType:for:)`` after a failure (or both at once with
/// ``perform(_:grantType:_:)``), and ``clear(homeAccountId:)`` after an interactive sign-in.
public actor Throttler {
    /// The source of "now".
    public nonisolated let clock: any WallClock
    private var state: ThrottlingState

    /// Creates a throttler with no entries.
    /// - Parameters:
    ///   - clock: the source of "now"; default ``SystemWallClock``.
    ///   - capacity: the bound on entries; default ``ThrottlingState/defaultCapacity``.
    public init(clock: any WallClock = SystemWallClock(), capacity: Int = ThrottlingState.defaultCapacity) {
        self.clock = clock
        self.state = ThrottlingState(capacity: capacity)
    }

    /// Whether a request may go out now.
    /// - Returns: `nil`, or the error to throw instead, as ``ThrottlingState/check(_:grantType:now:)``.
    public func check(_ key: ThrottleKey, grantType: String) -> MSALError? {
        state.check(key, grantType: grantType, now: clock.now())
    }

    /// Records a failed request at the current instant, as ``ThrottlingState/record(_:grantType:for:now:)``.
    public func record(_ error: MSALError, grantType: String, for key: ThrottleKey) {
        state.record(error, grantType: grantType, for: key, now: clock.now())
    }

    /// Lifts the UI-required rule for an account, as ``ThrottlingState/clear(homeAccountId:)``.
    public func clear(homeAccountId: String) {
        state.clear(homeAccountId: homeAccountId)
    }

    /// Drops every entry.
    public func removeAll() {
        state.removeAll()
    }

    /// The number of entries held.
    public var count: Int { state.count }

    /// Checks the key, runs `operation` when the request may go out, and records its failure.
    /// - Returns: what `operation` returns.
    /// - Throws: the throttling error from ``check(_:grantType:)`` without running `operation`, or
    ///   the error `operation` threw (after recording it).
    public nonisolated func perform<T: Sendable>(
        _ key: ThrottleKey,
        grantType: String,
        _ operation: @Sendable () async throws(MSALError) -> T
    ) async throws(MSALError) -> T {
        if let error = await check(key, grantType: grantType) { throw error }
        do {
            return try await operation()
        } catch {
            await record(error, grantType: grantType, for: key)
            throw error
        }
    }
}
