import Foundation
import MSAL
import MSALCore
import MSALTestSupport
import Testing

/// `SilentTokenParameters` keeps its rarely set fields in one shared reference, replaced on each
/// change: it must still behave as a plain struct of seven fields.
@Suite("Silent token parameters: value semantics of the options kept apart")
struct SilentTokenParametersTests {
    /// The plain model the parameters must agree with.
    struct Model: Equatable {
        var scopes: [String]
        var forceRefresh = false
        var claims: String?
        var extraQueryParameters: [String: String] = [:]
        var correlationID: UUID?
    }

    let account = Account(identifier: "uid.utid", username: "user@example.com", environment: "login.example.com", tenantProfiles: [])

    func model(of parameters: SilentTokenParameters) -> Model {
        Model(
            scopes: parameters.scopes, forceRefresh: parameters.forceRefresh, claims: parameters.claims,
            extraQueryParameters: parameters.extraQueryParameters, correlationID: parameters.correlationID)
    }

    @Test("Defaults, and every option given to the initializer, read back")
    func initializer() throws {
        let plain = SilentTokenParameters(scopes: ["User.Read"], account: account)
        #expect(model(of: plain) == Model(scopes: ["User.Read"]))
        #expect(plain.authority == nil)
        #expect(plain.account == account)

        let id = UUID()
        let authority = try Authority("https://login.microsoftonline.com/common")
        let full = SilentTokenParameters(
            scopes: ["Mail.Read"], account: account, authority: authority, forceRefresh: true, claims: "{}",
            extraQueryParameters: ["dc": "ESTS-PUB"], correlationID: id)
        #expect(model(of: full) == Model(scopes: ["Mail.Read"], forceRefresh: true, claims: "{}", extraQueryParameters: ["dc": "ESTS-PUB"], correlationID: id))
        #expect(full.authority == authority)
    }

    @Test("Seeded random changes agree with a plain struct, and copies never share a change")
    func randomChanges() {
        var generator = SplitMix64(seed: 0x5111_7E47)
        for _ in 0..<200 {
            var parameters = SilentTokenParameters(scopes: ["a"], account: account)
            var expected = Model(scopes: ["a"])
            var copies: [(SilentTokenParameters, Model)] = []
            for _ in 0..<30 {
                switch Int.random(in: 0..<6, using: &generator) {
                case 0:
                    let value = Bool.random(using: &generator)
                    parameters.forceRefresh = value
                    expected.forceRefresh = value
                case 1:
                    let value = Bool.random(using: &generator) ? nil : "claims-\(Int.random(in: 0..<5, using: &generator))"
                    parameters.claims = value
                    expected.claims = value
                case 2:
                    let value = Bool.random(using: &generator) ? [:] : ["k\(Int.random(in: 0..<3, using: &generator))": "v"]
                    parameters.extraQueryParameters = value
                    expected.extraQueryParameters = value
                case 3:
                    let value = Bool.random(using: &generator) ? nil : UUID()
                    parameters.correlationID = value
                    expected.correlationID = value
                case 4:
                    // In place, through the getter and setter of a dictionary.
                    parameters.extraQueryParameters["x"] = "y"
                    expected.extraQueryParameters["x"] = "y"
                default:
                    let value = ["s\(Int.random(in: 0..<4, using: &generator))"]
                    parameters.scopes = value
                    expected.scopes = value
                }
                #expect(model(of: parameters) == expected)
                if Int.random(in: 0..<4, using: &generator) == 0 { copies.append((parameters, expected)) }
            }
            for (copy, snapshot) in copies { #expect(model(of: copy) == snapshot) }
        }
    }
}
