import Foundation
import MSALCache
import MSALCore

/// The entries the example writes: what a sign-in to Entra ID would leave in the cache, for a made-up
/// user, tenant and app. The secrets are random on each run and start with ``secretMarker``, so a test
/// can check that no output line contains one.
struct SampleEntries {
    /// The access group the example uses; other groups of the same file are never read or written.
    static let accessGroup = "com.example.cache-only"
    /// The made-up application's client ID.
    static let clientID = "0a1b2c3d-0000-4000-8000-00000000c11e"
    /// What every secret the example writes starts with.
    static let secretMarker = "cache-only-secret-"

    let account: AccountEntry
    let accessToken: AccessTokenEntry
    let refreshToken: RefreshTokenEntry

    /// The sample entries, cached at `now` (rounded down to whole seconds, as the cache stores times);
    /// the access token expires an hour later.
    init(now: Date) {
        let objectID = "5e1f0a7c-0000-4000-8000-0000000000a1"
        let tenantID = "7d2c9b4e-0000-4000-8000-00000000071d"
        let homeAccountID = "\(objectID).\(tenantID)"
        let environment = "login.microsoftonline.com"
        let cachedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        account = AccountEntry(
            homeAccountID: homeAccountID, environment: environment, realm: tenantID, localAccountID: objectID,
            username: "ada@contoso.example", authorityType: AccountEntry.entraAuthorityType,
            accountSource: "device_code", name: "Ada Example")
        accessToken = AccessTokenEntry(
            homeAccountID: homeAccountID, environment: environment, clientID: Self.clientID, realm: tenantID,
            target: "User.Read Mail.Read Calendars.Read", secret: Self.secret("access-token"),
            cachedAt: cachedAt, expiresOn: cachedAt.addingTimeInterval(3600))
        refreshToken = RefreshTokenEntry(
            homeAccountID: homeAccountID, environment: environment, clientID: Self.clientID,
            secret: Self.secret("refresh-token"))
    }

    /// A random stand-in for a token: ``secretMarker``, `kind`, a dash and a random UUID.
    private static func secret(_ kind: String) -> String {
        "\(secretMarker)\(kind)-\(UUID().uuidString)"
    }
}
