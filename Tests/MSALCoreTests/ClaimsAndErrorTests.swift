import Foundation
import MSALCore
import Testing

private func jwt(_ claims: [String: Any]) -> String {
    let header = Base64URL.encode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
    let payload = Base64URL.encode(try! JSONSerialization.data(withJSONObject: claims))
    return "\(header).\(payload)."
}

@Suite("ID token claims")
struct IDTokenClaimsTests {
    let now = Date(timeIntervalSince1970: 1_700_000_600)
    let base: [String: Any] = [
        "iss": "https://login.microsoftonline.com/aaaaaaaa-0000-4000-8000-00000000aaaa/v2.0",
        "aud": "client-1", "exp": 1_700_003_600, "iat": 1_700_000_000,
        "oid": "oid-1", "tid": "aaaaaaaa-0000-4000-8000-00000000aaaa",
        "preferred_username": "alice@contoso.example", "sub": "sub-1", "nonce": "n-1",
    ]

    @Test("Decodes the payload and reads the standard and Entra claims")
    func decode() throws {
        let claims = try IDTokenClaims(jwt: jwt(base))
        #expect(claims.objectID == "oid-1")
        #expect(claims.tenantID == "aaaaaaaa-0000-4000-8000-00000000aaaa")
        #expect(claims.preferredUsername == "alice@contoso.example")
        #expect(claims.audiences == ["client-1"])
        #expect(claims.expiresOn == Date(timeIntervalSince1970: 1_700_003_600))
    }

    @Test("Valid claims pass; the {tenantid} issuer template is filled from tid")
    func valid() throws {
        let claims = try IDTokenClaims(jwt: jwt(base))
        try claims.validate(issuer: "https://login.microsoftonline.com/{tenantid}/v2.0", clientID: "client-1", nonce: "n-1", now: now)
        try claims.validate(issuer: nil, clientID: "client-1", nonce: nil, now: now)
    }

    @Test("Wrong iss, aud, nonce, or exp beyond the skew fail with invalidIDToken")
    func invalid() throws {
        let claims = try IDTokenClaims(jwt: jwt(base))
        let expected = MSALError.internal(.invalidIDToken, "")
        #expect(throws: expected) { try claims.validate(issuer: "https://evil.example/v2.0", clientID: "client-1", nonce: nil, now: now) }
        #expect(throws: expected) { try claims.validate(issuer: nil, clientID: "other", nonce: nil, now: now) }
        #expect(throws: expected) { try claims.validate(issuer: nil, clientID: "client-1", nonce: "n-2", now: now) }
        let late = Date(timeIntervalSince1970: 1_700_003_600 + 301)
        #expect(throws: expected) { try claims.validate(issuer: nil, clientID: "client-1", nonce: nil, now: late) }
        // Within the 300 s skew it still passes.
        try claims.validate(issuer: nil, clientID: "client-1", nonce: nil, now: Date(timeIntervalSince1970: 1_700_003_600 + 299))
    }

    @Test("Malformed tokens are clear errors", arguments: ["", "abc", "a.b", "a.!!!.c", "a.\(Base64URL.encode(Data("[1]".utf8))).c"])
    func malformed(token: String) {
        #expect(throws: MSALError.internal(.invalidIDToken, "")) { try IDTokenClaims(jwt: token) }
    }

    @Test("client_info round-trips and forms the home account id")
    func clientInfo() throws {
        let info = ClientInfo(uniqueID: "uid-1", uniqueTenantID: "utid-1")
        let decoded = try ClientInfo(encoded: info.encoded)
        #expect(decoded.homeAccountID == "uid-1.utid-1")
        #expect(throws: MSALError.self) { try ClientInfo(encoded: "not base64 json") }
    }
}

@Suite("MSALError and logging")
struct ErrorAndLoggingTests {
    @Test("Equality is on the code; description carries the context and no secret")
    func errorDescription() {
        let error = MSALError(
            .interactionRequired, message: "The refresh token was rejected.", oauthError: "invalid_grant",
            subError: "bad_token", errorCodes: [70000], correlationID: "corr-1", httpStatusCode: 400)
        #expect(error == MSALError(.interactionRequired, message: "other"))
        #expect(error != MSALError(.serverError, message: "The refresh token was rejected."))
        #expect(error.description == "interactionRequired: The refresh token was rejected. error=invalid_grant suberror=bad_token error_codes=70000 http_status=400 correlation_id=corr-1")
        #expect(MSALError.internal(.cacheError, "x").codeString == "internal.cacheError")
    }

    @Test("PII is masked unless the app opts in; nothing is logged by default")
    func piiMasking() {
        let lines = LockedLines()
        let masked = Logger(level: .debug) { _, line in lines.append(line) }
        masked.info("account \(pii: "alice@contoso.example") has \(3) tokens")
        let open = Logger(level: .debug, piiLoggingEnabled: true) { _, line in lines.append(line) }
        open.info("account \(pii: "alice@contoso.example")")
        let quiet = Logger(level: .warning) { _, line in lines.append(line) }
        quiet.debug("not shown")
        Logger.none.error("dropped")
        #expect(lines.all == ["account Masked(not-null) has 3 tokens", "account alice@contoso.example"])
    }

    @Test("The manual clock moves only when told")
    func manualClock() {
        let clock = ManualWallClock(Date(timeIntervalSince1970: 100))
        clock.advance(by: 50)
        #expect(clock.now() == Date(timeIntervalSince1970: 150))
    }
}

final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
}
