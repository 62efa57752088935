import Foundation
import MSAL
import MSALCache
import MSALCacheSQLite
import MSALCore
import MSALCacheEncryptedFile
import Synchronization
import MSALTestSupport
import Testing

@Suite("Device code sign-in and silent tokens against the local provider")
struct DeviceCodeSignInTests {
    @Test("Sign in, then cache, then forced refresh; accounts; remove")
    func fullCycle() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let user = LocalIdentityProvider.demoUser

        let signIn = try await fixture.signIn(application)
        #expect(signIn.tokenSource == .identityProvider)
        #expect(signIn.account.identifier == "\(user.objectID).\(user.tenantID)")
        #expect(signIn.account.username == user.username)
        #expect(signIn.tenantID == user.tenantID)
        #expect(signIn.idTokenClaims?.objectID == user.objectID)
        #expect(signIn.scopes == ["api://demo/Files.Read"])
        #expect(signIn.expiresOn == fixture.clock.now().addingTimeInterval(3600))
        #expect(signIn.account.tenantProfiles.map(\.tenantID) == [user.tenantID])
        #expect(signIn.account.tenantProfiles.first?.isHomeTenant == true)

        let silent = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["API://demo/files.read"], account: signIn.account))
        #expect(silent.tokenSource == .cache)
        #expect(silent.accessToken == signIn.accessToken)
        #expect(silent.idTokenClaims?.objectID == user.objectID)
        #expect(silent.idToken == signIn.idToken)
        #expect(silent.account.username == user.username)

        func accountSources() throws -> [String?] {
            try SQLiteTokenCacheStore(path: fixture.cachePath).readAll().accounts.values.map(\.accountSource)
        }
        #expect(try accountSources() == ["device_code"])
        let refreshed = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: signIn.account, forceRefresh: true))
        #expect(refreshed.tokenSource == .identityProvider)
        #expect(refreshed.accessToken != signIn.accessToken)
        #expect(try accountSources() == ["device_code"])  // a refresh keeps how the account signed in

        let afterRefresh = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: signIn.account))
        #expect(afterRefresh.tokenSource == .cache)
        #expect(afterRefresh.accessToken == refreshed.accessToken)

        #expect(try application.allAccounts() == [signIn.account])
        #expect(try application.account(forIdentifier: signIn.account.identifier.uppercased()) == signIn.account)
        #expect(try application.account(forUsername: user.username.uppercased()) == signIn.account)
        #expect(try application.account(forIdentifier: "nobody.nowhere") == nil)

        try application.remove(account: signIn.account)
        #expect(try application.allAccounts().isEmpty)
        await #expect(throws: MSALError(.interactionRequired, message: "")) {
            try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: signIn.account))
        }
    }

    @Test("The token cache survives the process: a new application on the same file is served from it")
    func persistence() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let signIn = try await fixture.signIn(try fixture.application())
        let second = try fixture.application()
        let account = try #require(try second.account(forIdentifier: signIn.account.identifier))
        let silent = try await second.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: account))
        #expect(silent.tokenSource == .cache)
        #expect(silent.accessToken == signIn.accessToken)
    }

    @Test("An access token inside the 300 s expiration buffer is refreshed, outside it is served")
    func expirationBuffer() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let parameters = SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: signIn.account)

        fixture.clock.advance(by: 3600 - 301)
        #expect(try await application.acquireTokenSilent(with: parameters).tokenSource == .cache)
        fixture.clock.advance(by: 2)
        let refreshed = try await application.acquireTokenSilent(with: parameters)
        #expect(refreshed.tokenSource == .identityProvider)
        #expect(refreshed.expiresOn == fixture.clock.now().addingTimeInterval(3600))
    }

    @Test("A scope not in the cache is fetched with the refresh token; both tokens stay cached")
    func newScopeUsesRefreshToken() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let other = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://other/Read"], account: signIn.account))
        #expect(other.tokenSource == .identityProvider)
        let first = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: signIn.account))
        #expect(first.tokenSource == .cache)
        #expect(first.accessToken == signIn.accessToken)
    }

    @Test("Concurrent silent refreshes for one account and scopes share one network refresh")
    func oneRefreshInFlight() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        let before = fixture.provider.tokenRequests.count
        let parameters = SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: signIn.account, forceRefresh: true)
        async let a = application.acquireTokenSilent(with: parameters)
        async let b = application.acquireTokenSilent(with: parameters)
        async let c = application.acquireTokenSilent(with: parameters)
        let tokens = try await [a, b, c].map(\.accessToken)
        #expect(Set(tokens).count == 1)
        #expect(fixture.provider.tokenRequests.count == before + 1)
    }

    @Test("1000 concurrent silent calls on an expired token send one refresh, however their lookups and the refresh interleave")
    func oneRefreshForManyCallers() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        for round in 0..<5 {
            fixture.clock.set(try #require(application.cacheStore.readAll().accessTokens.values.map(\.expiresOn).max()).addingTimeInterval(1))
            let before = fixture.provider.tokenRequests.count
            let parameters = SilentTokenParameters(scopes: ["api://demo/Files.Read"], account: signIn.account)
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<1000 { group.addTask { try await application.acquireTokenSilent(with: parameters).accessToken } }
                var tokens = Set<String>()
                for try await token in group { tokens.insert(token) }
                return tokens
            }
            #expect(tokens.count == 1, "round \(round)")
            #expect(fixture.provider.tokenRequests.count == before + 1, "round \(round)")
        }
    }
}

/// A sign-in checks the cache it will write before it asks the user anything.
@Suite("A sign-in with an unreadable cache")
struct UnreadableCacheSignInTests {
    @Test("A JSON file that is not a cache, or an encrypted file under another key, fails before the device code is shown")
    func unreadableCacheFailsFirst() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let notACache = fixture.directory.path("cache.json")
        try Data("this is not a cache".utf8).write(to: URL(fileURLWithPath: notACache))
        let encrypted = fixture.directory.path("cache.bin")
        let writer = try EncryptedFileTokenCacheStore(path: encrypted, keySource: .key(try EncryptedCacheKey.random()))
        try writer.apply(TokenCacheChange(upserts: [.appMetadata(AppMetadataEntry(clientID: "another-app", environment: "login.example"))]))
        let encryptedBytes = try Data(contentsOf: URL(fileURLWithPath: encrypted))

        let stores: [any TokenCacheStore] = [
            try JSONFileTokenCacheStore(path: notACache),
            try EncryptedFileTokenCacheStore(path: encrypted, keySource: .key(try EncryptedCacheKey.random())),
        ]
        for store in stores {
            var configuration = PublicClientApplicationConfiguration(
                clientID: LocalIdentityProvider.demoClientID, authority: fixture.authority, cacheStore: store)
            configuration.clock = fixture.clock
            let application = try PublicClientApplication(configuration: configuration)
            let shown = Mutex(0)
            let requestsBefore = fixture.provider.tokenRequests.count
            await #expect(throws: MSALError.internal(.cacheError, "")) {
                try await application.acquireToken(with: DeviceCodeParameters(scopes: ["api://demo/Files.Read"])) { _ in
                    shown.withLock { $0 += 1 }
                    throw CancellationError()  // had the code been shown, the user would give up
                }
            }
            #expect(shown.withLock { $0 } == 0)  // the user was never asked
            #expect(fixture.provider.tokenRequests.count == requestsBefore)
        }
        // Both files are as they were.
        #expect(try Data(contentsOf: URL(fileURLWithPath: notACache)) == Data("this is not a cache".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: encrypted)) == encryptedBytes)
    }
}
