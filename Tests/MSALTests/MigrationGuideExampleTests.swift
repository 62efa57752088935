import Foundation
import MSAL
import MSALCache
import MSALTestSupport
import Testing

// The functions below are Docs/Migration.md's Swift examples, verbatim; `guideMatches` keeps them
// equal, and `examplesMigrate` runs them against the local provider.

func migratedAccount(_ application: PublicClientApplication, storedIdentifier: String?, adalUserID: String?) throws -> Account? {
    if let storedIdentifier, let account = try application.account(forIdentifier: storedIdentifier) { return account }
    return try adalUserID.flatMap { try application.account(forUsername: $0) }
}

func silentThenInteractive(_ application: PublicClientApplication, account: Account, scopes: [String]) async throws -> AuthenticationResult {
    do {
        return try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: scopes, account: account))
    } catch let error where error.code == .interactionRequired {
        return try await application.acquireToken(with: InteractiveTokenParameters(scopes: scopes, account: account))
    }
}

/// The guide's configuration line, compiled here.
func migrationGuideConfiguration(_ configuration: inout PublicClientApplicationConfiguration) {
    // GUIDE-CONFIG-BEGIN
   configuration.legacyCaches = [ADALPythonTokenCache(path: ADALPythonTokenCache.defaultPath())]
   configuration.readsADALKeyedItems = true
    // GUIDE-CONFIG-END
}

@Suite("Docs/Migration.md's examples")
struct MigrationGuideExampleTests {
    @Test("The guide shows these functions verbatim")
    func guideMatches() throws {
        let guide = try String(contentsOf: repositoryRoot.appendingPathComponent("Docs/Migration.md"), encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        for name in ["func migratedAccount(", "func silentThenInteractive("] {
            let start = try #require(source.range(of: name))
            let end = try #require(source.range(of: "\n}\n", range: start.upperBound..<source.endIndex))
            #expect(guide.contains(String(source[start.lowerBound..<end.upperBound])), "\(name) differs from the guide")
        }
        let configStart = try #require(source.range(of: "    // GUIDE-CONFIG-BEGIN\n"))
        let configEnd = try #require(source.range(of: "    // GUIDE-CONFIG-END", range: configStart.upperBound..<source.endIndex))
        #expect(guide.contains(String(source[configStart.upperBound..<configEnd.lowerBound])))
    }

    @Test("The ADAL user is found by username, upgraded silently, then found by the stored identifier")
    func examplesMigrate() async throws {
        let fixture = try ADALFixture()
        defer { fixture.stop() }
        let application = try fixture.application()
        let legacy = try #require(try migratedAccount(application, storedIdentifier: nil, adalUserID: ADALFixture.alice.username))
        let result = try await silentThenInteractive(application, account: legacy, scopes: ["api://demo/Files.Read"])
        #expect(result.tokenSource == .identityProvider)
        let stored = result.account.identifier
        let later = try fixture.application(legacy: [])
        #expect(try migratedAccount(later, storedIdentifier: stored, adalUserID: nil)?.username == ADALFixture.alice.username)
        #expect(try migratedAccount(later, storedIdentifier: "unknown", adalUserID: ADALFixture.alice.username)?.identifier == stored)
        fixture.expectLegacyUnchanged()
    }
}
