import Foundation
import MSAL
import MSALCache
import MSALCore
import MSALNetwork
import Synchronization
import Testing

// Interoperability with MSAL Python's JSON token cache, read direction, through the facade: each
// `silent_queries` row of the caches MSAL Python 1.39.0 wrote (Tests/MSALCacheTests/Fixtures, read
// from there by path so the data exists once; see its README and VERSIONS.json) is asked of a
// PublicClientApplication built on that cache, at the row's `now_epoch`, with a transport that
// serves discovery documents and refuses every token request.

/// One `silent_queries` row of an MSAL Python fixture, with what MSAL Python answered.
struct InteropQueryRow: Sendable, CustomTestStringConvertible {
    var fixture: String
    var name: String
    var clientID: String
    var authority: String
    var homeAccountID: String
    var scopes: [String]
    var nowEpoch: TimeInterval
    /// `hit` or `miss`, as MSAL Python answered.
    var expect: String
    var cachedSecret: String?
    var realmUsed: String
    /// The first refresh MSAL Python sent; `nil` when it sent none.
    var refresh: Refresh?

    struct Refresh: Sendable {
        var refreshToken: String
        var clientID: String
        var scope: [String]
        var tokenEndpoint: String
        var allRefreshTokensInOrder: [String]
    }

    var testDescription: String { "\(fixture): \(name)" }
}

enum InteropFixtures {
    static let directory = repositoryRoot.appendingPathComponent("Tests/MSALCacheTests/Fixtures")
    static let names = ["single_account", "multi_tenant"]
    /// The domain the fixtures' `alice_home_via_domain_name` row names, and its tenant.
    static let domains = ["contoso.example": "aaaaaaaa-0000-4000-8000-00000000aaaa"]

    static func cache(_ name: String) throws -> TokenCacheContents {
        try TokenCacheContents(msalJSON: Data(contentsOf: directory.appendingPathComponent("\(name).json")))
    }

    static func expectations(_ name: String) throws -> [String: JSONValue] {
        let data = try Data(contentsOf: directory.appendingPathComponent("\(name).expect.json"))
        return try JSONDecoder().decode([String: JSONValue].self, from: data)
    }

    static func loadRows() throws -> [InteropQueryRow] {
        var rows: [InteropQueryRow] = []
        for fixture in names {
            let expect = try expectations(fixture)
            let now = try #require(expect["now_epoch"]?.doubleValue)
            for value in try #require(expect["silent_queries"]?.arrayValue) {
                let row = try #require(value.objectValue)
                var refresh: InteropQueryRow.Refresh?
                if let attempt = row["refresh_attempt"]?.objectValue {
                    refresh = .init(
                        refreshToken: try #require(attempt["refresh_token_sent"]?.stringValue),
                        clientID: try #require(attempt["client_id_sent"]?.stringValue),
                        scope: try #require(attempt["scope_sent"]?.arrayValue).compactMap(\.stringValue),
                        tokenEndpoint: try #require(attempt["token_endpoint"]?.stringValue),
                        allRefreshTokensInOrder: try #require(attempt["all_refresh_tokens_tried_in_order"]?.arrayValue).compactMap(\.stringValue))
                }
                rows.append(InteropQueryRow(
                    fixture: fixture,
                    name: try #require(row["name"]?.stringValue),
                    clientID: try #require(row["client_id"]?.stringValue),
                    authority: try #require(row["authority"]?.stringValue),
                    homeAccountID: try #require(row["home_account_id"]?.stringValue),
                    scopes: try #require(row["scopes"]?.arrayValue).compactMap(\.stringValue),
                    nowEpoch: now,
                    expect: try #require(row["expect"]?.stringValue),
                    cachedSecret: row["cached_secret_returned"]?.stringValue,
                    realmUsed: try #require(row["realm_used_by_msal"]?.stringValue),
                    refresh: refresh))
            }
        }
        return rows
    }

    /// Every row; empty when the files cannot be read (``InteropFixtureTests/rowsLoad()`` fails then).
    static let rows: [InteropQueryRow] = (try? loadRows()) ?? []

    /// Where swift-msal answers differently from MSAL Python on purpose (Fixtures/README.md,
    /// "Where swift-msal answers differently on purpose"): the secret we serve from the cache, and why.
    static let intendedDifferences: [String: (secret: String, reason: String)] = [
        "alice_home_subset_lower_case": ("AT-2", "scopes compare case-insensitively everywhere (MSAL for iOS/macOS); MSAL Python ignores case only for an exact scope set, not for a subset"),
        "tenant_guid_upper_case": ("AT-1", "tenant IDs compare case-insensitively; MSAL Python compares the realm case-sensitively"),
        "home_account_id_upper_case": ("AT-1", "home account IDs compare case-insensitively (account(forIdentifier:) ignores case); MSAL Python finds no account"),
        "authority_common": ("AT-1", "a silent call on common is served from the account's home tenant, as MSAL for iOS/macOS does; MSAL Python looks under realm 'common'"),
        "authority_organizations": ("AT-1", "a silent call on organizations is served from the account's home tenant, as MSAL for iOS/macOS does; MSAL Python looks under realm 'organizations'"),
    ]
}

/// Entra ID as far as a silent request needs it: a discovery document for any tenant (a domain in
/// ``InteropFixtures/domains`` maps to its tenant ID in `issuer` and `token_endpoint`, as Entra
/// does), and `invalid_grant` with ``refusal`` for every token request. Records every request.
final class InteropEntraTransport: HTTPTransport {
    static let refusal = "AADSTS70000: the interop test transport refuses every token request"
    private let recorded = Mutex<[HTTPRequest]>([])

    var requests: [HTTPRequest] { recorded.withLock { $0 } }
    var tokenRequests: [HTTPRequest] { requests.filter { $0.method == .post } }

    func send(_ request: HTTPRequest) async throws(MSALError) -> HTTPResponse {
        recorded.withLock { $0.append(request) }
        let host = request.url.host ?? ""
        let segments = request.url.path.split(separator: "/").map(String.init)
        if request.method == .get, request.url.path.hasSuffix("/v2.0/.well-known/openid-configuration"), let tenant = segments.first {
            let tenantID = InteropFixtures.domains[tenant.lowercased()] ?? tenant
            let multiTenant = ["common", "organizations", "consumers"].contains(tenantID.lowercased())
            let base = "https://\(host)/\(tenantID)"
            return Self.json(200, [
                "issuer": "https://\(host)/\(multiTenant ? "{tenantid}" : tenantID)/v2.0",
                "authorization_endpoint": "\(base)/oauth2/v2.0/authorize",
                "token_endpoint": "\(base)/oauth2/v2.0/token",
                "device_authorization_endpoint": "\(base)/oauth2/v2.0/devicecode",
            ])
        }
        if request.method == .post, request.url.path.hasSuffix("/oauth2/v2.0/token") {
            return HTTPResponse(
                statusCode: 400, headers: ["content-type": "application/json"],
                body: Data(#"{"error":"invalid_grant","error_description":"\#(Self.refusal)","error_codes":[70000]}"#.utf8))
        }
        return Self.json(404, ["error": "not_found"])
    }

    private static func json(_ status: Int, _ object: [String: String]) -> HTTPResponse {
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return HTTPResponse(statusCode: status, headers: ["content-type": "application/json"], body: body)
    }
}

extension HTTPRequest {
    /// The `application/x-www-form-urlencoded` body's fields.
    var interopFormFields: [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body ?? Data(), as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ") }
            guard let name = parts.first?.removingPercentEncoding else { continue }
            fields[name] = parts.count > 1 ? (parts[1].removingPercentEncoding ?? parts[1]) : ""
        }
        return fields
    }
}

@Suite("MSAL Python token caches, read through the facade")
struct InteropFixtureTests {
    static func application(
        for row: InteropQueryRow, cache: TokenCacheContents, transport: InteropEntraTransport
    ) throws -> PublicClientApplication {
        var configuration = PublicClientApplicationConfiguration(
            clientID: row.clientID, authority: try Authority(row.authority),
            cacheStore: InMemoryTokenCacheStore(contents: cache))
        configuration.clock = ManualWallClock(Date(timeIntervalSince1970: row.nowEpoch))
        configuration.transport = transport
        return try PublicClientApplication(configuration: configuration)
    }

    @Test("Every silent_queries row of both fixtures is read")
    func rowsLoad() throws {
        let rows = try InteropFixtures.loadRows()
        #expect(rows.count == 26)  // 12 in single_account, 14 in multi_tenant
        #expect(Set(rows.map(\.name)).isSuperset(of: InteropFixtures.intendedDifferences.keys))
    }

    @Test("acquireTokenSilent answers each MSAL Python query as MSAL Python did, except the documented differences",
          arguments: InteropFixtures.rows)
    func silentQuery(row: InteropQueryRow) async throws {
        let cache = try InteropFixtures.cache(row.fixture)
        let transport = InteropEntraTransport()
        let application = try Self.application(for: row, cache: cache, transport: transport)
        let difference = InteropFixtures.intendedDifferences[row.name]

        guard let account = try application.account(forIdentifier: row.homeAccountID) else {
            // MSAL Python had no account (or no token of this client) to use and sent nothing.
            #expect(row.expect == "miss" && row.refresh == nil && difference == nil, "no account for \(row.homeAccountID)")
            #expect(transport.requests.isEmpty)
            if row.name == "other_client_id" {
                // The account exists, but for another client: the silent call must not borrow that
                // client's tokens (no family), and sends nothing: interaction is required.
                let owner = try Self.application(
                    for: InteropQueryRow(fixture: row.fixture, name: row.name, clientID: "c11e0000-0000-4000-8000-000000000001",
                                         authority: row.authority, homeAccountID: row.homeAccountID, scopes: row.scopes,
                                         nowEpoch: row.nowEpoch, expect: row.expect, cachedSecret: nil, realmUsed: row.realmUsed),
                    cache: cache, transport: transport)
                let ownersAccount = try #require(try owner.account(forIdentifier: row.homeAccountID))
                do {
                    let result = try await application.acquireTokenSilent(with: SilentTokenParameters(scopes: row.scopes, account: ownersAccount))
                    Issue.record("expected interactionRequired, got a token from \(result.tokenSource)")
                } catch {
                    #expect(error.code == .interactionRequired)
                }
                #expect(transport.tokenRequests.isEmpty)
            }
            return
        }
        #expect(account.identifier.lowercased() == row.homeAccountID.lowercased())

        let parameters = SilentTokenParameters(scopes: row.scopes, account: account)
        let outcome: Result<AuthenticationResult, MSALError>
        do {
            outcome = .success(try await application.acquireTokenSilent(with: parameters))
        } catch {
            outcome = .failure(error)
        }

        if let difference {
            // Our answer differs from MSAL Python's on purpose; the reason is in `difference.reason`.
            let result = try #require(try? outcome.get(), "\(row.name): \(difference.reason)")
            #expect(result.tokenSource == .cache, "\(difference.reason)")
            #expect(result.accessToken == difference.secret, "\(difference.reason)")
            #expect(transport.tokenRequests.isEmpty, "\(difference.reason)")
            return
        }

        switch row.expect {
        case "hit":
            let expected = try #require(row.cachedSecret)
            switch outcome {
            case .success(let result):
                #expect(result.tokenSource == .cache)
                #expect(result.accessToken == expected)
                #expect(result.tenantID.lowercased() == row.realmUsed.lowercased())
            case .failure(let error):
                Issue.record("MSAL Python served \(expected) from the cache; we threw \(error)")
            }
            #expect(transport.tokenRequests.isEmpty, "a cache hit sends no token request")
        default:
            if case .success(let result) = outcome {
                Issue.record("MSAL Python found no cached token; we served \(result.accessToken) from \(result.tokenSource)")
            }
            if case .failure(let error) = outcome {
                #expect(error.code == .interactionRequired)
                #expect(error.oauthError == "invalid_grant")
                #expect(error.oauthErrorDescription == InteropEntraTransport.refusal)
            }
            let tokenRequests = transport.tokenRequests
            guard let refresh = row.refresh else {
                #expect(tokenRequests.isEmpty)
                return
            }
            let first = try #require(tokenRequests.first, "MSAL Python refreshed with \(refresh.refreshToken); we sent no token request")
            let fields = first.interopFormFields
            #expect(first.url.absoluteString == refresh.tokenEndpoint)
            #expect(fields["grant_type"] == "refresh_token")
            #expect(fields["client_id"] == refresh.clientID)
            #expect(fields["refresh_token"] == refresh.refreshToken)
            #expect((fields["scope"] ?? "").split(separator: " ").map(String.init).sorted() == refresh.scope.sorted())
            // MSAL Python tries each of the account's refresh tokens, newest first; we redeem the
            // newest only. What we send must be the start of what it tried.
            let sent = tokenRequests.compactMap { $0.interopFormFields["refresh_token"] }
            #expect(Array(refresh.allRefreshTokensInOrder.prefix(sent.count)) == sent)
        }
    }
}
