public import Foundation
public import MSALCore

/// The parts of an OpenID Provider's discovery document swift-msal uses
/// (OpenID Connect Discovery 1.0 §3; RFC 8414 §2; RFC 8628 §4 for the device endpoint).
public struct OpenIDConfiguration: Sendable, Hashable {
    /// `issuer`: the provider's issuer identifier. For Entra ID's multi-tenant authorities it
    /// contains the literal placeholder `{tenantid}`.
    public var issuer: String
    /// `authorization_endpoint`.
    public var authorizationEndpoint: URL
    /// `token_endpoint`.
    public var tokenEndpoint: URL
    /// `device_authorization_endpoint` (RFC 8628 §4), or for Entra ID, when the document has
    /// none, `<authority>/oauth2/v2.0/devicecode`; `nil` when the provider offers no device flow.
    public var deviceAuthorizationEndpoint: URL?
    /// `end_session_endpoint` (OpenID Connect RP-Initiated Logout 1.0 §2.1), if advertised.
    public var endSessionEndpoint: URL?
    /// `jwks_uri`: where the ID token signing keys are published, if advertised.
    public var jwksURI: URL?
    /// `userinfo_endpoint`, if advertised.
    public var userinfoEndpoint: URL?
    /// `scopes_supported`; empty when not advertised.
    public var scopesSupported: [String]
    /// `response_types_supported`; empty when not advertised.
    public var responseTypesSupported: [String]
    /// `grant_types_supported`; empty when not advertised (which RFC 8414 §2 reads as
    /// `authorization_code` and `implicit`; some providers, e.g. Glewlwyd, leave out grants they support).
    public var grantTypesSupported: [String]
    /// `code_challenge_methods_supported` (RFC 8414 §2, PKCE); empty when not advertised.
    public var codeChallengeMethodsSupported: [String]
    /// `id_token_signing_alg_values_supported`; empty when not advertised.
    public var idTokenSigningAlgValuesSupported: [String]

    /// Creates a configuration.
    public init(
        issuer: String,
        authorizationEndpoint: URL,
        tokenEndpoint: URL,
        deviceAuthorizationEndpoint: URL? = nil,
        endSessionEndpoint: URL? = nil,
        jwksURI: URL? = nil,
        userinfoEndpoint: URL? = nil,
        scopesSupported: [String] = [],
        responseTypesSupported: [String] = [],
        grantTypesSupported: [String] = [],
        codeChallengeMethodsSupported: [String] = [],
        idTokenSigningAlgValuesSupported: [String] = []
    ) {
        self.issuer = issuer
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
        self.endSessionEndpoint = endSessionEndpoint
        self.jwksURI = jwksURI
        self.userinfoEndpoint = userinfoEndpoint
        self.scopesSupported = scopesSupported
        self.responseTypesSupported = responseTypesSupported
        self.grantTypesSupported = grantTypesSupported
        self.codeChallengeMethodsSupported = codeChallengeMethodsSupported
        self.idTokenSigningAlgValuesSupported = idTokenSigningAlgValuesSupported
    }

    /// Parses a discovery document for `authority`.
    ///
    /// - Parameters:
    ///   - data: the document (a JSON object).
    ///   - authority: the authority it was fetched for; decides the Entra ID device endpoint
    ///     derivation and the issuer check.
    /// - Returns: the configuration.
    /// - Throws: ``MSALError`` `.serverError` with `.invalidResponse` when the document is not a
    ///   JSON object or lacks a valid `issuer`, `authorization_endpoint` or `token_endpoint`
    ///   (OpenID Connect Discovery 1.0 §3); `.internal(.invalidAuthority)` when, for an OpenID
    ///   Connect or AD FS authority, `issuer` is not the authority URL (OpenID Connect Discovery
    ///   1.0 §4.3; AD FS names itself `https://<host>/adfs`).
    public init(document data: Data, for authority: Authority) throws(MSALError) {
        let source = authority.discoveryURL.absoluteString
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: data), let object = value.objectValue else {
            throw MSALError(.serverError, internalCode: .invalidResponse, message: "The OpenID configuration at \(source) is not a JSON object.")
        }
        try self.init(json: object, for: authority)
    }

    init(json object: [String: JSONValue], for authority: Authority, httpStatusCode: Int? = nil, correlationID: String? = nil) throws(MSALError) {
        let source = authority.discoveryURL.absoluteString
        func invalid(_ field: String) -> MSALError {
            MSALError(
                .serverError, internalCode: .invalidResponse,
                message: "The OpenID configuration at \(source) has no valid '\(field)' (OpenID Connect Discovery 1.0 §3).",
                correlationID: correlationID, httpStatusCode: httpStatusCode
            )
        }
        guard let issuer = object.string("issuer") else { throw invalid("issuer") }
        guard let authorizationEndpoint = object.url("authorization_endpoint") else { throw invalid("authorization_endpoint") }
        guard let tokenEndpoint = object.url("token_endpoint") else { throw invalid("token_endpoint") }
        if authority.type == .oidc || authority.type == .adfs {
            func trimmed(_ string: String) -> String { string.hasSuffix("/") ? String(string.dropLast()) : string }
            guard trimmed(issuer) == trimmed(authority.url.absoluteString) else {
                throw MSALError(
                    .internal, internalCode: .invalidAuthority,
                    message: "The OpenID configuration at \(source) names the issuer '\(issuer)', not the authority \(authority.url.absoluteString) (OpenID Connect Discovery 1.0 §4.3); use the issuer as the authority.",
                    correlationID: correlationID, httpStatusCode: httpStatusCode
                )
            }
        }
        var deviceEndpoint = object.url("device_authorization_endpoint")
        if deviceEndpoint == nil && authority.type == .aad {
            deviceEndpoint = authority.url.appendingPathComponent("oauth2/v2.0/devicecode")
        }
        self.init(
            issuer: issuer,
            authorizationEndpoint: authorizationEndpoint,
            tokenEndpoint: tokenEndpoint,
            deviceAuthorizationEndpoint: deviceEndpoint,
            endSessionEndpoint: object.url("end_session_endpoint"),
            jwksURI: object.url("jwks_uri"),
            userinfoEndpoint: object.url("userinfo_endpoint"),
            scopesSupported: object.strings("scopes_supported") ?? [],
            responseTypesSupported: object.strings("response_types_supported") ?? [],
            grantTypesSupported: object.strings("grant_types_supported") ?? [],
            codeChallengeMethodsSupported: object.strings("code_challenge_methods_supported") ?? [],
            idTokenSigningAlgValuesSupported: object.strings("id_token_signing_alg_values_supported") ?? []
        )
    }
}

/// Fetches and keeps each authority's ``OpenIDConfiguration``: one discovery request per
/// authority for the life of the cache, shared by concurrent callers.
///
/// A failed fetch is not kept: the next call tries again. As MSAL for iOS/macOS caches its
/// authority metadata in memory for the life of the application.
public actor OpenIDConfigurationCache {
    private let transport: any HTTPTransport
    private let logger: Logger
    private var entries: [Key: Task<OpenIDConfiguration, any Error>] = [:]

    /// What decides an authority's discovery URL: its URL as written and whether the v2.0 path is
    /// added (Entra ID and B2C). Cheaper to build and hash than the URL itself, on every silent refresh.
    private struct Key: Hashable {
        let url: String
        let usesV2Endpoints: Bool

        init(_ authority: Authority) {
            url = authority.url.absoluteString
            usesV2Endpoints = authority.type == .aad || authority.type == .b2c
        }
    }

    /// Creates an empty cache.
    /// - Parameters:
    ///   - transport: sends the discovery requests.
    ///   - logger: receives a debug line per fetch; default ``Logger/none``.
    public init(transport: any HTTPTransport, logger: Logger = .none) {
        self.transport = transport
        self.logger = logger
    }

    /// Fetches `authority.discoveryURL` once per authority (cached; concurrent callers share one
    /// fetch); for Entra ID (`.aad`) with no `device_authorization_endpoint`, derives
    /// `<authority>/oauth2/v2.0/devicecode`.
    ///
    /// - Parameters:
    ///   - authority: the authority; one configuration is kept per authority URL and kind.
    ///   - correlationID: sent as `client-request-id` if this call makes the request.
    /// - Returns: the configuration.
    /// - Throws: ``MSALError``: the transport's `.internal(.networkError)` / `.internal(.timeout)`;
    ///   `.internal(.invalidAuthority)` when the discovery endpoint answers 4xx (unknown tenant or
    ///   path; Entra's `error` fields are kept) or the issuer does not match an OpenID Connect or AD FS
    ///   authority; `.serverError` (with `.invalidResponse` when the body is unusable) for 5xx and
    ///   for a document without `issuer`, `authorization_endpoint` or `token_endpoint`.
    public func configuration(for authority: Authority, correlationID: String?) async throws(MSALError) -> OpenIDConfiguration {
        let key = Key(authority)
        let task: Task<OpenIDConfiguration, any Error>
        if let existing = entries[key] {
            task = existing
        } else {
            let transport = transport
            let logger = logger
            task = Task { () async throws(MSALError) -> OpenIDConfiguration in
                try await Self.fetch(authority, transport: transport, logger: logger, correlationID: correlationID)
            }
            entries[key] = task
        }
        do {
            return try await task.value
        } catch {
            if entries[key] == task { entries[key] = nil }
            if let error = error as? MSALError { throw error }
            throw .internal(.unexpected, "Fetching the OpenID configuration failed with an unexpected error.")
        }
    }

    /// Puts a configuration in the cache for `authority` (e.g. one the app shipped with), replacing any other.
    public func store(_ configuration: OpenIDConfiguration, for authority: Authority) {
        entries[Key(authority)] = Task { configuration }
    }

    /// Forgets every cached configuration; the next call per authority fetches again.
    public func removeAll() {
        entries.removeAll()
    }

    private static func fetch(
        _ authority: Authority,
        transport: any HTTPTransport,
        logger: Logger,
        correlationID: String?
    ) async throws(MSALError) -> OpenIDConfiguration {
        let url = authority.discoveryURL
        let host = url.host ?? url.absoluteString
        logger.debug("GET OpenID configuration from \(host)")
        let response = try await transport.send(HTTPRequest(method: .get, url: url, headers: OAuth2Client.standardHeaders(correlationID: correlationID)))
        let object: [String: JSONValue]
        do {
            object = try ServerResponse.jsonObject(response, endpoint: "discovery endpoint", host: host, requestCorrelationID: correlationID)
        } catch {
            var error = error
            if (400...499).contains(response.statusCode) {
                error.code = .internal
                error.internalCode = .invalidAuthority
                error.message = "The authority \(authority.url.absoluteString) was not accepted: its discovery document \(url.absoluteString) answered HTTP \(response.statusCode)"
                    + (error.oauthError.map { " with error '\($0)'" } ?? "") + "."
                if let description = error.oauthErrorDescription, !description.isEmpty {
                    error.message += " " + String(description.prefix(500))
                }
            }
            throw error
        }
        let configuration = try OpenIDConfiguration(
            json: object, for: authority, httpStatusCode: response.statusCode,
            correlationID: ServerResponse.correlationID(object, response, requestCorrelationID: correlationID)
        )
        logger.debug("OpenID configuration for \(host): device flow \(configuration.deviceAuthorizationEndpoint == nil ? "not offered" : "offered")")
        return configuration
    }
}
