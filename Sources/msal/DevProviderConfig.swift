import Foundation
import MSALTestSupport

/// The JSON configuration of `msal dev-provider --config FILE`; the schema is in
/// Docs/DevProvider.md. Unknown keys are usage errors, so a typo does not pass silently.
struct DevProviderConfig {
    struct Tenant {
        var tenantID: String
        var domain: String?
    }

    struct Client {
        var clientID: String
        var familyID: String?
        var redirectURIs: [String]
    }

    struct Guest {
        var username: String
        var tenantID: String
    }

    // The defaults are the demo tenant (`contoso.example`, brought by the demo user), the demo
    // user and the demo client.
    var tenants: [Tenant] = []
    var users: [LocalIdentityProvider.User] = [LocalIdentityProvider.demoUser]
    var guests: [Guest] = []
    var clients: [Client] = [Client(clientID: LocalIdentityProvider.demoClientID, familyID: nil, redirectURIs: [])]
    var accessTokenLifetime: TimeInterval?
    var refreshTokenLifetime: TimeInterval?
    var refreshIn: TimeInterval?
    var extendedExpiresIn: TimeInterval?
    var deviceCodeInterval: TimeInterval?
    var deviceCodeLifetime: TimeInterval?
    var declinedScopes: [String] = []
    var guestsMustBeInvited = false

    /// Reads and checks a configuration file.
    static func load(path: String) throws(UsageError) -> DevProviderConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError(message: "--config: cannot read '\(path)'")
        }
        guard let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw UsageError(message: "--config: '\(path)' is not a JSON object")
        }
        return try parse(root)
    }

    static func parse(_ root: [String: Any]) throws(UsageError) -> DevProviderConfig {
        try checkKeys(root, [
            "tenants", "users", "clients", "access_token_lifetime", "refresh_token_lifetime", "refresh_in", "ext_expires_in",
            "device_code_interval", "device_code_lifetime", "declined_scopes", "guests_must_be_invited",
        ], in: "the configuration")
        var config = DevProviderConfig()
        config.tenants = try objects(root["tenants"], "tenants").map { (entry: [String: Any]) throws(UsageError) -> Tenant in
            try checkKeys(entry, ["tenant_id", "domain"], in: "a tenant")
            return Tenant(tenantID: try string(entry, "tenant_id", in: "a tenant"), domain: try optionalString(entry, "domain", in: "a tenant"))
        }
        if root["users"] != nil {
            config.users = []
            guard !(root["users"] as? [Any] ?? [1]).isEmpty else {
                throw UsageError(message: "--config: users is empty; list at least one user (or leave users out for the demo user)")
            }
            for entry in try objects(root["users"], "users") {
                try checkKeys(entry, ["username", "object_id", "tenant_id", "name", "guest_in"], in: "a user")
                let username = try string(entry, "username", in: "a user")
                guard let tenantID = try optionalString(entry, "tenant_id", in: "a user") ?? config.tenants.first?.tenantID else {
                    throw UsageError(message: "--config: user '\(username)' needs a tenant_id (or list a tenant first)")
                }
                if !config.tenants.isEmpty, !config.tenants.contains(where: { $0.tenantID.lowercased() == tenantID.lowercased() }) {
                    throw UsageError(message: "--config: user '\(username)' has tenant_id '\(tenantID)', which is not in tenants")
                }
                if config.users.contains(where: { $0.username.lowercased() == username.lowercased() }) {
                    throw UsageError(message: "--config: the user '\(username)' is listed twice")
                }
                config.users.append(LocalIdentityProvider.User(
                    username: username, objectID: try string(entry, "object_id", in: "user '\(username)'"), tenantID: tenantID,
                    name: try optionalString(entry, "name", in: "a user") ?? username))
                guard entry["guest_in"] == nil || entry["guest_in"] is [String] else {
                    throw UsageError(message: "--config: guest_in of user '\(username)' must be an array of tenant IDs")
                }
                for tenant in entry["guest_in"] as? [String] ?? [] { config.guests.append(Guest(username: username, tenantID: tenant)) }
            }
        }
        if root["clients"] != nil {
            config.clients = try objects(root["clients"], "clients").map { (entry: [String: Any]) throws(UsageError) -> Client in
                try checkKeys(entry, ["client_id", "family_id", "redirect_uris"], in: "a client")
                guard entry["redirect_uris"] == nil || entry["redirect_uris"] is [String] else {
                    throw UsageError(message: "--config: redirect_uris must be an array of strings")
                }
                return Client(
                    clientID: try string(entry, "client_id", in: "a client"), familyID: try optionalString(entry, "family_id", in: "a client"),
                    redirectURIs: entry["redirect_uris"] as? [String] ?? [])
            }
        }
        config.accessTokenLifetime = try seconds(root, "access_token_lifetime")
        config.refreshTokenLifetime = try seconds(root, "refresh_token_lifetime")
        config.refreshIn = try seconds(root, "refresh_in")
        config.extendedExpiresIn = try seconds(root, "ext_expires_in")
        config.deviceCodeInterval = try seconds(root, "device_code_interval", allowZero: true)
        config.deviceCodeLifetime = try seconds(root, "device_code_lifetime")
        if let declined = root["declined_scopes"] {
            guard let scopes = declined as? [String] else { throw UsageError(message: "--config: declined_scopes must be an array of strings") }
            config.declinedScopes = scopes
        }
        if let invited = root["guests_must_be_invited"] {
            guard let flag = invited as? Bool else { throw UsageError(message: "--config: guests_must_be_invited must be true or false") }
            config.guestsMustBeInvited = flag
        }
        return config
    }

    /// A provider with this configuration, not started.
    func makeProvider() throws -> LocalIdentityProvider {
        let provider = LocalIdentityProvider(users: users)
        for tenant in tenants { provider.addTenant(tenant.tenantID, domain: tenant.domain) }
        for guest in guests { try provider.addGuest(username: guest.username, tenantID: guest.tenantID) }
        for client in clients {
            provider.registerClient(client.clientID)
            if let family = client.familyID { provider.addFamilyClient(client.clientID, familyID: family) }
            for uri in client.redirectURIs { provider.registerRedirectURI(uri) }
        }
        if let accessTokenLifetime { provider.accessTokenLifetime = accessTokenLifetime }
        if let refreshTokenLifetime { provider.refreshTokenLifetime = refreshTokenLifetime }
        if let deviceCodeInterval { provider.deviceCodeInterval = deviceCodeInterval }
        if let deviceCodeLifetime { provider.deviceCodeLifetime = deviceCodeLifetime }
        provider.refreshIn = refreshIn
        provider.extendedExpiresIn = extendedExpiresIn
        provider.declineScopes(declinedScopes)
        provider.guestsMustBeInvited = guestsMustBeInvited
        return provider
    }

    // MARK: - Checking JSON

    private static func checkKeys(_ object: [String: Any], _ allowed: Set<String>, in place: String) throws(UsageError) {
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw UsageError(message: "--config: unknown key '\(unknown)' in \(place) (known: \(allowed.sorted().joined(separator: ", ")))")
        }
    }

    private static func objects(_ value: Any?, _ key: String) throws(UsageError) -> [[String: Any]] {
        guard let value else { return [] }
        guard let array = value as? [[String: Any]] else { throw UsageError(message: "--config: \(key) must be an array of objects") }
        return array
    }

    private static func string(_ object: [String: Any], _ key: String, in place: String) throws(UsageError) -> String {
        guard let value = try optionalString(object, key, in: place) else { throw UsageError(message: "--config: \(place) needs '\(key)'") }
        return value
    }

    private static func optionalString(_ object: [String: Any], _ key: String, in place: String) throws(UsageError) -> String? {
        guard let value = object[key] else { return nil }
        guard let text = value as? String, !text.isEmpty else { throw UsageError(message: "--config: '\(key)' in \(place) must be a non-empty string") }
        return text
    }

    private static func seconds(_ object: [String: Any], _ key: String, allowZero: Bool = false) throws(UsageError) -> TimeInterval? {
        guard let value = object[key] else { return nil }
        guard let number = value as? NSNumber, number.doubleValue.isFinite,
              number.doubleValue > 0 || (allowZero && number.doubleValue == 0)
        else {
            throw UsageError(message: "--config: \(key) must be a \(allowZero ? "non-negative" : "positive") number of seconds")
        }
        return number.doubleValue
    }
}
