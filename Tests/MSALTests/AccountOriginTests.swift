import Foundation
@testable import MSAL
import MSALCache
import MSALCacheSQLite
import MSALCore
import MSALTestSupport
import Testing

@Suite("An account is used as given only by the instance that assembled it, at the revision it was assembled at")
struct AccountOriginTests {
    static let scopes = ["api://demo/Files.Read"]

    /// Changes the store at `path` the way another process would (app metadata of another client),
    /// so the next lookup of a cache over it reloads and moves to the next revision.
    static func touch(_ path: String, _ count: inout Int) throws {
        count += 1
        try SQLiteTokenCacheStore(path: path).apply(TokenCacheChange(upserts: [
            .appMetadata(AppMetadataEntry(clientID: "touch-\(count)", environment: "elsewhere.example")),
        ]))
    }

    @Test("Another instance whose cache is at the same revision number still answers with its own account")
    func sameRevisionNumberInAnotherInstance() async throws {
        let first = try LocalFixture()
        defer { first.stop() }
        let guestTenant = "99999999-0000-4000-8000-000000000097"
        _ = try first.provider.addGuest(username: LocalIdentityProvider.demoUser.username, tenantID: guestTenant)
        let application = try first.application()
        let signIn = try await first.signIn(application)
        let atGuest = try Authority(first.provider.authority(tenant: guestTenant), type: .aad)
        _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, authority: atGuest))

        let other = try LocalFixture()
        defer { other.stop() }
        let second = try other.application()
        _ = try await other.signIn(second)

        // Bring the two caches to the same revision number, the first one's account assembled at it.
        var current = try #require(try application.allAccounts().first)
        var touches = 0
        while true {
            let origin = try #require(current.origin)
            let secondRevision = try second.cache.revision()
            if secondRevision == origin.revision { break }
            if secondRevision < origin.revision {
                try Self.touch(other.cachePath, &touches)
            } else {
                try Self.touch(first.cachePath, &touches)
                current = try #require(try application.allAccounts().first)
            }
            try #require(touches < 100)
        }
        #expect(current.tenantProfiles.count == 2)
        #expect(current.origin?.application == application.instanceNumber && application.instanceNumber != second.instanceNumber)

        let fromSecond = try await second.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: current))
        #expect(fromSecond.tokenSource == .cache)
        #expect(fromSecond.account.tenantProfiles.map(\.tenantID) == [LocalIdentityProvider.demoUser.tenantID])
        // And the first instance, at that revision, answers with the account as given.
        let fromFirst = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: current))
        #expect(fromFirst.account.tenantProfiles.count == 2)
        #expect(fromFirst.account.origin == current.origin)
    }

    static func jwt(_ payload: String) -> String {
        Base64URL.encode(Data(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Data(payload.utf8)) + ".sig"
    }

    @Test("A token found under another alias of the cloud is answered with that alias's account and ID token, not the caller's", arguments: [true, false])
    func tokenUnderAnotherAlias(callerHasHomeProfile: Bool) async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("cache.sqlite")
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let clientID = "11111111-2222-3333-4444-555555555555"
        let utid = "aaaaaaaa-0000-4000-8000-000000000001", guest = "bbbbbbbb-0000-4000-8000-000000000002"
        let home = "uid.\(utid)"
        let a = "login.microsoftonline.com", b = "login.windows.net"
        let idA = Self.jwt(#"{"tid":"\#(utid)","oid":"uid","name":"Name in A"}"#)
        let idBHome = Self.jwt(#"{"tid":"\#(utid)","oid":"uid","name":"Old name in B"}"#)
        let idBGuest = Self.jwt(#"{"tid":"\#(guest)","oid":"uid-g","name":"Guest in B"}"#)
        // The user under two aliases: A holds the access token; B (the caller's account) holds an
        // older ID token for the home tenant (or none) and a guest profile, and no access token.
        var upserts: [CacheEntry] = [
            .account(AccountEntry(homeAccountID: home, environment: a, realm: utid, localAccountID: "uid", username: "user@contoso.example")),
            .idToken(IDTokenEntry(homeAccountID: home, environment: a, clientID: clientID, realm: utid, secret: idA)),
            .refreshToken(RefreshTokenEntry(homeAccountID: home, environment: a, clientID: clientID, secret: "rt-a")),
            .accessToken(AccessTokenEntry(
                homeAccountID: home, environment: a, clientID: clientID, realm: utid, target: "api://demo/Files.Read",
                secret: "at-a", cachedAt: now, expiresOn: now.addingTimeInterval(3600))),
            .account(AccountEntry(homeAccountID: home, environment: b, realm: guest, localAccountID: "uid-g", username: "user@contoso.example")),
            .idToken(IDTokenEntry(homeAccountID: home, environment: b, clientID: clientID, realm: guest, secret: idBGuest)),
            .refreshToken(RefreshTokenEntry(homeAccountID: home, environment: b, clientID: clientID, secret: "rt-b")),
        ]
        if callerHasHomeProfile {
            upserts += [
                .account(AccountEntry(homeAccountID: home, environment: b, realm: utid, localAccountID: "uid", username: "user@contoso.example")),
                .idToken(IDTokenEntry(homeAccountID: home, environment: b, clientID: clientID, realm: utid, secret: idBHome)),
            ]
        }
        try SQLiteTokenCacheStore(path: path).apply(TokenCacheChange(upserts: upserts))
        var configuration = PublicClientApplicationConfiguration(
            clientID: clientID, authority: try Authority("https://\(a)/\(utid)", type: .aad), cacheStore: try SQLiteTokenCacheStore(path: path))
        configuration.clock = ManualWallClock(now)
        let application = try PublicClientApplication(configuration: configuration)
        let callerAccount = try #require(try application.allAccounts().first { $0.environment == b })
        let result = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: callerAccount))
        #expect(result.tokenSource == .cache && result.accessToken == "at-a")
        #expect(result.account.environment == a)
        #expect(result.account.tenantProfiles.map(\.tenantID) == [utid])
        #expect(result.idToken == idA)
        #expect(result.idTokenClaims?.name == "Name in A")
    }
}
