public import Foundation
public import MSALCore

/// The parameters of a device-code sign-in (RFC 8628), for machines without a browser.
///
/// Source: MSAL for iOS/macOS request parameters; MSAL.NET `AcquireTokenWithDeviceCode`.
public struct DeviceCodeParameters: Sendable {
    /// The scopes the app needs. Must not include `openid`, `profile` or `offline_access`
    /// (swift-msal adds them). For a v1 resource use ``ScopeSet/defaultScope(forResource:)``.
    public var scopes: [String]
    /// The authority for this request; `nil` uses the configuration's.
    public var authority: Authority?
    /// Extra parameters sent to the device authorization and token endpoints.
    public var extraQueryParameters: [String: String]
    /// The correlation ID sent as `client-request-id`; a new UUID when `nil`.
    public var correlationID: UUID?

    /// Creates device-code parameters.
    public init(scopes: [String], authority: Authority? = nil, extraQueryParameters: [String: String] = [:], correlationID: UUID? = nil) {
        self.scopes = scopes
        self.authority = authority
        self.extraQueryParameters = extraQueryParameters
        self.correlationID = correlationID
    }
}

/// The parameters of a silent token request: from the cache, or by redeeming the refresh token.
///
/// Source: MSAL for iOS/macOS `MSALSilentTokenParameters`.
public struct SilentTokenParameters: Sendable {
    /// The scopes the app needs (reserved OIDC scopes are rejected, as for interactive requests).
    public var scopes: [String]
    /// The signed-in account, from ``PublicClientApplication/allAccounts()`` or a lookup.
    public var account: Account
    /// The authority for this request; `nil` uses the configuration's. On Entra ID, `common` and
    /// `organizations` are served from the account's home tenant, as MSAL for iOS/macOS does.
    public var authority: Authority?
    /// Skip the cached access token and redeem the refresh token. Default `false`.
    public var forceRefresh: Bool
    /// Extra parameters sent to the token endpoint when a refresh is needed.
    public var extraQueryParameters: [String: String]
    /// The correlation ID sent as `client-request-id`; a new UUID when `nil`.
    public var correlationID: UUID?

    /// Creates silent parameters.
    public init(
        scopes: [String],
        account: Account,
        authority: Authority? = nil,
        forceRefresh: Bool = false,
        extraQueryParameters: [String: String] = [:],
        correlationID: UUID? = nil
    ) {
        self.scopes = scopes
        self.account = account
        self.authority = authority
        self.forceRefresh = forceRefresh
        self.extraQueryParameters = extraQueryParameters
        self.correlationID = correlationID
    }
}

/// What the user must do to finish a device-code sign-in, handed to the app before polling starts
/// (RFC 8628 §3.2–3.3). Holds no secret: the device code itself stays inside swift-msal.
public struct DeviceCodeInfo: Sendable, Hashable {
    /// The code the user types at ``verificationURI``.
    public let userCode: String
    /// Where the user goes to enter the code.
    public let verificationURI: URL
    /// A URI that already carries the code, when the provider sends one.
    public let verificationURIComplete: URL?
    /// Seconds the code stays valid, as the provider sent it.
    public let expiresIn: TimeInterval
    /// When the code expires (absolute instant; `Date` has no time zone, print it in UTC).
    public let expiresOn: Date
    /// Seconds between polls the provider asked for.
    public let interval: TimeInterval
    /// The text to show the user: the provider's `message` (Entra sends one), or one written by
    /// swift-msal from the URI and code.
    public let message: String

    /// Creates device-code info.
    public init(userCode: String, verificationURI: URL, verificationURIComplete: URL?, expiresIn: TimeInterval, expiresOn: Date, interval: TimeInterval, message: String) {
        self.userCode = userCode
        self.verificationURI = verificationURI
        self.verificationURIComplete = verificationURIComplete
        self.expiresIn = expiresIn
        self.expiresOn = expiresOn
        self.interval = interval
        self.message = message
    }
}
