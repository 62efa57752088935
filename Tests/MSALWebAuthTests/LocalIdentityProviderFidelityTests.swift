import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import MSALCore
import MSALTestSupport

/// Entra behaviours beyond the basic grants, over real HTTP: family of client IDs, `refresh_in`
/// and `ext_expires_in`, declined scopes, guests, the suberror table, the request log, reset,
/// persistence.
@Suite("LocalIdentityProvider: Entra fidelity")
struct LocalIdentityProviderFidelityTests {
    static let teams = "1fec8e78-bce4-4aaf-ab1b-5451cc387264"
    static let office = "d3590ed6-52b3-4102-aeff-aad2292ab01c"
    static let outsider = "0b5c4d2a-1e3f-4a6b-8c7d-9e0f1a2b3c4d"
    static let scope = "user.read openid profile offline_access"

    private func started(clock: any WallClock = SystemWallClock()) throws -> (LocalIdentityProvider, ProviderClient) {
        let provider = LocalIdentityProvider(clock: clock)
        provider.deviceCodeInterval = 0
        try provider.start()
        return (provider, ProviderClient(provider: provider))
    }

    /// The device-code flow for any client, approved as `username`.
    private func signIn(_ client: ProviderClient, clientID: String = LocalIdentityProvider.demoClientID, tenant: String = "common",
                        username: String = LocalIdentityProvider.demoUser.username, scope: String = scope) async throws -> ProviderClient.Reply {
        let code = try await client.deviceCode(tenant: tenant, clientID: clientID, scope: scope)
        try client.provider.approveDeviceCode(userCode: try #require(code["user_code"]), as: username)
        return try await client.pollToken(try #require(code["device_code"]), tenant: tenant, clientID: clientID)
    }

    // MARK: Family of client IDs

    @Test func familyRefreshTokensCarryFociAndWorkForEveryFamilyClient() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        provider.addFamilyClient(Self.teams)
        provider.addFamilyClient(Self.office.uppercased())
        let first = try await signIn(client, clientID: Self.teams)
        #expect(first.status == 200)
        #expect(first["foci"] == "1")
        let familyRT = try #require(first["refresh_token"])

        let office = try await client.refresh(familyRT, clientID: Self.office)
        #expect(office.status == 200)
        #expect(office["foci"] == "1")
        #expect(try IDTokenClaims(jwt: try #require(office["id_token"])).audiences == [Self.office])
        // The token Office got is a family token too: Teams can redeem it back.
        #expect(try await client.refresh(try #require(office["refresh_token"]), clientID: Self.teams).status == 200)

        let plain = try await signIn(client)
        #expect(plain.status == 200)
        #expect(plain["foci"] == nil)
    }

    @Test func familyRefreshTokenFromAClientOutsideTheFamilyIsClientMismatch() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        provider.addFamilyClient(Self.teams)
        provider.addFamilyClient(Self.outsider, familyID: "2")
        let tokens = try await signIn(client, clientID: Self.teams)
        for clientID in [Self.outsider, LocalIdentityProvider.demoClientID] {
            let reply = try await client.refresh(try #require(tokens["refresh_token"]), clientID: clientID)
            expectEntraError(reply, "invalid_grant", codes: [70000])
            #expect(reply["suberror"] == "client_mismatch")
        }
    }

    // MARK: refresh_in, ext_expires_in

    @Test func refreshInAndExtendedExpiresIn() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let plain = try await signIn(client)
        #expect(plain.json["refresh_in"] == nil)
        #expect(plain.json["ext_expires_in"] == plain.json["expires_in"])

        provider.accessTokenLifetime = 86_400
        provider.refreshIn = 43_200
        provider.extendedExpiresIn = 172_800
        let long = try await client.refresh(try #require(plain["refresh_token"]))
        #expect(long.json["expires_in"] == .number(86_400))
        #expect(long.json["refresh_in"] == .number(43_200))
        #expect(long.json["ext_expires_in"] == .number(172_800))
    }

    // MARK: Declined scopes

    @Test func declinedScopesAreLeftOutOfScope() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        provider.declineScopes(["Mail.Send"])
        #expect(provider.declinedScopes == ["mail.send"])
        let tokens = try await signIn(client, scope: "user.read mail.send openid profile offline_access")
        #expect(tokens.status == 200)
        #expect(tokens["scope"] == "user.read openid profile offline_access")
        let refreshed = try await client.refresh(try #require(tokens["refresh_token"]), scope: "user.read mail.send offline_access")
        #expect(refreshed["scope"] == "user.read offline_access")

        provider.declineScopes([])
        provider.declineScopesInNextTokenResponses(["user.read"], count: 1)
        let pending = try await client.deviceCode()
        // An error response (authorization_pending) does not use up the queued decline.
        #expect(try await client.pollToken(try #require(pending["device_code"])).status == 400)
        try provider.approveDeviceCode(userCode: try #require(pending["user_code"]), as: LocalIdentityProvider.demoUser.username)
        let once = try await client.pollToken(try #require(pending["device_code"]))
        #expect(once["scope"] == "openid profile offline_access")
        let after = try await client.refresh(try #require(once["refresh_token"]))
        #expect(after["scope"] == Self.scope)
    }

    // MARK: Guests

    @Test func invitedGuestGetsTheResourceTenantAndItsOwnObjectID() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let resourceTenant = "7d3c1b2a-0f9e-4d8c-b7a6-5e4d3c2b1a09"
        let guestOID = "11111111-2222-4333-8444-555555555555"
        provider.addTenant(resourceTenant, domain: "woodgrove.example")
        #expect(try provider.addGuest(username: "ALICE@contoso.example", tenantID: resourceTenant, objectID: guestOID) == guestOID)
        provider.guestsMustBeInvited = true

        let guest = try await signIn(client, tenant: "woodgrove.example")
        #expect(guest.status == 200)
        let claims = try IDTokenClaims(jwt: try #require(guest["id_token"]))
        #expect(claims.tenantID == resourceTenant)
        #expect(claims.objectID == guestOID)
        let home = try ClientInfo(encoded: try #require(guest["client_info"]))
        #expect(home.uniqueID == LocalIdentityProvider.demoUser.objectID)
        #expect(home.uniqueTenantID == LocalIdentityProvider.demoTenantID)

        // Home tenant: the home oid again, from the same refresh token.
        let back = try await client.refresh(try #require(guest["refresh_token"]), tenant: LocalIdentityProvider.demoTenantID)
        #expect(try IDTokenClaims(jwt: try #require(back["id_token"])).objectID == LocalIdentityProvider.demoUser.objectID)

        // A tenant the user was not invited to: AADSTS50020.
        provider.addTenant("00000000-1111-4222-8333-444444444444")
        let refused = try await client.refresh(try #require(guest["refresh_token"]), tenant: "00000000-1111-4222-8333-444444444444")
        expectEntraError(refused, "invalid_grant", codes: [50020])
    }

    @Test func addGuestNeedsAKnownUser() {
        let provider = LocalIdentityProvider()
        #expect(throws: MSALError.self) { try provider.addGuest(username: "nobody@example.com", tenantID: "t") }
    }

    // MARK: Suberrors

    @Test(arguments: LocalIdentityProvider.SubError.allCases)
    func everySuberrorIsInjectable(_ subError: LocalIdentityProvider.SubError) async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        let tokens = try await signIn(client)
        provider.failNextTokenRequests(with: subError.failure)
        let reply = try await client.refresh(try #require(tokens["refresh_token"]))
        expectEntraError(reply, subError.error, codes: [subError.code])
        #expect(reply["suberror"] == subError.rawValue)
        #expect(reply["error_description"]?.contains(subError.message) == true)
        #expect(try await client.refresh(try #require(tokens["refresh_token"])).status == 200)
    }

    @Test func protectionPolicyRequiredIsUnauthorizedClient53005() {
        let subError = LocalIdentityProvider.SubError.protectionPolicyRequired
        #expect(subError.failure == .oauthError(error: "unauthorized_client", subError: "protection_policy_required", errorCodes: [53005], status: 400))
    }

    // MARK: Registered clients

    @Test func unregisteredClientIsAADSTS700016OnceClientsAreRegistered() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        #expect(try await client.deviceCode(clientID: Self.outsider).status == 200)
        provider.registerClient(LocalIdentityProvider.demoClientID.uppercased())
        #expect(provider.registeredClientIDs == [LocalIdentityProvider.demoClientID.lowercased()])
        expectEntraError(try await client.deviceCode(clientID: Self.outsider), "unauthorized_client", codes: [700016])
        #expect(try await signIn(client).status == 200)
    }

    // MARK: The request log

    @Test func oneLogForEveryEndpointInOrder() async throws {
        let clock = ManualWallClock()
        let (provider, client) = try started(clock: clock)
        defer { provider.stop() }
        _ = try await client.get("/common/v2.0/.well-known/openid-configuration")
        _ = try await client.get("/common/discovery/instance?api-version=1.1")
        _ = try await client.get("/common/discovery/v2.0/keys")
        clock.advance(by: 1)
        let tokens = try await signIn(client)
        _ = try await client.refresh(try #require(tokens["refresh_token"]))
        _ = try await client.get("/nowhere")

        let log = provider.requests
        #expect(log.map(\.endpoint) == [.openIDConfiguration, .instanceDiscovery, .keys, .deviceCode, .token, .token, .other])
        #expect(log.map(\.grantType) == [nil, nil, nil, nil, "urn:ietf:params:oauth:grant-type:device_code", "refresh_token", nil])
        #expect(log[1].formParameters["api-version"] == "1.1")
        #expect(log[0].receivedAt == clock.now().addingTimeInterval(-1))
        #expect(log[3].receivedAt == clock.now())
        #expect(provider.requestCount(path: "/common/oauth2/v2.0/token") == 2)
        #expect(provider.requestCount(endpoint: .deviceCode) == 1)
        #expect(provider.tokenRequests.count == 2)

        let redacted = log[5].redacted()
        #expect(redacted.formParameters["refresh_token"] == "<redacted>")
        #expect(redacted.formParameters["client_id"] == LocalIdentityProvider.demoClientID)
        #expect(log[4].redacted().formParameters["device_code"] == "<redacted>")
    }

    @Test func resetForgetsTokensAndTheLogButKeepsUsersAndSettings() async throws {
        let (provider, client) = try started()
        defer { provider.stop() }
        provider.refreshIn = 60
        let tokens = try await signIn(client)
        provider.failNextTokenRequests(with: .serverError(status: 500))
        provider.reset()
        #expect(provider.requests.isEmpty)
        expectEntraError(try await client.refresh(try #require(tokens["refresh_token"])), "invalid_grant", codes: [70000])
        let again = try await signIn(client)
        #expect(again.status == 200)
        #expect(again.json["refresh_in"] == .number(60))
    }

    // MARK: Persistence

    @Test func persistentStateCarriesUsersGuestsAndRefreshTokensToAnotherProvider() async throws {
        let (first, firstClient) = try started()
        let bob = LocalIdentityProvider.User(
            username: "bob@fabrikam.example", objectID: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
            tenantID: "bbbbbbbb-cccc-4ddd-8eee-ffffffffffff", name: "Bob")
        first.addUser(bob)
        first.addFamilyClient(Self.teams)
        let changes = Mutex(0)
        first.onStateChange { changes.withLock { $0 += 1 } }
        let tokens = try await signIn(firstClient, clientID: Self.teams, username: bob.username)
        #expect(changes.withLock { $0 } >= 1)
        let saved = first.persistentState()
        first.stop()

        let second = LocalIdentityProvider(users: [])
        #expect(second.users.isEmpty)
        try second.restorePersistentState(saved)
        second.addFamilyClient(Self.office)
        try second.start()
        defer { second.stop() }
        #expect(second.users.map(\.username) == [LocalIdentityProvider.demoUser.username, bob.username])
        let reply = try await ProviderClient(provider: second).refresh(try #require(tokens["refresh_token"]), clientID: Self.office)
        #expect(reply.status == 200)
        #expect(try IDTokenClaims(jwt: try #require(reply["id_token"])).preferredUsername == bob.username)
        #expect(throws: MSALError.self) { try second.restorePersistentState(Data("{\"version\":7}".utf8)) }
    }

    @Test func providerWithoutUsersHasNoDefaultSignIn() {
        let provider = LocalIdentityProvider(users: [])
        #expect(provider.defaultUsername == nil)
        #expect(LocalIdentityProvider().defaultUsername == LocalIdentityProvider.demoUser.username)
    }
}

import Synchronization
