import Foundation
@testable import MSAL
import MSALCore
import Testing

/// What every application instance in a process shares: decoded `client_info` values and ID tokens,
/// which depend on the encoded text alone.
@Suite("Decoded client_info and ID tokens shared by instances")
struct SharedDecodingTests {
    private func application() throws -> PublicClientApplication {
        try PublicClientApplication(configuration: PublicClientApplicationConfiguration(
            clientID: "4f1c9a3e-shared-decoding", authority: try Authority("https://login.microsoftonline.com/common"),
            cacheBackend: .inMemory))
    }

    @Test("A client_info is decoded once for every instance; one that does not decode is refused each time and not kept")
    func clientInfo() throws {
        let first = try application(), second = try application()
        let unique = UUID().uuidString.lowercased()
        let encoded = ClientInfo(uniqueID: unique, uniqueTenantID: "0c2f8e4a-tenant").encoded
        #expect(PublicClientApplication.sharedClientInfos.value(for: encoded) == nil)
        let decoded = try first.decodedClientInfo(encoded)
        #expect(decoded.homeAccountID == "\(unique).0c2f8e4a-tenant")
        #expect(PublicClientApplication.sharedClientInfos.value(for: encoded) == decoded)
        #expect(try second.decodedClientInfo(encoded) == decoded)

        let broken = "not base64url: \(unique)"
        for _ in 0..<2 {
            #expect { try first.decodedClientInfo(broken) } throws: { error in
                (error as? MSALError)?.internalCode == .invalidResponse
            }
        }
        #expect(PublicClientApplication.sharedClientInfos.value(for: broken) == nil)
    }

    @Test("An ID token decoded by one instance is found by another; one that does not decode is nil and not kept")
    func idTokenClaims() throws {
        let first = try application(), second = try application()
        let subject = UUID().uuidString
        let header = Base64URL.encode(Data(#"{"alg":"none"}"#.utf8))
        let payload = Base64URL.encode(Data(#"{"sub":"\#(subject)","tid":"0c2f8e4a-tenant"}"#.utf8))
        let jwt = "\(header).\(payload).signature"
        #expect(PublicClientApplication.sharedIDTokenClaims.value(for: JWTKey(jwt: jwt)) == nil)
        let claims = try #require(first.decodedClaims(jwt))
        #expect(claims.subject == subject)
        #expect(PublicClientApplication.sharedIDTokenClaims.value(for: JWTKey(jwt: jwt)) == claims)
        #expect(second.decodedClaims(jwt) == claims)

        let broken = "\(header).%%%\(subject).signature"
        #expect(first.decodedClaims(broken) == nil)
        #expect(PublicClientApplication.sharedIDTokenClaims.value(for: JWTKey(jwt: broken)) == nil)
    }
}
