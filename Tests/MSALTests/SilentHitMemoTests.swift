import Foundation
@testable import MSAL
import MSALCache
import MSALCore
import MSALTestSupport
import Testing

/// A request that repeats is answered from the answers kept per cache revision; these tests check
/// that such an answer is never served once it would differ from what the ordinary path answers.
@Suite("Silent hits kept for repeated requests")
struct SilentHitMemoTests {
    static let scopes = ["api://demo/Files.Read"]

    /// Signs in, then asks the same question three times, so the answer is kept (on the second)
    /// and served (on the third).
    private func warmedUp(_ fixture: LocalFixture) async throws -> (PublicClientApplication, AuthenticationResult) {
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        for _ in 0..<3 {
            let hit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
            #expect(hit.tokenSource == .cache && hit.accessToken == signIn.accessToken)
        }
        return (application, signIn)
    }

    @Test("A kept answer is not served once its token is within the expiration buffer: the call refreshes")
    func expiry() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let (application, signIn) = try await warmedUp(fixture)
        fixture.clock.set(signIn.expiresOn.addingTimeInterval(-application.configuration.tokenExpirationBuffer + 1))
        let refreshed = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
        #expect(refreshed.tokenSource == .identityProvider)
        #expect(refreshed.accessToken != signIn.accessToken)
        let again = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
        #expect(again.tokenSource == .cache && again.accessToken == refreshed.accessToken)
    }

    @Test("After another instance (another process) refreshes the token, a repeated request returns the new token")
    func otherInstanceRefreshes() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let (application, signIn) = try await warmedUp(fixture)
        let other = try fixture.application()
        let forced = try await other.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, forceRefresh: true))
        #expect(forced.tokenSource == .identityProvider && forced.accessToken != signIn.accessToken)
        let hit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
        #expect(hit.tokenSource == .cache)
        #expect(hit.accessToken == forced.accessToken)
    }

    @Test("After the account is removed (here or in another instance), a repeated request needs interaction")
    func removal() async throws {
        for removeHere in [true, false] {
            let fixture = try LocalFixture()
            defer { fixture.stop() }
            let (application, signIn) = try await warmedUp(fixture)
            try (removeHere ? application : fixture.application()).remove(account: signIn.account)
            await #expect(throws: MSALError.self) {
                _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
            }
            do {
                _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
            } catch {
                #expect(error.code == .interactionRequired)
            }
        }
    }

    @Test("The instance that wrote a token and another instance report the same expiry, also with a clock between seconds")
    func sameExpiryEverywhere() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        fixture.clock.set(Date(timeIntervalSince1970: 1_800_000_000.75))
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application)
        #expect(signIn.expiresOn.timeIntervalSince1970 == signIn.expiresOn.timeIntervalSince1970.rounded(.down))
        let here = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
        let other = try await fixture.application().acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account))
        #expect(here.tokenSource == .cache && other.tokenSource == .cache)
        #expect(here.expiresOn == signIn.expiresOn)
        #expect(other.expiresOn == signIn.expiresOn)
    }

    @Test("A forced refresh or a claims request is never answered from the kept answers")
    func forceAndClaims() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let (application, signIn) = try await warmedUp(fixture)
        let forced = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: Self.scopes, account: signIn.account, forceRefresh: true))
        #expect(forced.tokenSource == .identityProvider)
        let claims = try await application.acquireTokenSilent(with: SilentTokenParameters(
            scopes: Self.scopes, account: signIn.account, claims: #"{"access_token":{"acrs":{"essential":true,"value":"c1"}}}"#))
        #expect(claims.tokenSource == .identityProvider)
        #expect(claims.accessToken != forced.accessToken)
    }

    @Test("Requests that differ in scopes, their order or case, or authority are kept apart and each answered right")
    func keysKeptApart() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application, scopes: ["api://demo/Files.Read", "api://demo/Files.Write"])
        let tenant = try #require(signIn.account.homeAccountID?.tenantID)
        let atTenant = try Authority(fixture.provider.authority(tenant: tenant), type: .aad)
        let requests: [([String], Authority?)] = [
            (["api://demo/Files.Read"], nil), (["api://demo/Files.Write"], nil),
            (["api://demo/Files.Read", "api://demo/Files.Write"], nil), (["API://demo/Files.Write", "api://demo/Files.Read"], nil),
            (["api://demo/Files.Read"], atTenant),
        ]
        for _ in 0..<3 {
            for (scopes, authority) in requests {
                let hit = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: signIn.account, authority: authority))
                #expect(hit.tokenSource == .cache && hit.accessToken == signIn.accessToken)
                #expect(hit.tenantID == tenant)
                #expect(hit.authority.tenant?.segment == tenant)
            }
        }
        // A scope the token does not hold is never served from another request's answer.
        let other = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: ["api://demo/Mail.Read"], account: signIn.account))
        #expect(other.tokenSource == .identityProvider)
        #expect(other.scopes.map { $0.lowercased() }.contains("api://demo/mail.read"))
    }
}

/// The table on its own: keeping on the second sighting, stale revisions, and the bypass.
@Suite("Silent hit table")
struct SilentHitTableTests {
    static let authority = try! Authority("https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47")

    static func probe(_ scope: String, account: String = "uid.utid") -> SilentHitMemo.Probe {
        SilentHitMemo.Probe(SilentHitMemo.Key(scopes: [scope], accountIdentifier: account, authority: authority))
    }

    static func hit(_ token: String) -> SilentHitMemo.Hit {
        SilentHitMemo.Hit(
            result: AuthenticationResult(
                accessToken: token, tokenType: "Bearer", expiresOn: Date(timeIntervalSince1970: 2_000_000_000), scopes: ["s"],
                account: Account(identifier: "uid.utid", username: nil, environment: "login.microsoftonline.com", tenantProfiles: []),
                tenantID: "utid", idToken: nil, idTokenClaims: nil, correlationID: "c", tokenSource: .cache, authority: authority),
            expiresOn: Date(timeIntervalSince1970: 2_000_000_000), refreshOn: nil)
    }

    @Test("An answer is kept the second time its request comes, found only by an equal request, and replaced by a newer revision only")
    func keeping() {
        let memo = SilentHitMemo()
        let a = Self.probe("a")
        memo.keep(Self.hit("first"), for: a, revision: 1)
        #expect(memo.hit(for: a) == nil, "kept on the first sighting")
        memo.keep(Self.hit("first"), for: a, revision: 1)
        #expect(memo.hit(for: a)?.hit.result.accessToken == "first")
        #expect(memo.hit(for: a)?.revision == 1)
        #expect(memo.hit(for: Self.probe("a", account: "other.utid")) == nil)
        #expect(memo.hit(for: Self.probe("A")) == nil)
        // Its own stale answer is replaced at once; an older revision never replaces a newer one.
        memo.keep(Self.hit("second"), for: a, revision: 2)
        #expect(memo.hit(for: a)?.hit.result.accessToken == "second")
        memo.keep(Self.hit("old"), for: a, revision: 1)
        #expect(memo.hit(for: a)?.hit.result.accessToken == "second")
        // Dropped (an account was removed): nothing is found, and keeping starts over.
        memo.removeAll()
        #expect(memo.hit(for: a) == nil)
        memo.keep(Self.hit("third"), for: a, revision: 3)
        #expect(memo.hit(for: a) == nil)
        memo.keep(Self.hit("third"), for: a, revision: 3)
        #expect(memo.hit(for: a)?.hit.result.accessToken == "third")
    }

    @Test("After a window of lookups that find nothing, the table is bypassed for a while, then used again")
    func bypass() {
        let memo = SilentHitMemo()
        #expect(memo.isInUse())
        for index in 0..<SilentHitMemo.evaluationWindow {
            _ = memo.hit(for: Self.probe("scope-\(index)"))
        }
        var bypassed = 0
        while !memo.isInUse() { bypassed += 1 }
        #expect(bypassed == SilentHitMemo.bypassLength)
        #expect(memo.isInUse())
    }

    @Test("Each window in a row that finds too few doubles the bypass, up to its longest; a useful window starts over")
    func bypassDoubles() {
        let memo = SilentHitMemo()
        func failWindow() {
            for index in 0..<SilentHitMemo.evaluationWindow { _ = memo.hit(for: Self.probe("scope-\(index)")) }
        }
        func bypassCount() -> Int {
            var bypassed = 0
            while !memo.isInUse() { bypassed += 1 }
            return bypassed
        }
        var lengths: [Int] = []
        for _ in 0..<8 {
            failWindow()
            lengths.append(bypassCount())
        }
        let doubling = (0..<8).map { min(SilentHitMemo.bypassLength << $0, SilentHitMemo.longestBypass) }
        #expect(lengths == doubling)
        #expect(lengths.last == SilentHitMemo.longestBypass)
        // A window where most lookups find their answer resets the count.
        let a = Self.probe("a")
        memo.keep(Self.hit("t"), for: a, revision: 1)
        memo.keep(Self.hit("t"), for: a, revision: 1)
        for _ in 0..<SilentHitMemo.evaluationWindow { _ = memo.hit(for: a) }
        #expect(memo.isInUse())
        failWindow()
        #expect(bypassCount() == SilentHitMemo.bypassLength)
    }

    @Test("The first window counts requests that came the second time (their answers kept); a later window counts only answers found")
    func warmingWindow() {
        let memo = SilentHitMemo()
        let half = SilentHitMemo.evaluationWindow / 2
        // Each request twice, nothing found yet: the first window keeps the table in use.
        for index in 0..<SilentHitMemo.evaluationWindow {
            let probe = Self.probe("warm-\(index % half)")
            if memo.hit(for: probe) == nil { memo.keep(Self.hit("t"), for: probe, revision: 1) }
        }
        _ = memo.hit(for: Self.probe("closes-the-window"))
        #expect(memo.isInUse())
        // The same shape with new requests in a later window: kept answers no longer count.
        for index in 1..<SilentHitMemo.evaluationWindow {
            let probe = Self.probe("later-\(index % half)")
            if memo.hit(for: probe) == nil { memo.keep(Self.hit("t"), for: probe, revision: 1) }
        }
        _ = memo.hit(for: Self.probe("closes-the-second-window"))
        #expect(!memo.isInUse())
    }

    /// Runs `requests` requests over `keys` keys in rotation, as the facade does (look up, offer on a
    /// miss); returns how many were served and how many bypassed the table.
    static func rotation(_ memo: SilentHitMemo, keys: Int, requests: Int) -> (served: Int, bypassed: Int) {
        var served = 0, bypassed = 0
        for index in 0..<requests {
            guard memo.isInUse() else {
                bypassed += 1
                continue
            }
            let probe = Self.probe("k-\(index % keys)")
            if memo.hit(for: probe) != nil { served += 1 } else { memo.keep(Self.hit("t"), for: probe, revision: 1) }
        }
        return (served, bypassed)
    }

    @Test("After removeAll the table starts over as a new one: a repeating stream is served as on a new table", arguments: [1_024, 1_500, 2_048])
    func removeAllStartsOver(keys: Int) {
        let fresh = Self.rotation(SilentHitMemo(), keys: keys, requests: 16_384)
        let used = SilentHitMemo()
        _ = Self.rotation(used, keys: keys, requests: 16_384)
        used.removeAll()
        let afterRemoval = Self.rotation(used, keys: keys, requests: 16_384)
        #expect(fresh.served > 0)
        #expect(afterRemoval.bypassed == fresh.bypassed)
        #expect(afterRemoval.served == fresh.served)
    }

    @Test("A key with its hashes given equals, and hashes as, the key that computes them")
    func givenHashes() {
        let account = Account(identifier: "uid.utid", username: nil, environment: "login.microsoftonline.com", tenantProfiles: [])
        #expect(account.identifierHashValue == account.identifier.hashValue)
        let scopes = ["Mail.Read", "https://res.example/User.Read"]
        let computed = SilentHitMemo.Key(scopes: scopes, accountIdentifier: account.identifier, authority: Self.authority)
        let given = SilentHitMemo.Key(
            scopes: scopes, scopesHash: scopes.hashValue, accountIdentifier: account.identifier,
            accountIdentifierHash: account.identifierHashValue, authority: Self.authority)
        #expect(computed == given && computed.hashValue == given.hashValue)
        #expect(SilentHitMemo.Probe(computed).slotIndex == SilentHitMemo.Probe(given).slotIndex)
        let other = SilentHitMemo.Key(scopes: ["Mail.Read"], accountIdentifier: account.identifier, authority: Self.authority)
        #expect(other != computed)
    }

    @Test("A window where enough lookups find answers keeps the table in use")
    func staysInUse() {
        let memo = SilentHitMemo()
        let a = Self.probe("a")
        memo.keep(Self.hit("t"), for: a, revision: 1)
        memo.keep(Self.hit("t"), for: a, revision: 1)
        for index in 0..<SilentHitMemo.evaluationWindow {
            // More than one lookup in minimumHitShare finds its answer.
            _ = memo.hit(for: index % (SilentHitMemo.minimumHitShare - 1) == 0 ? a : Self.probe("scope-\(index)"))
        }
        #expect(memo.isInUse())
        #expect(memo.isInUse())
    }
}

/// The validated scopes of a request, kept per scope array (``PublicClientApplication/requestScopes(for:)``).
@Suite("Request scopes kept per array")
struct RequestScopesKeptTests {
    @Test("The same array, an equal one, and many arrays sharing slots each get their own validated scopes; invalid arrays are refused every time")
    func keptPerArray() throws {
        let application = try PublicClientApplication(configuration: PublicClientApplicationConfiguration(
            clientID: "c11e0000-0000-4000-8000-000000000001", authority: try Authority("https://login.microsoftonline.com/common"),
            cacheBackend: .inMemory))
        let constant = ["https://res.example/Files.Read", "Mail.Read"]
        let first = try application.requestScopes(for: constant)
        #expect(try application.requestScopes(for: constant).scopes === first.scopes)
        let rebuilt = constant.map { String(decoding: Array($0.utf8), as: UTF8.self) }  // equal, other storage
        #expect(try application.requestScopes(for: rebuilt).scopes === first.scopes)
        // 200 different arrays (more than the recent slots): each answers its own scopes, also the second time.
        let arrays = (0..<200).map { ["https://r\($0).example/User.Read", "S\($0)"] }
        for _ in 0..<2 {
            for array in arrays {
                let request = try application.requestScopes(for: array).scopes
                #expect(request.set == (try ScopeSet.validatedRequest(array)))
                #expect(request.set.scopes == array.sorted { $0.lowercased() < $1.lowercased() })
                #expect(try application.requestScopes(for: array).arrayHash == array.hashValue)
            }
        }
        #expect(try application.requestScopes(for: constant).scopes.set == (try ScopeSet.validatedRequest(constant)))
        for invalid in [["openid"], [""], ["has space"]] {
            for _ in 0..<2 {
                #expect(throws: MSALError.internal(.invalidScope, "")) { try application.requestScopes(for: invalid) }
            }
        }
    }

    @Test("The cloud environments of authorities on alternating hosts each start with their own host")
    func alternatingClouds() throws {
        let application = try PublicClientApplication(configuration: PublicClientApplicationConfiguration(
            clientID: "c11e0000-0000-4000-8000-000000000001", authority: try Authority("https://login.microsoftonline.com/common"),
            cacheBackend: .inMemory))
        let hosts = ["login.microsoftonline.com", "login.windows.net", "login.microsoftonline.us", "LOGIN.windows.net"]
        var firstAnswers: [String: [String]] = [:]
        for round in 0..<3 {
            for host in hosts {
                let authority = try Authority("https://\(host)/aaaaaaaa-0000-4000-8000-00000000aaaa")
                let environments = try #require(application.knownEnvironments(for: authority))
                #expect(environments.first == authority.environment, "\(host)")
                #expect(environments.count > 1)
                if round == 0 { firstAnswers[host] = environments } else { #expect(environments == firstAnswers[host]) }
            }
        }
        #expect(Set(firstAnswers["login.microsoftonline.us"] ?? []).isDisjoint(with: firstAnswers["login.microsoftonline.com"] ?? []))
    }

    static let kelvin = "api://demo/\u{212A}ey.Read"  // KELVIN SIGN: canonically equivalent to "K"
    static let ascii = "api://demo/Key.Read"

    @Test("A scope array only canonically equivalent to a kept valid one (a Kelvin sign for a K) is validated, and refused, on its own")
    func canonicallyEquivalentArray() throws {
        #expect(Self.kelvin == Self.ascii && Array(Self.kelvin.utf8) != Array(Self.ascii.utf8))
        let application = try PublicClientApplication(configuration: PublicClientApplicationConfiguration(
            clientID: "c11e0000-0000-4000-8000-000000000001", authority: try Authority("https://login.microsoftonline.com/common"),
            cacheBackend: .inMemory))
        let valid = [Self.ascii], invalid = [Self.kelvin]
        _ = try application.requestScopes(for: valid)
        for _ in 0..<2 {
            #expect(throws: MSALError.internal(.invalidScope, "")) { try application.requestScopes(for: invalid) }
            #expect(throws: MSALError.internal(.invalidScope, "")) { try application.requestScopes(for: [Self.kelvin, "Mail.Read"]) }
            _ = try application.requestScopes(for: valid)
        }
        // The table of repeated requests keeps them apart too.
        let account = "uid.utid"
        let kept = SilentHitMemo.Key(scopes: valid, accountIdentifier: account, authority: SilentHitTableTests.authority)
        let lookalike = SilentHitMemo.Key(scopes: invalid, accountIdentifier: account, authority: SilentHitTableTests.authority)
        #expect(kept != lookalike)
        let memo = SilentHitMemo()
        memo.keep(SilentHitTableTests.hit("t"), for: SilentHitMemo.Probe(kept), revision: 1)
        memo.keep(SilentHitTableTests.hit("t"), for: SilentHitMemo.Probe(kept), revision: 1)
        #expect(memo.hit(for: SilentHitMemo.Probe(kept)) != nil)
        #expect(memo.hit(for: SilentHitMemo.Probe(lookalike)) == nil)
    }

    @Test("acquireTokenSilent refuses a Kelvin-sign scope after the equal ASCII scope was served, also when refreshing")
    func canonicallyEquivalentSilent() async throws {
        let fixture = try LocalFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let signIn = try await fixture.signIn(application, scopes: [Self.ascii])
        _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: [Self.ascii], account: signIn.account))
        _ = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: [Self.ascii], account: signIn.account))
        for forceRefresh in [false, true] {
            await #expect(throws: MSALError.internal(.invalidScope, "")) {
                try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: [Self.kelvin], account: signIn.account, forceRefresh: forceRefresh))
            }
        }
    }
}
