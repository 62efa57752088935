public import Foundation

/// The kind of identity provider an ``Authority`` points at, which decides the endpoint layout,
/// how accounts are identified and which protocol extensions are used.
public enum AuthorityType: String, Sendable, Hashable, CaseIterable {
    /// Microsoft Entra ID (work/school and personal Microsoft accounts): `https://<cloud host>/<tenant>`,
    /// v2.0 endpoints, `client_info` for the home account id.
    case aad
    /// Any standard OpenID Connect provider: the URL is the issuer; discovery at
    /// `<issuer>/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4).
    case oidc
    /// Azure AD B2C: `https://<host>/tfp/<tenant>/<policy>` or
    /// `https://<tenant>.b2clogin.com/<tenant>.onmicrosoft.com/<policy>`, one authority per policy
    /// (user flow); discovery at `<authority>/v2.0/.well-known/openid-configuration`. Instance
    /// discovery cannot vouch for a B2C host, so the app lists it in `knownAuthorities`
    /// (as MSAL for iOS/macOS `MSALB2CAuthority` and `knownAuthorities` require).
    case b2c
    /// Active Directory Federation Services (AD FS 2019 and later): `https://<host>/adfs`;
    /// discovery at `<authority>/.well-known/openid-configuration`, whose `issuer` is the authority
    /// (as MSAL.NET's ADFS authority).
    case adfs
}

/// The tenant part of an Entra ID authority.
public enum AuthorityTenant: Sendable, Hashable {
    /// `common`: work/school and personal accounts.
    case common
    /// `organizations`: work/school accounts only.
    case organizations
    /// `consumers`: personal Microsoft accounts only.
    case consumers
    /// A tenant ID (a GUID), lowercased.
    case tenantID(String)
    /// A verified domain of a tenant, e.g. `contoso.onmicrosoft.com`, lowercased.
    case domain(String)

    /// Classifies a tenant path segment.
    init(segment: String) {
        let lower = segment.lowercased()
        switch lower {
        case "common": self = .common
        case "organizations": self = .organizations
        case "consumers": self = .consumers
        default: self = UUID(uuidString: lower) != nil ? .tenantID(lower) : .domain(lower)
        }
    }

    /// The path segment: `common`, `organizations`, `consumers`, the tenant ID or the domain.
    public var segment: String {
        switch self {
        case .common: "common"
        case .organizations: "organizations"
        case .consumers: "consumers"
        case .tenantID(let id): id
        case .domain(let domain): domain
        }
    }

    /// Whether the segment names one tenant (`tenantID` or `domain`) rather than a group of tenants.
    public var isSingleTenant: Bool {
        switch self {
        case .tenantID, .domain: true
        case .common, .organizations, .consumers: false
        }
    }
}

/// Where tokens come from: a parsed, validated and classified authority URL.
///
/// One ``PublicClientApplication`` may use many authorities, one per request (MSAL for iOS/macOS
/// `MSALAuthority`).
///
/// - Entra ID: `https://login.microsoftonline.com/{common|organizations|consumers|<tenant>}` and the
///   other public and national clouds (``knownEntraHosts``); only the first path segment (the
///   tenant) is kept, so `.../contoso.com/v2.0` and `.../contoso.com` are the same authority.
/// - Azure AD B2C: `https://<host>/tfp/<tenant>/<policy>` or
///   `https://<tenant>.b2clogin.com/<tenant>.onmicrosoft.com/<policy>`, trusted only when the host is
///   in `knownAuthorities`.
/// - AD FS: `https://<host>/adfs`.
/// - OpenID Connect: the issuer URL as given, without a trailing slash.
///
/// `https` is required except on loopback hosts (`127.0.0.1`, `::1`, `localhost`), where `http`
/// is allowed for local providers (RFC 8252 §8.3 treats loopback as not leaving the machine).
public struct Authority: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The Entra ID hosts of the public and national clouds, for which the type is inferred as
    /// ``AuthorityType/aad``.
    public static let knownEntraHosts: Set<String> = [
        "login.microsoftonline.com", "login.windows.net", "login.microsoft.com", "sts.windows.net",
        "login.microsoftonline.us", "login.usgovcloudapi.net", "login.chinacloudapi.cn",
        "login.partner.microsoftonline.cn", "login.microsoftonline.de",
    ]

    /// The Azure AD B2C host suffixes (`<tenant>.b2clogin.com` and the national-cloud variants), for
    /// which the type is inferred as ``AuthorityType/b2c`` (the list MSAL.NET and MSAL for Python use).
    /// Inference alone does not make a host trusted: it must still be in `knownAuthorities`.
    /// `ciamlogin.com` (Microsoft Entra External ID) is not here: MSAL for iOS/macOS gives it its own
    /// CIAM authority with Entra's tenant layout, so parse `https://<tenant>.ciamlogin.com/<tenant>`
    /// with `type: .aad`.
    public static let knownB2CHostSuffixes: Set<String> = ["b2clogin.com", "b2clogin.cn", "b2clogin.us", "b2clogin.de"]

    /// The fields, in one shared object: an authority is copied into every request's parameters,
    /// lookups and results, and copying one reference costs less than copying each field.
    private final class Storage: Sendable {
        let url: URL
        let type: AuthorityType
        let tenant: AuthorityTenant?
        let policy: String?
        let environment: String
        let isLoopback: Bool

        init(url: URL, type: AuthorityType, tenant: AuthorityTenant?, policy: String?, environment: String, isLoopback: Bool) {
            self.url = url
            self.type = type
            self.tenant = tenant
            self.policy = policy
            self.environment = environment
            self.isLoopback = isLoopback
        }
    }

    private let storage: Storage

    /// The normalized authority URL: scheme and host lowercased, no query, fragment or trailing slash.
    /// For ``AuthorityType/aad``, `https://<host>/<tenant>`; for ``AuthorityType/b2c``,
    /// `https://<host>/tfp/<tenant>/<policy>` or `https://<host>/<tenant>/<policy>` (the shape given);
    /// for ``AuthorityType/adfs``, `https://<host>/adfs`.
    public var url: URL { storage.url }
    /// The provider kind.
    public var type: AuthorityType { storage.type }
    /// For ``AuthorityType/aad`` and ``AuthorityType/b2c``: the tenant segment; `nil` for OpenID
    /// Connect and AD FS.
    public var tenant: AuthorityTenant? { storage.tenant }
    /// For ``AuthorityType/b2c``: the policy (user flow or custom policy, e.g. `B2C_1_SignUpSignIn`),
    /// as given; `nil` for the other types.
    public var policy: String? { storage.policy }
    /// The host, with `:port` when the URL names a port. This is the `environment` of cache entries.
    /// (Derived from ``url`` once: silent requests read it on every call.)
    public var environment: String { storage.environment }
    /// Whether ``environment`` equals `host` (`==`), compared in place: reading ``environment``
    /// copies it out, a retain and a release on every silent call.
    package func hasEnvironment(_ host: String) -> Bool { storage.environment == host }
    /// Whether the host is a loopback host (`127.0.0.1` and the rest of `127.0.0.0/8`, `::1`,
    /// `localhost`). Derived from ``url`` once.
    public var isLoopback: Bool { storage.isLoopback }

    /// The fields, as a struct of stored properties would show them (`dump`, debuggers).
    public var customMirror: Mirror {
        Mirror(self, children: [
            "url": url, "type": type, "tenant": tenant as Any, "policy": policy as Any, "environment": environment,
            "isLoopback": isLoopback,
        ], displayStyle: .struct)
    }

    /// Whether both are the same authority: every field equal.
    public static func == (lhs: Authority, rhs: Authority) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.url == rhs.url && lhs.type == rhs.type && lhs.tenant == rhs.tenant && lhs.policy == rhs.policy
                && lhs.environment == rhs.environment && lhs.isLoopback == rhs.isLoopback)
    }

    /// Hashes every field.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(type)
        hasher.combine(tenant)
        hasher.combine(policy)
        hasher.combine(environment)
        hasher.combine(isLoopback)
    }

    /// Parses and classifies an authority.
    ///
    /// - Parameters:
    ///   - string: the authority URL, e.g. `https://login.microsoftonline.com/common` or an issuer.
    ///   - type: the provider kind when the URL does not tell (e.g. an Entra-shaped provider on
    ///     `127.0.0.1`). When `nil` it is inferred, in this order: a first path segment `tfp`, or a
    ///     host under one of ``knownB2CHostSuffixes``, gives ``AuthorityType/b2c``; a known Entra
    ///     host ``AuthorityType/aad``; a first path segment `adfs` ``AuthorityType/adfs``; anything
    ///     else ``AuthorityType/oidc``.
    ///   - knownAuthorities: the hosts the app trusts without instance discovery, e.g.
    ///     `contoso.b2clogin.com` (a `host:port` entry matches that port only; a URL entry counts
    ///     by its host). A ``AuthorityType/b2c`` authority is accepted only when its host is listed
    ///     (MSAL's `knownAuthorities`); the other types ignore the set.
    /// - Throws: ``MSALError`` `.internal(.invalidAuthority)` when the string is not an absolute
    ///   `http(s)` URL with a host, has a query, fragment or user info, uses `http` on a host that is
    ///   not loopback, is an Entra authority without a tenant segment, a B2C authority without a
    ///   tenant and a policy or whose host is not in `knownAuthorities` (the message says to add it),
    ///   or an AD FS authority whose path does not start with `/adfs`.
    public init(_ string: String, type: AuthorityType? = nil, knownAuthorities: Set<String> = []) throws(MSALError) {
        guard let components = URLComponents(string: string.trimmingASCIIWhitespace()),
              let scheme = components.scheme?.lowercased(),
              let rawHost = components.host, !rawHost.isEmpty
        else {
            throw .internal(.invalidAuthority, "The authority '\(string)' is not an absolute URL with a host.")
        }
        guard scheme == "https" || scheme == "http" else {
            throw .internal(.invalidAuthority, "The authority must use https, not '\(scheme)'.")
        }
        let host = rawHost.lowercased()
        if scheme == "http" && !Authority.isLoopbackHost(host) {
            throw .internal(
                .invalidAuthority,
                "The authority must use https; http is allowed only on loopback hosts (127.0.0.1, ::1, localhost), not '\(host)'."
            )
        }
        if components.query != nil || components.fragment != nil {
            throw .internal(.invalidAuthority, "The authority may not have a query or a fragment.")
        }
        if components.user != nil || components.password != nil {
            throw .internal(.invalidAuthority, "The authority may not carry user information.")
        }
        let segments = components.path.split(separator: "/").map(String.init)
        let first = segments.first?.lowercased()
        let resolvedType = type ?? Authority.inferredType(host: host, firstSegment: first)

        var normalized = URLComponents()
        normalized.scheme = scheme
        normalized.host = host
        normalized.port = components.port
        var policy: String?
        let tenant: AuthorityTenant?
        // Hints keep the given scheme and port (a loopback test provider is http with a port).
        let origin = "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "")
        switch resolvedType {
        case .aad:
            guard let first = segments.first else {
                throw .internal(
                    .invalidAuthority,
                    "An Entra ID authority needs a tenant: \(origin)/{common|organizations|consumers|<tenant id or domain>}."
                )
            }
            let segment = AuthorityTenant(segment: first)
            normalized.path = "/" + segment.segment
            tenant = segment
        case .oidc:
            normalized.path = segments.isEmpty ? "" : "/" + segments.joined(separator: "/")
            tenant = nil
        case .b2c:
            // MSAL for iOS/macOS keeps `tfp/<tenant>/<policy>` and drops what follows; other shapes
            // are `<tenant>/<policy>`.
            let tfp = first == "tfp"
            let rest = tfp ? Array(segments.dropFirst()) : segments
            guard rest.count >= 2 else {
                throw .internal(
                    .invalidAuthority,
                    "A B2C authority needs a tenant and a policy: \(origin)/tfp/<tenant>/<policy> or https://<tenant>.b2clogin.com/<tenant>.onmicrosoft.com/<policy>."
                )
            }
            let environment = components.port.map { "\(host):\($0)" } ?? host
            guard Authority.isListed(host: host, environment: environment, in: knownAuthorities) else {
                throw .internal(
                    .invalidAuthority,
                    "The B2C authority's host '\(environment)' is not trusted: add '\(environment)' to knownAuthorities (instance discovery cannot validate B2C hosts)."
                )
            }
            let segment = AuthorityTenant(segment: rest[0])
            normalized.path = (tfp ? "/tfp/" : "/") + segment.segment + "/" + rest[1]
            tenant = segment
            policy = rest[1]
        case .adfs:
            guard first == "adfs" else {
                throw .internal(.invalidAuthority, "An AD FS authority is \(origin)/adfs.")
            }
            normalized.path = "/adfs"
            tenant = nil
        }
        guard let url = normalized.url else {
            throw .internal(.invalidAuthority, "The authority '\(string)' could not be normalized.")
        }
        let normalizedHost = url.host ?? ""
        storage = Storage(
            url: url, type: resolvedType, tenant: tenant, policy: policy,
            environment: url.port.map { "\(normalizedHost):\($0)" } ?? normalizedHost,
            isLoopback: Authority.isLoopbackHost(normalizedHost))
    }

    /// The type of an authority parsed without an explicit one (see ``init(_:type:knownAuthorities:)``).
    private static func inferredType(host: String, firstSegment: String?) -> AuthorityType {
        if firstSegment == "tfp" { return .b2c }
        if knownB2CHostSuffixes.contains(where: { host.hasSuffix("." + $0) }) { return .b2c }
        if knownEntraHosts.contains(host) { return .aad }
        if firstSegment == "adfs" { return .adfs }
        return .oidc
    }

    /// Whether `knownAuthorities` lists the host: as `host`, as `host:port`, or as a URL naming either.
    private static func isListed(host: String, environment: String, in knownAuthorities: Set<String>) -> Bool {
        knownAuthorities.contains { entry in
            var entry = entry.trimmingASCIIWhitespace().lowercased()
            if entry.contains("://"), let components = URLComponents(string: entry), let entryHost = components.host {
                entry = components.port.map { "\(entryHost):\($0)" } ?? entryHost
            }
            while entry.hasSuffix("/") { entry.removeLast() }
            return entry == host || entry == environment
        }
    }

    /// The same authority with another tenant segment (Entra ID only; for OpenID Connect, `self`).
    /// Used to move a `common` request to the account's home tenant.
    /// - Returns: the authority `https://<host>/<tenant>`.
    public func withTenant(_ tenant: String) -> Authority {
        guard type == .aad, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return self }
        components.path = "/" + tenant
        guard let string = components.string, let authority = try? Authority(string, type: .aad) else { return self }
        return authority
    }

    /// The OpenID Connect discovery document's URL:
    /// `<authority>/v2.0/.well-known/openid-configuration` for Entra ID and B2C (the v2.0 endpoints),
    /// `<authority>/.well-known/openid-configuration` for AD FS and other issuers (OpenID Connect
    /// Discovery 1.0 §4).
    public var discoveryURL: URL {
        switch type {
        case .aad, .b2c: url.appendingPathComponent("v2.0/.well-known/openid-configuration")
        case .oidc, .adfs: url.appendingPathComponent(".well-known/openid-configuration")
        }
    }

    /// ``url`` as a string.
    public var description: String { url.absoluteString }

    /// Whether `host` is `localhost`, an IPv4 address in `127.0.0.0/8`, or `::1` (with or without brackets).
    public static func isLoopbackHost(_ host: String) -> Bool {
        let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) else { return false }
        return octets[0] == "127"
    }
}
