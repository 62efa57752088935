public import Foundation
internal import MSALCore

/// The device authorization endpoint's answer (RFC 8628 §3.2): what the user must type where,
/// and how the client polls.
///
/// ``description`` and the mirror used by `dump` and test failures never show ``deviceCode``
/// (a bearer credential until redeemed).
public struct DeviceAuthorizationResponse: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// `device_code`: the secret the client redeems at the token endpoint (RFC 8628 §3.4). Never log it.
    public var deviceCode: String
    /// `user_code`: the short code the user types at ``verificationURI``. Meant to be shown.
    public var userCode: String
    /// `verification_uri` (or Entra's legacy `verification_url`): where the user goes.
    public var verificationURI: URL
    /// `verification_uri_complete`: a URI that already carries the user code, if the server sent one.
    public var verificationURIComplete: URL?
    /// `expires_in`: seconds from the response until the device code expires.
    public var expiresIn: TimeInterval
    /// `interval`: the minimum seconds between polls; 5 when the server sent none (RFC 8628 §3.2).
    public var interval: TimeInterval
    /// `message`: text for the user (an Entra ID extension), if sent.
    public var message: String?

    /// Creates a response.
    public init(
        deviceCode: String,
        userCode: String,
        verificationURI: URL,
        verificationURIComplete: URL? = nil,
        expiresIn: TimeInterval,
        interval: TimeInterval = 5,
        message: String? = nil
    ) {
        self.deviceCode = deviceCode
        self.userCode = userCode
        self.verificationURI = verificationURI
        self.verificationURIComplete = verificationURIComplete
        self.expiresIn = expiresIn
        self.interval = interval
        self.message = message
    }

    /// Reads the fields of a 2xx answer (RFC 8628 §3.2). Numbers may arrive as strings.
    /// - Throws: ``MSALError`` `.serverError` with `.invalidResponse` when `device_code`,
    ///   `user_code`, `verification_uri` (or `verification_url`) or `expires_in` is missing or malformed.
    init(json object: [String: JSONValue], host: String, status: Int, correlationID: String?) throws(MSALError) {
        func missing(_ field: String) -> MSALError {
            ServerResponse.missingField(field, endpoint: "device authorization endpoint", host: host, status: status, correlationID: correlationID)
        }
        guard let deviceCode = object.string("device_code") else { throw missing("device_code") }
        guard let userCode = object.string("user_code") else { throw missing("user_code") }
        guard let verificationURI = object.url("verification_uri") ?? object.url("verification_url") else {
            throw missing("verification_uri")
        }
        guard let expiresIn = object.seconds("expires_in"), expiresIn > 0 else { throw missing("expires_in") }
        self.init(
            deviceCode: deviceCode,
            userCode: userCode,
            verificationURI: verificationURI,
            verificationURIComplete: object.url("verification_uri_complete"),
            expiresIn: expiresIn,
            interval: max(0, object.seconds("interval") ?? 5),
            message: object.string("message")
        )
    }

    /// The user code, verification URI, expiry and interval; the device code shows as `<redacted>`.
    public var description: String {
        "DeviceAuthorizationResponse(userCode: \(userCode), verificationURI: \(verificationURI.absoluteString), "
            + "expiresIn: \(secondsNumber(expiresIn)) s, interval: \(secondsNumber(interval)) s, deviceCode: <redacted>)"
    }

    /// The fields, with the device code redacted.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "deviceCode": "<redacted>",
            "userCode": userCode,
            "verificationURI": verificationURI,
            "verificationURIComplete": verificationURIComplete as Any,
            "expiresIn": expiresIn,
            "interval": interval,
            "message": message as Any,
        ])
    }
}
