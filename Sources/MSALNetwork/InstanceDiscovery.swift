internal import Foundation
public import MSALCore

/// What Microsoft Entra ID's instance discovery says about one cloud: the hosts that are the same
/// cloud, the one to send requests to and the one to key cache entries by.
///
/// One element of the `metadata` array of `GET /common/discovery/instance?api-version=1.1`
/// (`preferred_network`, `preferred_cache`, `aliases`), as MSAL for iOS/macOS and MSAL.NET read it:
/// a token issued by one alias is valid for every alias.
public struct InstanceMetadata: Sendable, Hashable {
    /// `preferred_network`: the host (with `:port` when it has one) to send requests to,
    /// e.g. `login.microsoftonline.com`.
    public var preferredNetwork: String
    /// `preferred_cache`: the host that cache entries are keyed by (their `environment`),
    /// e.g. `login.windows.net` for the public cloud.
    public var preferredCache: String
    /// `aliases`: every host of the cloud, lowercased, including the two preferred ones.
    public var aliases: [String]

    /// Creates metadata; hosts are lowercased.
    public init(preferredNetwork: String, preferredCache: String, aliases: [String]) {
        self.preferredNetwork = preferredNetwork.lowercased()
        self.preferredCache = preferredCache.lowercased()
        self.aliases = aliases.map { $0.lowercased() }
    }

    /// The metadata of a host that is its own only alias: `preferredNetwork`, `preferredCache` and
    /// `aliases` are all `host` (what MSAL uses for hosts instance discovery does not group, and for
    /// B2C, AD FS and generic authorities).
    public static func single(_ host: String) -> InstanceMetadata {
        InstanceMetadata(preferredNetwork: host, preferredCache: host, aliases: [host])
    }

    /// The public and national clouds, as MSAL ships them so that their hosts need no discovery
    /// request (MSAL.NET `KnownMetadataProvider`, matching Entra's own answer): worldwide
    /// (`login.microsoftonline.com`, cached as `login.windows.net`), China (21Vianet), Germany
    /// (legacy), US Government, `login-us.microsoftonline.com`, and the Bleu, Delos and GovSG
    /// sovereign clouds.
    public static let knownClouds: [InstanceMetadata] = [
        InstanceMetadata(
            preferredNetwork: "login.microsoftonline.com", preferredCache: "login.windows.net",
            aliases: ["login.microsoftonline.com", "login.windows.net", "login.microsoft.com", "sts.windows.net"]
        ),
        InstanceMetadata(
            preferredNetwork: "login.partner.microsoftonline.cn", preferredCache: "login.partner.microsoftonline.cn",
            aliases: ["login.partner.microsoftonline.cn", "login.chinacloudapi.cn"]
        ),
        .single("login.microsoftonline.de"),
        InstanceMetadata(
            preferredNetwork: "login.microsoftonline.us", preferredCache: "login.microsoftonline.us",
            aliases: ["login.microsoftonline.us", "login.usgovcloudapi.net"]
        ),
        .single("login-us.microsoftonline.com"),
        .single("login.sovcloud-identity.fr"),
        .single("login.sovcloud-identity.de"),
        .single("login.sovcloud-identity.sg"),
    ]

    /// The built-in metadata of a well-known Entra host (``knownClouds``), or `nil`.
    /// - Parameter host: a host, any case, without a port.
    public static func known(host: String) -> InstanceMetadata? {
        let host = host.lowercased()
        return knownClouds.first { $0.aliases.contains(host) }
    }
}

/// Validates Microsoft Entra ID authorities and finds their cloud's aliases: Entra's instance
/// discovery, as MSAL for iOS/macOS runs it before its first request to an authority.
///
/// A separate actor from ``OpenIDConfigurationCache``: instance discovery answers "is this host a
/// Microsoft Entra cloud, and which hosts are the same cloud?" once per host, the discovery
/// document answers "where are this authority's endpoints?" once per authority. A caller asks this
/// first (to refuse an unknown host before any token request and to learn
/// ``InstanceMetadata/preferredNetwork`` and ``InstanceMetadata/preferredCache``), then the
/// configuration cache.
///
/// - Entra (``AuthorityType/aad``) hosts in ``InstanceMetadata/knownClouds`` are answered from the
///   built-in table, with no request.
/// - Other Entra hosts are asked of the trusted host:
///   `GET https://<trustedHost>/common/discovery/instance?api-version=1.1&authorization_endpoint=<authority>/oauth2/v2.0/authorize`.
///   The answer's entry whose `aliases` name the host is the result; when no entry does, the host is
///   its own only alias (as MSAL.NET). Every entry of the answer is kept for each of its aliases.
/// - With `validateAuthority` off, unknown hosts are trusted without a request: the host is its own
///   only alias (MSAL's `validateAuthority = NO`).
/// - B2C, AD FS and generic OpenID Connect authorities are not Entra instances: the host is its
///   own only alias, with no request (B2C hosts are vouched for by `knownAuthorities` instead).
///
/// Results are kept per host for the life of the actor and shared by concurrent callers (one
/// request per host). A failed request is not kept: the next call tries again.
public actor InstanceDiscovery {
    private let transport: any HTTPTransport
    private let trustedHost: String
    private let validateAuthority: Bool
    private let logger: Logger
    private var entries: [String: Task<Discovered, any Error>] = [:]

    /// Creates an instance discovery with an empty cache.
    /// - Parameters:
    ///   - transport: sends the discovery requests.
    ///   - trustedHost: the host (with `:port` when needed) asked about unknown hosts; default
    ///     `login.microsoftonline.com`, as MSAL. `https` is used, or `http` when the host is loopback
    ///     (e.g. `127.0.0.1:<port>` for a local Entra-compatible provider).
    ///   - validateAuthority: when `false`, hosts outside the built-in table are trusted without a
    ///     request. Default `true`. Turn it off only for a host that is known good: an unvalidated
    ///     authority may be an impostor collecting credentials.
    ///   - logger: receives a debug line per request; default ``Logger/none``.
    public init(
        transport: any HTTPTransport,
        trustedHost: String = "login.microsoftonline.com",
        validateAuthority: Bool = true,
        logger: Logger = .none
    ) {
        self.transport = transport
        self.trustedHost = trustedHost.lowercased()
        self.validateAuthority = validateAuthority
        self.logger = logger
    }

    /// The cloud metadata of the authority's host (``Authority/environment``).
    ///
    /// - Parameters:
    ///   - authority: the authority; only its type and host matter.
    ///   - correlationID: sent as `client-request-id` if this call makes the request.
    /// - Returns: the metadata; for hosts that are not grouped, ``InstanceMetadata/single(_:)``.
    /// - Throws: ``MSALError``: `.internal(.failedAuthorityValidation)` when the trusted host answers
    ///   `invalid_instance` (AADSTS50049: the host is not an Entra cloud; the server's `error`
    ///   fields are kept); the transport's `.internal(.networkError)` / `.internal(.timeout)`;
    ///   `.serverError` for other error answers, and with `.invalidResponse` for a body that is
    ///   not a discovery answer (no `tenant_discovery_endpoint`).
    public func metadata(for authority: Authority, correlationID: String?) async throws(MSALError) -> InstanceMetadata {
        let host = authority.environment.lowercased()
        guard authority.type == .aad else { return .single(host) }
        if let known = InstanceMetadata.known(host: host) { return known }
        guard validateAuthority else { return .single(host) }

        let task: Task<Discovered, any Error>
        if let existing = entries[host] {
            task = existing
        } else {
            let (transport, trustedHost, logger) = (transport, trustedHost, logger)
            task = Task { () async throws(MSALError) -> Discovered in
                try await Self.fetch(authority, host: host, trustedHost: trustedHost, transport: transport, logger: logger, correlationID: correlationID)
            }
            entries[host] = task
        }
        let discovered: Discovered
        do {
            discovered = try await task.value
        } catch {
            if entries[host] == task { entries[host] = nil }
            if let error = error as? MSALError { throw error }
            throw .internal(.unexpected, "Instance discovery failed with an unexpected error.")
        }
        // Keep every entry of the answer for each of its aliases (the other clouds too), as MSAL does.
        for entry in discovered.entries {
            for alias in entry.aliases where entries[alias] == nil && InstanceMetadata.known(host: alias) == nil {
                entries[alias] = Task { Discovered(metadata: entry, entries: []) }
            }
        }
        return discovered.metadata
    }

    /// Forgets every discovered host; the next call per host asks again. The built-in table stays.
    public func removeAll() {
        entries.removeAll()
    }

    // MARK: - Private

    /// One answer: the metadata for the host asked about, and all the answer's entries.
    private struct Discovered: Sendable {
        var metadata: InstanceMetadata
        var entries: [InstanceMetadata]
    }

    private static func fetch(
        _ authority: Authority,
        host: String,
        trustedHost: String,
        transport: any HTTPTransport,
        logger: Logger,
        correlationID: String?
    ) async throws(MSALError) -> Discovered {
        let scheme = Authority.isLoopbackHost(URLComponents(string: "https://\(trustedHost)")?.host ?? trustedHost) ? "http" : "https"
        let authorizationEndpoint = authority.url.absoluteString + "/oauth2/v2.0/authorize"
        let query = "api-version=1.1&authorization_endpoint=" + FormEncoding.encode(authorizationEndpoint)
        guard let url = URL(string: "\(scheme)://\(trustedHost)/common/discovery/instance?\(query)") else {
            throw .internal(.invalidParameter, "The trusted host '\(trustedHost)' does not form a valid instance discovery URL.")
        }
        logger.debug("GET instance discovery from \(trustedHost) for \(host)")
        let response = try await transport.send(HTTPRequest(method: .get, url: url, headers: OAuth2Client.standardHeaders(correlationID: correlationID)))
        let object: [String: JSONValue]
        do {
            object = try ServerResponse.jsonObject(response, endpoint: "instance discovery endpoint", host: trustedHost, requestCorrelationID: correlationID)
        } catch {
            guard error.oauthError == "invalid_instance" else { throw error }
            var failure = error
            failure.code = .internal
            failure.internalCode = .failedAuthorityValidation
            failure.message = "Instance discovery at \(trustedHost) does not know the host '\(host)' (invalid_instance): "
                + "the authority \(authority.url.absoluteString) is not a Microsoft Entra cloud. Check the host, or turn authority validation off only if you trust it."
            throw failure
        }
        let correlation = ServerResponse.correlationID(object, response, requestCorrelationID: correlationID)
        guard object.string("tenant_discovery_endpoint") != nil else {
            throw ServerResponse.missingField("tenant_discovery_endpoint", endpoint: "instance discovery endpoint", host: trustedHost, status: response.statusCode, correlationID: correlation)
        }
        let all = Self.entries(in: object)
        let metadata = all.first { $0.aliases.contains(host) } ?? .single(host)
        logger.debug("Instance discovery for \(host): preferred network \(metadata.preferredNetwork), \(metadata.aliases.count) aliases")
        return Discovered(metadata: metadata, entries: all)
    }

    /// The well-formed entries of an answer's `metadata` array; malformed ones are skipped.
    static func entries(in object: [String: JSONValue]) -> [InstanceMetadata] {
        (object["metadata"]?.arrayValue ?? []).compactMap { value in
            guard let entry = value.objectValue,
                  let network = entry.string("preferred_network"),
                  let cache = entry.string("preferred_cache"),
                  let aliases = entry.strings("aliases"), !aliases.isEmpty
            else { return nil }
            return InstanceMetadata(preferredNetwork: network, preferredCache: cache, aliases: aliases)
        }
    }
}
