import Foundation
@testable import MSAL
import MSALCore
import Testing

/// What every application instance in a process shares: decoded `client_info` values and ID tokens,
/// which depend on the encoded text alone, and which `remove(account:)` drops.
///
/// Other tests remove accounts while these run (in parallel), which empties the shared tables: a
/// check that a value is kept is tried a few times.
@Suite("Decoded client_info and ID tokens shared by instances")
struct SharedDecodingTests {
    private func application() throws -> PublicClientApplication {
        try PublicClientApplication(configuration: PublicClientApplicationConfiguration(
            clientID: "4f1c9a3e-shared-decoding", authority: try Authority("https://login.microsoftonline.com/common"),
            cacheBackend: .inMemory))
    }

    /// Whether `check` holds in one of a few attempts.
    private func holdsOnce(_ check: () throws -> Bool) rethrows -> Bool {
        for _ in 0..<20 where try check() { return true }
        return false
    }

    private func jwt(subject: String) -> String {
        let header = Base64URL.encode(Data(#"{"alg":"none"}"#.utf8))
        let payload = Base64URL.encode(Data(#"{"sub":"\#(subject)","tid":"0c2f8e4a-tenant"}"#.utf8))
        return "\(header).\(payload).signature"
    }

    @Test("A client_info is decoded once for every instance; one that does not decode is refused each time and not kept")
    func clientInfo() throws {
        let first = try application(), second = try application()
        let unique = UUID().uuidString.lowercased()
        let encoded = ClientInfo(uniqueID: unique, uniqueTenantID: "0c2f8e4a-tenant").encoded
        #expect(PublicClientApplication.sharedClientInfos.value(for: encoded) == nil)
        let shared = try holdsOnce {
            let decoded = try first.decodedClientInfo(encoded)
            let again = try second.decodedClientInfo(encoded)
            let kept = PublicClientApplication.sharedClientInfos.value(for: encoded)
            return decoded.homeAccountID == "\(unique).0c2f8e4a-tenant" && kept == decoded && again == decoded
        }
        #expect(shared)

        let broken = "not base64url: \(unique)"
        for _ in 0..<2 {
            #expect { try first.decodedClientInfo(broken) } throws: { error in
                (error as? MSALError)?.internalCode == .invalidResponse
            }
        }
        #expect(PublicClientApplication.sharedClientInfos.value(for: broken) == nil)
    }

    @Test("An ID token decoded once is kept for the whole process; one that does not decode is nil and not kept")
    func idTokenClaims() throws {
        let subject = UUID().uuidString
        let jwt = jwt(subject: subject)
        #expect(PublicClientApplication.sharedIDTokenClaims.value(for: JWTKey(jwt: jwt)) == nil)
        let shared = holdsOnce {
            guard let claims = PublicClientApplication.decodedClaims(jwt) else { return false }
            let kept = PublicClientApplication.sharedIDTokenClaims.value(for: JWTKey(jwt: jwt))
            return claims.subject == subject && kept == claims && PublicClientApplication.decodedClaims(jwt) == claims
        }
        #expect(shared)

        let broken = "\(jwt.prefix(while: { $0 != "." })).%%%\(subject).signature"
        #expect(PublicClientApplication.decodedClaims(broken) == nil)
        #expect(PublicClientApplication.sharedIDTokenClaims.value(for: JWTKey(jwt: broken)) == nil)
    }

    @Test("An assembled profile's claims, read late (after a removal emptied the table), are decoded for it alone and not put back in the shared table")
    func profileClaimsNotKept() throws {
        let subject = UUID().uuidString
        let jwt = jwt(subject: subject)
        let profile = TenantProfile(
            identifier: subject, tenantID: "0c2f8e4a-tenant", environment: "login.microsoftonline.com", isHomeTenant: true,
            idToken: jwt, decode: PublicClientApplication.profileClaims)
        #expect(profile.claims?.subject == subject)
        #expect(PublicClientApplication.sharedIDTokenClaims.value(for: JWTKey(jwt: jwt)) == nil)
    }

    @Test("Removing an account in any instance drops every decoded ID token and client_info the process keeps")
    func removalDropsDecodedValues() throws {
        let first = try application(), second = try application()
        let unique = UUID().uuidString.lowercased()
        let jwt = jwt(subject: unique)
        let encoded = ClientInfo(uniqueID: unique, uniqueTenantID: "0c2f8e4a-tenant").encoded
        _ = PublicClientApplication.decodedClaims(jwt)
        _ = try first.decodedClientInfo(encoded)

        try second.remove(account: Account(
            identifier: "\(unique).0c2f8e4a-tenant", username: nil, environment: "login.microsoftonline.com", tenantProfiles: []))
        #expect(PublicClientApplication.sharedIDTokenClaims.value(for: JWTKey(jwt: jwt)) == nil)
        #expect(PublicClientApplication.sharedClientInfos.value(for: encoded) == nil)
    }
}
