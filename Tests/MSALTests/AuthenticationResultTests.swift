import Foundation
@testable import MSAL
import MSALCache
import MSALCore
import Testing

@Suite("A result's ID token is the one it was given")
struct AuthenticationResultTests {
    static func claims(_ sub: String) throws -> IDTokenClaims {
        let header = Base64URL.encode(Data(#"{"alg":"none"}"#.utf8))
        let payload = Base64URL.encode(Data(#"{"sub":"\#(sub)"}"#.utf8))
        return try IDTokenClaims(jwt: "\(header).\(payload).sig")
    }

    static func result(idToken: String?, claims: IDTokenClaims?) throws -> AuthenticationResult {
        AuthenticationResult(
            accessToken: "at-secret-value", tokenType: "Bearer", expiresOn: Date(timeIntervalSince1970: 2_000_000_000), scopes: ["s"],
            account: Account(identifier: "uid.utid", username: nil, environment: "login.example", tenantProfiles: []),
            tenantID: "utid", idToken: idToken, idTokenClaims: claims, correlationID: "c", tokenSource: .cache,
            authority: try Authority("https://login.microsoftonline.com/utid"))
    }

    @Test("The claims' own token, another token, no token with claims, and neither, each read back as given")
    func idToken() throws {
        let claims = try Self.claims("s1")
        let copy = String(decoding: Array(claims.rawValue.utf8), as: UTF8.self)  // equal, another storage
        #expect(try Self.result(idToken: claims.rawValue, claims: claims).idToken == claims.rawValue)
        #expect(try Self.result(idToken: copy, claims: claims).idToken == claims.rawValue)
        #expect(try Self.result(idToken: "other.jwt.value", claims: claims).idToken == "other.jwt.value")
        #expect(try Self.result(idToken: nil, claims: claims).idToken == nil)
        #expect(try Self.result(idToken: nil, claims: claims).idTokenClaims == claims)
        #expect(try Self.result(idToken: "only.the.token", claims: nil).idToken == "only.the.token")
        #expect(try Self.result(idToken: nil, claims: nil).idToken == nil)
    }

    @Test("dump and print of a result show neither the access token nor the raw ID token")
    func redactedTokens() throws {
        let claims = try Self.claims("s1")
        for idToken in [claims.rawValue, "another.raw.idtoken"] {
            let result = try Self.result(idToken: idToken, claims: claims)
            var dumped = ""
            dump(result, to: &dumped)
            for text in [dumped, String(describing: result), String(reflecting: result)] {
                #expect(!text.contains("at-secret-value") && !text.contains(idToken) && !text.contains(claims.rawValue))
            }
            #expect(dumped.contains("accessToken: \"<redacted>\"") && dumped.contains("- some: \"<redacted>\""))
        }
    }

    @Test("A cached result's scopes are its entry's target split and sorted, and its generated correlation ID reads the same each time until it is set")
    func cachedScopesAndCorrelation() throws {
        let t0 = Date(timeIntervalSince1970: 1_700_000_000)
        let entry = AccessTokenEntry(
            homeAccountID: "uid.utid", environment: "login.example", clientID: "client", realm: "utid",
            target: "Mail.Read  https://res.example/User.Read\tFiles.Read", secret: "at-secret-value", cachedAt: t0,
            expiresOn: t0.addingTimeInterval(3600))
        let account = Account(identifier: "uid.utid", username: nil, environment: "login.example", tenantProfiles: [])
        let generated = CorrelationIDGenerator().nextID()
        var result = AuthenticationResult(
            cached: entry, account: account, correlation: generated, authority: try Authority("https://login.microsoftonline.com/utid"),
            isExtendedLifetimeToken: false)
        #expect(result.scopes == ScopeSet.sortedScopes(spaceDelimited: entry.target))
        #expect(result.scopes == ["Files.Read", "https://res.example/User.Read", "Mail.Read"])
        #expect(result.accessToken == "at-secret-value" && result.tenantID == "utid" && result.expiresOn == entry.expiresOn)
        let first = result.correlationID
        #expect(UUID(uuidString: first) != nil && first == first.lowercased())
        #expect(result.correlationID == first && result.correlation.string == first)
        let copy = result
        result.correlationID = "caller-given"
        #expect(result.correlationID == "caller-given" && copy.correlationID == first)
        #expect(!String(describing: result).contains("at-secret-value"))
    }
}
