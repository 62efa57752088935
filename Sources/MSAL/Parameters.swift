public import Foundation
public import MSALCore
public import MSALWebAuth

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
/// Four words: the scopes, the account, the authority, and the rarely set rest (a forced refresh,
/// claims, extra parameters, a correlation ID) in one reference, `nil` when none is set. A silent
/// call is made again and again, and a value of more than 64 bytes is made and passed through
/// memory, where the initializer copied it once and destroyed the first copy: five retains and
/// as many releases on every call.
///
/// Source: MSAL for iOS/macOS `MSALSilentTokenParameters`.
public struct SilentTokenParameters: Sendable {
    /// The fields other than the scopes, the account and the authority. Never changed: a setter
    /// makes a new one.
    private final class Options: Sendable {
        let forceRefresh: Bool
        let claims: String?
        let extraQueryParameters: [String: String]
        let correlationID: UUID?

        init(forceRefresh: Bool, claims: String?, extraQueryParameters: [String: String], correlationID: UUID?) {
            self.forceRefresh = forceRefresh
            self.claims = claims
            self.extraQueryParameters = extraQueryParameters
            self.correlationID = correlationID
        }

        /// The options, or `nil` when each has its default (no allocation then).
        static func make(forceRefresh: Bool, claims: String?, extraQueryParameters: [String: String], correlationID: UUID?) -> Options? {
            guard forceRefresh || claims != nil || !extraQueryParameters.isEmpty || correlationID != nil else { return nil }
            return Options(forceRefresh: forceRefresh, claims: claims, extraQueryParameters: extraQueryParameters, correlationID: correlationID)
        }
    }

    /// The scopes the app needs (reserved OIDC scopes are rejected, as for interactive requests).
    public var scopes: [String]
    /// The signed-in account, from ``PublicClientApplication/allAccounts()`` or a lookup.
    public var account: Account
    /// The authority for this request; `nil` uses the configuration's. On Entra ID, `common` and
    /// `organizations` are served from the account's home tenant, as MSAL for iOS/macOS does.
    public var authority: Authority?
    private var options: Options?

    /// Skip the cached access token and redeem the refresh token. Default `false`.
    public var forceRefresh: Bool {
        get { options?.forceRefresh ?? false }
        set { options = Options.make(forceRefresh: newValue, claims: claims, extraQueryParameters: extraQueryParameters, correlationID: correlationID) }
    }
    /// A claims request (OpenID Connect Core §5.5), typically from a resource's claims challenge
    /// (`WWW-Authenticate: ... claims="..."`, base64-decoded). When set, the cached access token is
    /// skipped and the refresh carries it.
    public var claims: String? {
        get { options?.claims }
        set { options = Options.make(forceRefresh: forceRefresh, claims: newValue, extraQueryParameters: extraQueryParameters, correlationID: correlationID) }
    }
    /// Extra parameters sent to the token endpoint when a refresh is needed.
    public var extraQueryParameters: [String: String] {
        get { options?.extraQueryParameters ?? [:] }
        set { options = Options.make(forceRefresh: forceRefresh, claims: claims, extraQueryParameters: newValue, correlationID: correlationID) }
    }
    /// The correlation ID sent as `client-request-id`; a new UUID when `nil`.
    public var correlationID: UUID? {
        get { options?.correlationID }
        set { options = Options.make(forceRefresh: forceRefresh, claims: claims, extraQueryParameters: extraQueryParameters, correlationID: newValue) }
    }

    /// Creates silent parameters.
    public init(
        scopes: [String],
        account: Account,
        authority: Authority? = nil,
        forceRefresh: Bool = false,
        claims: String? = nil,
        extraQueryParameters: [String: String] = [:],
        correlationID: UUID? = nil
    ) {
        self.scopes = scopes
        self.account = account
        self.authority = authority
        options = Options.make(
            forceRefresh: forceRefresh, claims: claims, extraQueryParameters: extraQueryParameters, correlationID: correlationID)
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

/// The parameters of an interactive sign-in: authorization code with PKCE in the system browser,
/// redirected to a loopback listener (RFC 6749 §4.1, RFC 7636, RFC 8252) or to a private-use scheme.
///
/// Source: MSAL for iOS/macOS `MSALInteractiveTokenParameters`.
public struct InteractiveTokenParameters: Sendable {
    /// The scopes the app needs now (reserved OIDC scopes are rejected; swift-msal adds them).
    public var scopes: [String]
    /// More scopes for the user to consent to now, so later silent requests for them succeed.
    /// They are not part of the returned token.
    public var extraScopesToConsent: [String]
    /// What the provider should show: `select_account`, `login`, `consent`, `create` or `none`
    /// (OpenID Connect Core §3.1.2.1). `nil` leaves it to the provider.
    public var promptType: Prompt?
    /// Pre-fills the username on the sign-in page (`login_hint`).
    public var loginHint: String?
    /// Entra ID's `domain_hint` (`consumers`, `organizations`, or a tenant domain).
    public var domainHint: String?
    /// A JSON `claims` request (OpenID Connect Core §5.5), e.g. from a claims challenge.
    public var claims: String?
    /// The account to sign in again; its username becomes the login hint when none is given.
    public var account: Account?
    /// The authority for this request; `nil` uses the configuration's.
    public var authority: Authority?
    /// Opens the authorization URL. Default ``SystemBrowserLauncher`` (`$BROWSER`, else `xdg-open`).
    public var browser: any BrowserLauncher
    /// Called with the authorization URL and whether ``browser`` started a program for it
    /// (``BrowserLauncher/open(_:)``: started, not waited for, so a window is not certain); when
    /// none was started, the app shows the URL to the user. The listener waits either way.
    public var authorizationURLHandler: (@Sendable (URL, _ browserOpened: Bool) async -> Void)?
    /// How long to wait for the redirect, in seconds. Default 300 (5 minutes).
    public var timeout: TimeInterval
    /// Extra parameters of the authorization request (they never override the standard ones).
    public var extraQueryParameters: [String: String]
    /// The correlation ID sent as `client-request-id`; a new UUID when `nil`.
    public var correlationID: UUID?

    /// Creates interactive parameters.
    public init(
        scopes: [String],
        extraScopesToConsent: [String] = [],
        promptType: Prompt? = nil,
        loginHint: String? = nil,
        account: Account? = nil,
        authority: Authority? = nil,
        browser: any BrowserLauncher = SystemBrowserLauncher(),
        authorizationURLHandler: (@Sendable (URL, _ browserOpened: Bool) async -> Void)? = nil,
        timeout: TimeInterval = 300
    ) {
        self.scopes = scopes
        self.extraScopesToConsent = extraScopesToConsent
        self.promptType = promptType
        self.loginHint = loginHint
        self.domainHint = nil
        self.claims = nil
        self.account = account
        self.authority = authority
        self.browser = browser
        self.authorizationURLHandler = authorizationURLHandler
        self.timeout = timeout
        self.extraQueryParameters = [:]
        self.correlationID = nil
    }
}
