import Foundation
import MSALCore
import Testing

@Suite("ID token claims never print the token or the claims' values")
struct IDTokenClaimsDescriptionTests {
    @Test("description, debugDescription and dump of claims, and of an account holding them, show claim names only")
    func redacted() throws {
        let header = Base64URL.encode(Data(#"{"alg":"none"}"#.utf8))
        let payload = Base64URL.encode(Data(#"{"sub":"subject-7f3a","name":"Alice Example","tid":"tenant-9c1d"}"#.utf8))
        let jwt = "\(header).\(payload).signature-5e2b"
        let claims = try IDTokenClaims(jwt: jwt)
        let account = Account(
            identifier: "subject-7f3a.tenant-9c1d", username: nil, environment: "login.microsoftonline.com",
            tenantProfiles: [TenantProfile(identifier: "subject-7f3a", tenantID: "tenant-9c1d", environment: "login.microsoftonline.com",
                                           isHomeTenant: true, claims: claims)])
        var dumped = ""
        dump(claims, to: &dumped)
        var dumpedAccount = ""
        dump(account, to: &dumpedAccount)
        for text in [claims.description, claims.debugDescription, String(describing: claims), dumped, dumpedAccount, String(describing: account)] {
            #expect(!text.contains(payload) && !text.contains("signature-5e2b"), "the JWT is shown")
            #expect(!text.contains("Alice Example"), "a claim's value is shown")
        }
        #expect(claims.description == "IDTokenClaims(claims: [name, sub, tid], rawValue: <redacted>)")
    }
}
