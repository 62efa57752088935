import Foundation
internal import Synchronization

/// A signed-in user as the token cache knows them: one home account, with a profile per tenant
/// the user has tokens for.
///
/// Source: MSAL for iOS/macOS `MSALAccount` (`identifier` = home account ID, `username`,
/// `environment`, `tenantProfiles`).
public struct Account: Sendable, Hashable, Identifiable, CustomReflectable {
    /// The fields, in one shared object: an account is copied into every request's parameters and
    /// every result, and copying one reference costs less than copying each field (at a large
    /// cache, each field's storage is a separate read from memory).
    private final class Storage: Sendable {
        let identifier: String
        let username: String?
        let environment: String
        let tenantProfiles: [TenantProfile]
        let origin: AccountOrigin?
        /// Not `Sendable` (see ``Account/tokenPartitions``): never changed, and read only by the
        /// cache that made it, under its lock.
        nonisolated(unsafe) let tokenPartitions: AnyObject?
        /// `identifier.hashValue`, computed once: tables keyed by the identifier (an application's
        /// table of repeated requests) hash it on every call.
        let identifierHash: Int

        init(
            identifier: String, username: String?, environment: String, tenantProfiles: [TenantProfile], origin: AccountOrigin?,
            tokenPartitions: AnyObject?
        ) {
            self.identifier = identifier
            self.username = username
            self.environment = environment
            self.tenantProfiles = tenantProfiles
            self.origin = origin
            self.tokenPartitions = tokenPartitions
            identifierHash = identifier.hashValue
        }
    }

    private let storage: Storage

    /// The home account ID: `<uid>.<utid>` from Entra ID's `client_info`; the ID token's `sub`
    /// for other OpenID Connect providers. Stable across tenants; compare case-insensitively.
    public var identifier: String { storage.identifier }
    /// The username shown to people (`preferred_username`, `upn` or `email`); `nil` if the provider
    /// sent none.
    public var username: String? { storage.username }
    /// The host of the authority that issued the account's tokens (`login.microsoftonline.com`,
    /// or `host:port` for a provider on a non-default port).
    public var environment: String { storage.environment }
    /// One profile per tenant the account has signed in to; the home tenant's has `isHomeTenant`.
    public var tenantProfiles: [TenantProfile] { storage.tenantProfiles }

    /// The account's identifier, as `Identifiable` wants it.
    public var id: String { identifier }

    /// Creates an account.
    public init(identifier: String, username: String?, environment: String, tenantProfiles: [TenantProfile]) {
        storage = Storage(
            identifier: identifier, username: username, environment: environment, tenantProfiles: tenantProfiles, origin: nil,
            tokenPartitions: nil)
    }

    /// Creates an account assembled by an application from its cache (see ``origin`` and ``tokenPartitions``).
    package init(
        identifier: String, username: String?, environment: String, tenantProfiles: [TenantProfile], origin: AccountOrigin,
        tokenPartitions: AnyObject? = nil
    ) {
        storage = Storage(
            identifier: identifier, username: username, environment: environment, tenantProfiles: tenantProfiles, origin: origin,
            tokenPartitions: tokenPartitions)
    }

    /// Which application instance assembled this account, from which state of its cache; `nil` for
    /// an account made otherwise. Not part of equality: it only tells the application that an
    /// account it is given is the one it would assemble now.
    package var origin: AccountOrigin? { storage.origin }

    /// The account's access tokens as the cache that assembled it held them, for a lookup that
    /// goes straight to them while that cache has not changed since (MSALCache's
    /// `AccountTokenPartitions`, opaque here); `nil` for an account made otherwise. Not part of
    /// equality.
    package var tokenPartitions: AnyObject? { storage.tokenPartitions }

    /// Whether ``environment`` equals `environment` ignoring case, compared in place (reading
    /// ``environment`` would copy it out: a retain and a release on every cache hit).
    package func hasEnvironment(equalToIgnoringCase environment: String) -> Bool {
        storage.environment.equalsIgnoringCase(environment)
    }

    /// ``identifier``'s `hashValue`, computed when the account was made.
    package var identifierHashValue: Int { storage.identifierHash }

    /// The claims of the tenant profile whose tenant ID is `tenantID` (compared case-insensitively),
    /// or `nil` when no profile has that tenant or its profile has no claims. What a cached result's
    /// `idTokenClaims` reads, when asked.
    package func claims(ofTenant tenantID: String) -> IDTokenClaims? {
        let profiles = storage.tenantProfiles
        // Most often the tenant ID is as written in the cache: the first pass finds it.
        return (profiles.first { $0.tenantID == tenantID } ?? profiles.first { $0.tenantID.equalsIgnoringCase(tenantID) })?.claims
    }

    /// The fields, as a struct of stored properties would show them (`print`, `dump`, debuggers).
    public var customMirror: Mirror {
        Mirror(self, children: [
            "identifier": identifier, "username": username as Any, "environment": environment, "tenantProfiles": tenantProfiles,
        ], displayStyle: .struct)
    }

    /// The Entra ID object ID and tenant ID that make up ``identifier`` (`<uid>.<utid>`), or `nil`
    /// when the identifier has no such shape (OpenID Connect providers).
    public var homeAccountID: (objectID: String, tenantID: String)? { Self.homeAccountParts(of: identifier) }

    /// The object ID and tenant ID of a home account ID `<uid>.<utid>` (``homeAccountID`` of an
    /// account with that identifier), or `nil` when it has no such shape.
    package static func homeAccountParts(of identifier: String) -> (objectID: String, tenantID: String)? {
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

/// Where an ``Account`` was assembled: by which application instance (a number unique in the
/// process), from its cache at which revision.
package struct AccountOrigin: Sendable, Equatable {
    /// The number of the application instance that assembled the account.
    package let application: UInt64
    /// The revision of that instance's cache the account was assembled from.
    package let revision: UInt64

    /// The origin of an account assembled by application instance `application` at cache revision `revision`.
    package init(application: UInt64, revision: UInt64) {
        self.application = application
        self.revision = revision
    }
}

/// The account as seen by one tenant (MSAL for iOS/macOS `MSALTenantProfile`).
public struct TenantProfile: Sendable, Hashable, CustomReflectable {
    /// The fields, in one shared object (copying a profile copies one reference).
    private final class Storage: Sendable {
        let identifier: String
        let tenantID: String
        let environment: String
        let isHomeTenant: Bool
        private let decodedClaims: Mutex<Claims>

        /// The claims, or the ID token they are decoded from on first use.
        enum Claims {
            case decoded(IDTokenClaims?)
            case pending(idToken: String, decode: @Sendable (String) -> IDTokenClaims?)
        }

        init(identifier: String, tenantID: String, environment: String, isHomeTenant: Bool, claims: Claims) {
            self.identifier = identifier
            self.tenantID = tenantID
            self.environment = environment
            self.isHomeTenant = isHomeTenant
            self.decodedClaims = Mutex(claims)
        }

        /// The claims, decoded now if they were not yet (under the lock: a profile decodes its ID
        /// token once, whichever thread asks first).
        var claims: IDTokenClaims? {
            decodedClaims.withLock { state in
                switch state {
                case .decoded(let claims):
                    return claims
                case .pending(let idToken, let decode):
                    let claims = decode(idToken)
                    state = .decoded(claims)
                    return claims
                }
            }
        }
    }

    private let storage: Storage

    /// The user's object ID in this tenant (the cache's `local_account_id`); for OpenID Connect
    /// providers, the `sub`.
    public var identifier: String { storage.identifier }
    /// The tenant ID (the cache's `realm`).
    public var tenantID: String { storage.tenantID }
    /// The environment (host) of the tenant.
    public var environment: String { storage.environment }
    /// Whether this is the user's home tenant.
    public var isHomeTenant: Bool { storage.isHomeTenant }
    /// The claims of the latest ID token for this tenant, if one is cached and decodes. A profile
    /// assembled from the cache decodes its ID token when this is first read, not before (an
    /// account of many tenants is assembled without decoding the ID tokens nobody reads).
    public var claims: IDTokenClaims? { storage.claims }

    /// Creates a tenant profile.
    public init(identifier: String, tenantID: String, environment: String, isHomeTenant: Bool, claims: IDTokenClaims?) {
        storage = Storage(
            identifier: identifier, tenantID: tenantID, environment: environment, isHomeTenant: isHomeTenant, claims: .decoded(claims))
    }

    /// Creates a tenant profile whose ``claims`` are `decode(idToken)`, computed when first read
    /// (once per profile; `decode` returns `nil` for a token that does not decode).
    package init(
        identifier: String, tenantID: String, environment: String, isHomeTenant: Bool, idToken: String,
        decode: @escaping @Sendable (String) -> IDTokenClaims?
    ) {
        storage = Storage(
            identifier: identifier, tenantID: tenantID, environment: environment, isHomeTenant: isHomeTenant,
            claims: .pending(idToken: idToken, decode: decode))
    }

    /// Whether every field is equal (the tenant ID and environment as written).
    public static func == (lhs: TenantProfile, rhs: TenantProfile) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.identifier == rhs.identifier && lhs.tenantID == rhs.tenantID && lhs.environment == rhs.environment
                && lhs.isHomeTenant == rhs.isHomeTenant && lhs.claims == rhs.claims)
    }

    /// Hashes every field.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(identifier)
        hasher.combine(tenantID)
        hasher.combine(environment)
        hasher.combine(isHomeTenant)
        hasher.combine(claims)
    }

    /// The fields, as a struct of stored properties would show them (`print`, `dump`, debuggers).
    public var customMirror: Mirror {
        Mirror(self, children: [
            "identifier": identifier, "tenantID": tenantID, "environment": environment, "isHomeTenant": isHomeTenant,
            "claims": claims as Any,
        ], displayStyle: .struct)
    }
}
