import Foundation
import MSALCache
import MSALCore
import Testing

/// Builders for entries used across the tests.
enum Sample {
    static let environment = "login.microsoftonline.com"
    static let clientID = "c11e0000-0000-4000-8000-000000000001"
    static let tenant = "aaaaaaaa-0000-4000-8000-00000000aaaa"
    static let home = "0a0a0a0a-0000-4000-8000-0000000a11ce.aaaaaaaa-0000-4000-8000-00000000aaaa"
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    static func accessToken(
        home: String = home, realm: String = tenant, clientID: String = clientID,
        target: String = "User.Read", secret: String, expiresIn: TimeInterval = 3600
    ) -> AccessTokenEntry {
        AccessTokenEntry(
            homeAccountID: home, environment: environment, clientID: clientID, realm: realm, target: target,
            secret: secret, cachedAt: t0, expiresOn: t0.addingTimeInterval(expiresIn),
            extendedExpiresOn: t0.addingTimeInterval(2 * expiresIn))
    }

    static func refreshToken(home: String = home, clientID: String = clientID, familyID: String? = nil, secret: String, target: String? = nil) -> RefreshTokenEntry {
        RefreshTokenEntry(homeAccountID: home, environment: environment, clientID: clientID, familyID: familyID, secret: secret, target: target)
    }

    static func idToken(home: String = home, realm: String = tenant, clientID: String = clientID, secret: String) -> IDTokenEntry {
        IDTokenEntry(homeAccountID: home, environment: environment, clientID: clientID, realm: realm, secret: secret)
    }

    static func account(home: String = home, realm: String = tenant, username: String = "alice@contoso.example") -> AccountEntry {
        AccountEntry(
            homeAccountID: home, environment: environment, realm: realm,
            localAccountID: String(home.split(separator: ".").first ?? ""), username: username)
    }
}

@Suite("TokenCacheContents: MSAL JSON")
struct TokenCacheContentsTests {
    @Test("Unknown sections, unknown fields and unreadable entries survive a round trip")
    func unknownDataSurvives() throws {
        let json = """
        {
          "AccessToken": {
            "k1": {"credential_type": "AccessToken", "secret": "AT-x", "home_account_id": "h", "environment": "e",
                   "client_id": "c", "target": "s1", "realm": "r", "token_type": "Bearer",
                   "cached_at": "1700000000", "expires_on": 1700003600, "future_field": {"a": [1, true, null]}},
            "pop": {"credential_type": "AccessToken_With_AuthScheme", "secret": "AT-pop", "home_account_id": "h",
                    "environment": "e", "client_id": "c", "target": "s1", "realm": "r",
                    "cached_at": "1700000000", "expires_on": "1700003600", "key_id": "kid"},
            "broken": {"credential_type": "AccessToken", "home_account_id": "h"}
          },
          "Account": {"a": {"home_account_id": "h", "environment": "e", "realm": "r", "local_account_id": "l",
                            "authority_type": "MSSTS", "username": 42, "client_info": "xyz"}},
          "FutureSection": {"x": {"y": "z"}}
        }
        """
        let contents = try TokenCacheContents(msalJSON: Data(json.utf8))
        let at = try #require(contents.accessTokens["k1"])
        #expect(at.secret == "AT-x")
        #expect(at.expiresOn == Date(timeIntervalSince1970: 1_700_003_600))
        #expect(at.additionalFields["future_field"] == .object(["a": .array([.number(1), .bool(true), .null])]))
        #expect(contents.accessTokens.count == 1)
        #expect(contents.unreadableEntries["AccessToken"]?.keys.sorted() == ["broken", "pop"])
        let account = try #require(contents.accounts["a"])
        #expect(account.username == nil)
        #expect(account.additionalFields["username"] == .number(42))
        #expect(account.additionalFields["client_info"] == .string("xyz"))
        #expect(contents.unknownSections["FutureSection"] == .object(["x": .object(["y": .string("z")])]))

        let again = try TokenCacheContents(msalJSON: contents.msalJSON())
        #expect(again == contents)
        let raw = try JSONDecoder().decode([String: JSONValue].self, from: contents.msalJSON())
        #expect(raw["AccessToken"]?.objectValue?["k1"]?.objectValue?["expires_on"] == .string("1700003600"))
        #expect(raw["AccessToken"]?.objectValue?["pop"]?.objectValue?["key_id"] == .string("kid"))
        #expect(raw["RefreshToken"] == .object([:]))
    }

    @Test("Input that is not MSAL JSON gives a cache error that names no secret", arguments: [
        "not json at all AT-secret", "[1, 2]", "{\"AccessToken\": [\"AT-secret\"]}",
    ])
    func invalidInput(json: String) {
        #expect {
            _ = try TokenCacheContents(msalJSON: Data(json.utf8))
        } throws: { error in
            guard let error = error as? MSALError else { return false }
            return error == .internal(.cacheError, "") && !error.description.contains("AT-secret")
        }
    }

    @Test("Empty data reads as an empty cache")
    func emptyData() throws {
        #expect(try TokenCacheContents(msalJSON: Data()) == TokenCacheContents())
        #expect(try TokenCacheContents(msalJSON: Data(" \n".utf8)).count == 0)
    }

    @Test("Keys follow the unified schema, lowercased")
    func keys() {
        let at = Sample.accessToken(home: "H.T", realm: "TENANT", clientID: "CID", target: "User.Read Mail.Read", secret: "s")
        #expect(at.key == "h.t-login.microsoftonline.com-accesstoken-cid-tenant-user.read mail.read")
        #expect(Sample.refreshToken(home: "H.T", clientID: "CID", secret: "s").key == "h.t-login.microsoftonline.com-refreshtoken-cid--")
        #expect(Sample.refreshToken(home: "H.T", clientID: "CID", familyID: "1", secret: "s").key == "h.t-login.microsoftonline.com-refreshtoken-1--")
        #expect(Sample.refreshToken(home: "H.T", clientID: "CID", secret: "s", target: "A b").key == "h.t-login.microsoftonline.com-refreshtoken-cid--a b")
        #expect(Sample.idToken(home: "H.T", realm: "TENANT", clientID: "CID", secret: "s").key == "h.t-login.microsoftonline.com-idtoken-cid-tenant-")
        #expect(Sample.account(home: "H.T", realm: "TENANT").key == "h.t-login.microsoftonline.com-tenant")
        #expect(AppMetadataEntry(clientID: "CID", environment: "Login.Example").key == "appmetadata-login.example-cid")
        // Non-ASCII parts are lowercased in full; empty parts keep their dashes.
        #expect(Sample.account(home: "", realm: "TÉNANT").key == "-login.microsoftonline.com-ténant")
        #expect(Sample.account(home: "H.T", realm: "").key == "h.t-login.microsoftonline.com-")
        #expect(AppMetadataEntry(clientID: "CÍD", environment: "Login.Example").key == "appmetadata-login.example-cíd")
        #expect(Sample.accessToken(home: "H.T", realm: "TENANT", clientID: "CID", target: "Ünïcode.Read", secret: "s").key
            == "h.t-login.microsoftonline.com-accesstoken-cid-tenant-ünïcode.read")
        #expect(Sample.idToken(home: "", realm: "", clientID: "", secret: "s").key == "-login.microsoftonline.com-idtoken---")
        #expect(CacheEntry.idToken(Sample.idToken(secret: "s")).kind == .idToken)
        #expect(at.scopes == ["mail.read", "user.read"])
    }

    @Test("Descriptions never show a secret")
    func descriptionsHideSecrets() {
        let entries: [CacheEntry] = [
            .accessToken(Sample.accessToken(target: "a", secret: "SECRET-AT")),
            .refreshToken(Sample.refreshToken(secret: "SECRET-RT")),
            .idToken(Sample.idToken(secret: "SECRET-ID")),
        ]
        for entry in entries {
            let texts = [String(describing: entry), "\(entry)", String(reflecting: entry)]
            for text in texts { #expect(!text.contains("SECRET"), "\(text)") }
        }
        let at = Sample.accessToken(target: "a", secret: "SECRET-AT")
        #expect(!String(describing: at).contains("SECRET") && !String(reflecting: at).contains("SECRET"))
        #expect(String(describing: at).contains(at.key))
        var dumped = ""
        dump(entries, to: &dumped)
        #expect(!dumped.contains("SECRET") && dumped.contains("<redacted>"))
        let change = TokenCacheChange(upserts: entries)
        #expect(!String(describing: change).contains("SECRET"))
    }

    @Test("Credential descriptions are the type, the key (and the access token's type and times), secret redacted")
    func credentialDescriptionFormat() {
        let at = Sample.accessToken(target: "a", secret: "s")
        let rt = Sample.refreshToken(secret: "s")
        let id = Sample.idToken(secret: "s")
        let atText = "AccessTokenEntry(key: \(at.key), tokenType: Bearer, cachedAt: \(at.cachedAt), expiresOn: \(at.expiresOn), secret: <redacted>)"
        #expect(at.description == atText && at.debugDescription == atText)
        #expect(rt.description == "RefreshTokenEntry(key: \(rt.key), secret: <redacted>)" && rt.debugDescription == rt.description)
        #expect(id.description == "IDTokenEntry(key: \(id.key), secret: <redacted>)" && id.debugDescription == id.description)
        for mirror in [at.customMirror, rt.customMirror, id.customMirror] {
            #expect(mirror.displayStyle == .struct)
            let children = Array(mirror.children)
            #expect(children.map(\.label) == ["key", "secret"])
            #expect(children.last?.value as? String == "<redacted>")
        }
        #expect(rt.customMirror.children.first?.value as? String == rt.key)
    }

    @Test("Dates are written as whole epoch seconds and read back")
    func epochSeconds() throws {
        var at = Sample.accessToken(target: "a", secret: "s")
        at.refreshOn = Date(timeIntervalSince1970: 1_700_001_800.9)
        let object = CacheEntry.accessToken(at).msalJSONObject
        #expect(object["refresh_on"] == .string("1700001800"))
        #expect(object["cached_at"] == .string("1700000000"))
        #expect(object["credential_type"] == .string("AccessToken"))
        let back = try CacheEntry(kind: .accessToken, msalJSONData: CacheEntry.accessToken(at).msalJSONData())
        guard case .accessToken(let read) = back else { Issue.record("wrong kind"); return }
        #expect(read.refreshOn == Date(timeIntervalSince1970: 1_700_001_800))
        #expect(read.expiresOn == at.expiresOn)
    }

    @Test("Credential keys are the six fields joined with '-' and lowercased, ASCII or not", arguments: [
        ("H.T", "Login.MicrosoftOnline.COM", "CID", "Tenant", "User.Read Mail.Read"),
        ("h.t", "login.microsoftonline.com", "cid", "", ""),
        ("Ü.T", "login.example", "cid", "tenant", "api://Résumé/Read"),
        ("h.t", "login.example", "cid", "tenant", "API://İSTANBUL/read ß"),
    ])
    func credentialKeys(home: String, environment: String, clientID: String, realm: String, target: String) {
        let entry = AccessTokenEntry(
            homeAccountID: home, environment: environment, clientID: clientID, realm: realm, target: target, secret: "s",
            cachedAt: Date(timeIntervalSince1970: 0), expiresOn: Date(timeIntervalSince1970: 1))
        #expect(entry.key == [home, environment, "accesstoken", clientID, realm, target].joined(separator: "-").lowercased())
    }
}
