import Foundation

/// A signed-in user as the token cache knows them: one home account, with a profile per tenant
/// the user has tokens for.
///
/// Source: MSAL for iOS/macOS `MSALAccount` (`identifier` = home account ID, `username`,
/// `environment`, `tenantProfiles`).
public struct Account: Sendable, Hashable, Identifiable {
    /// The home account ID: `<uid>.<utid>` from Entra ID's `client_info`; the ID token's `sub`
    /// for other OpenID Connect providers. Stable across tenants; compare case-insensitively.
    public let identifier: String
    /// The username shown to people (`preferred_username`, `upn` or `email`); `nil` if the provider
    /// sent none.
    public let username: String?
    /// The host of the authority that issued the account's tokens (`login.microsoftonline.com`,
    /// or `host:port` for a provider on a non-default port).
    public let environment: String
    /// One profile per tenant the account has signed in to; the home tenant's has `isHomeTenant`.
    public let tenantProfiles: [TenantProfile]

    /// The account's identifier, as `Identifiable` wants it.
    public var id: String { identifier }

    /// Creates an account.
    public init(identifier: String, username: String?, environment: String, tenantProfiles: [TenantProfile]) {
        self.identifier = identifier
        self.username = username
        self.environment = environment
        self.tenantProfiles = tenantProfiles
    }

    /// The Entra ID object ID and tenant ID that make up ``identifier`` (`<uid>.<utid>`), or `nil`
    /// when the identifier has no such shape (OpenID Connect providers).
    public var homeAccountID: (objectID: String, tenantID: String)? {
        // Home account IDs are ASCII: split the bytes (splitting Characters costs microseconds).
        let utf8 = identifier.utf8
        if utf8.allSatisfy({ $0 < 0x80 }) {
            guard let dot = utf8.firstIndex(of: UInt8(ascii: ".")), dot != utf8.startIndex else { return nil }
            let tenantStart = utf8.index(after: dot)
            guard tenantStart != utf8.endIndex, !utf8[tenantStart...].contains(UInt8(ascii: ".")) else { return nil }
            return (String(identifier[..<dot]), String(identifier[tenantStart...]))
        }
        let parts = identifier.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        return (String(parts[0]), String(parts[1]))
    }

    /// Whether two accounts are the same user: identifiers and environments compared case-insensitively.
    public static func == (lhs: Account, rhs: Account) -> Bool {
        lhs.identifier.lowercased() == rhs.identifier.lowercased()
            && lhs.environment.lowercased() == rhs.environment.lowercased()
    }

    /// Hashes the lowercased identifier and environment.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(identifier.lowercased())
        hasher.combine(environment.lowercased())
    }
}

/// The account as seen by one tenant (MSAL for iOS/macOS `MSALTenantProfile`).
public struct TenantProfile: Sendable, Hashable {
    /// The user's object ID in this tenant (the cache's `local_account_id`); for OpenID Connect
    /// providers, the `sub`.
    public let identifier: String
    /// The tenant ID (the cache's `realm`).
    public let tenantID: String
    /// The environment (host) of the tenant.
    public let environment: String
    /// Whether this is the user's home tenant.
    public let isHomeTenant: Bool
    /// The claims of the latest ID token for this tenant, if one is cached.
    public let claims: IDTokenClaims?

    /// Creates a tenant profile.
    public init(identifier: String, tenantID: String, environment: String, isHomeTenant: Bool, claims: IDTokenClaims?) {
        self.identifier = identifier
        self.tenantID = tenantID
        self.environment = environment
        self.isHomeTenant = isHomeTenant
        self.claims = claims
    }
}
