public import Foundation
public import MSALCore
public import MSALNetwork

/// The device authorization grant (RFC 8628) end to end: request a device code, hand it to the
/// app to show, then poll the token endpoint as ``DeviceCodePolling`` decides.
///
/// A thin I/O shell: time comes from the injected ``WallClock`` and waiting from the injected
/// `sleep`, so tests run the whole flow without sleeping. Logs milestones at info and each poll
/// at debug, never the device code or a token.
public struct DeviceCodeFlow: Sendable {
    /// The client that talks to the device authorization and token endpoints.
    public let client: OAuth2Client
    private let clock: any WallClock
    private let sleep: @Sendable (TimeInterval) async throws -> Void
    private let logger: Logger

    /// Creates a flow.
    /// - Parameters:
    ///   - client: sends the requests.
    ///   - clock: the source of "now" for the device code's expiry; default the system clock.
    ///   - sleep: waits the given seconds; must throw when the task is cancelled (the default,
    ///     `Task.sleep`, does).
    ///   - logger: default ``Logger/none``.
    public init(
        client: OAuth2Client,
        clock: any WallClock = SystemWallClock(),
        sleep: @escaping @Sendable (TimeInterval) async throws -> Void = { try await Task.sleep(nanoseconds: UInt64(max(0, $0) * 1e9)) },
        logger: Logger = .none
    ) {
        self.client = client
        self.clock = clock
        self.sleep = sleep
        self.logger = logger
    }

    /// Requests a device code, hands it to `onUserCode` BEFORE polling (the app shows
    /// `userCode`, `verificationURI` and `message`), then polls per ``DeviceCodePolling``.
    ///
    /// - Parameters:
    ///   - deviceAuthorizationEndpoint: e.g. ``OpenIDConfiguration/deviceAuthorizationEndpoint``.
    ///   - tokenEndpoint: where the device code is redeemed.
    ///   - clientID: the public client's ID.
    ///   - scopes: sent as is (add `openid profile offline_access` yourself when wanted).
    ///   - extraParameters: added to both requests (e.g. `client_info=1` for Entra ID).
    ///   - correlationID: sent as `client-request-id` on every request.
    ///   - onUserCode: shows the code; if it throws, the flow stops with `.userCanceled`
    ///     (or the ``MSALError`` it threw).
    /// - Returns: the tokens, once the user approved on another device.
    /// - Throws: ``MSALError``: `.internal(.deviceCodeExpired)` when the code expired (with
    ///   `oauthError` `expired_token` when the server said so, without when it would expire before
    ///   the next poll); `.userCanceled` when the user declined (`access_denied`,
    ///   `authorization_declined`) or the task was cancelled; otherwise the error of the failing
    ///   request, with its OAuth fields (see ``OAuth2Client``).
    public func run(
        deviceAuthorizationEndpoint: URL,
        tokenEndpoint: URL,
        clientID: String,
        scopes: ScopeSet,
        extraParameters: [String: String] = [:],
        correlationID: String,
        onUserCode: @escaping @Sendable (DeviceAuthorizationResponse) async throws -> Void
    ) async throws(MSALError) -> TokenResponse {
        try checkCancellation(correlationID)
        let authorization = try await client.requestDeviceAuthorization(
            endpoint: deviceAuthorizationEndpoint, clientID: clientID, scopes: scopes,
            extraParameters: extraParameters, correlationID: correlationID
        )
        let expiresAt = clock.now().addingTimeInterval(authorization.expiresIn)
        logger.info("Device code flow: the user signs in at \(authorization.verificationURI.absoluteString); the code expires in \(secondsNumber(authorization.expiresIn)) s, polling every \(secondsNumber(authorization.interval)) s, correlation ID \(correlationID)")

        do {
            try await onUserCode(authorization)
        } catch let error as MSALError {
            throw error
        } catch is CancellationError {
            throw canceled(correlationID)
        } catch {
            throw MSALError(
                .userCanceled,
                message: "The app's user-code handler stopped the device code flow (\(type(of: error))).",
                correlationID: correlationID
            )
        }

        var polling = DeviceCodePolling(interval: authorization.interval, expiresAt: expiresAt)
        var action = polling.start(now: clock.now())
        while true {
            switch action {
            case .fail(var failure):
                if failure.correlationID == nil { failure.correlationID = correlationID }
                logger.info("Device code flow ended: \(failure.codeString)")
                throw failure
            case .poll(let delay):
                do {
                    try await sleep(delay)
                } catch {
                    throw canceled(correlationID)
                }
                try checkCancellation(correlationID)
                do {
                    let token = try await client.redeemDeviceCode(
                        tokenEndpoint: tokenEndpoint, clientID: clientID, deviceCode: authorization.deviceCode,
                        extraParameters: extraParameters, correlationID: correlationID
                    )
                    logger.info("Device code flow: the user signed in")
                    return token
                } catch {
                    guard let oauthError = error.oauthError, error.code == .serverError || error.code == .interactionRequired else {
                        throw error
                    }
                    action = polling.received(oauthError: oauthError, now: clock.now())
                    switch action {
                    case .poll(let next):
                        logger.debug("Device code flow: \(oauthError); next poll in \(secondsNumber(next)) s")
                    case .fail(var failure):
                        // An error the device grant does not define: keep the server's own mapping
                        // (e.g. invalid_grant stays interactionRequired).
                        guard failure.code != .serverError || failure.internalCode != nil else { throw error }
                        if failure.oauthError == error.oauthError {
                            failure.oauthErrorDescription = error.oauthErrorDescription
                            failure.subError = error.subError
                            failure.errorCodes = error.errorCodes
                            failure.httpStatusCode = error.httpStatusCode
                        }
                        failure.correlationID = error.correlationID ?? correlationID
                        action = .fail(failure)
                    }
                }
            }
        }
    }

    private func checkCancellation(_ correlationID: String) throws(MSALError) {
        if Task.isCancelled { throw canceled(correlationID) }
    }

    private func canceled(_ correlationID: String) -> MSALError {
        MSALError(.userCanceled, message: "The device code flow was canceled.", correlationID: correlationID)
    }
}
