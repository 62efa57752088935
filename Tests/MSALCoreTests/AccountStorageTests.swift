import Foundation
import Synchronization
import MSALCore
import Testing

@Suite("Accounts, tenant profiles and claims share their fields, and read and compare as values")
struct AccountStorageTests {
    static func claims(sub: String, tid: String) throws -> IDTokenClaims {
        let header = Base64URL.encode(Data(#"{"alg":"none"}"#.utf8))
        let payload = Base64URL.encode(Data(#"{"sub":"\#(sub)","tid":"\#(tid)"}"#.utf8))
        return try IDTokenClaims(jwt: "\(header).\(payload).sig")
    }

    static func profile(_ tenantID: String, claims: IDTokenClaims?, home: Bool = false) -> TenantProfile {
        TenantProfile(identifier: "oid-\(tenantID)", tenantID: tenantID, environment: "login.microsoftonline.com", isHomeTenant: home, claims: claims)
    }

    @Test("claims(ofTenant:) finds a profile's claims as written and case-insensitively, and nil for an unknown tenant or a profile without claims")
    func claimsOfTenant() throws {
        let home = try Self.claims(sub: "s1", tid: "Tenant-A")
        let guest = try Self.claims(sub: "s2", tid: "tenant-b")
        let account = Account(
            identifier: "uid.tenant-a", username: "user@contoso.example", environment: "login.microsoftonline.com",
            tenantProfiles: [Self.profile("Tenant-A", claims: home, home: true), Self.profile("tenant-b", claims: guest), Self.profile("tenant-c", claims: nil)])
        #expect(account.claims(ofTenant: "Tenant-A") == home)
        #expect(account.claims(ofTenant: "tenant-a") == home)
        #expect(account.claims(ofTenant: "TENANT-B") == guest)
        #expect(account.claims(ofTenant: "tenant-c") == nil)
        #expect(account.claims(ofTenant: "tenant-d") == nil)
        #expect(account.tenantProfiles.map(\.tenantID) == ["Tenant-A", "tenant-b", "tenant-c"])
        #expect(account.tenantProfiles[0].claims?.subject == "s1")
    }

    @Test("Profiles and claims built separately from equal fields are equal and hash alike; any field that differs makes them differ")
    func valueSemantics() throws {
        let a = try Self.claims(sub: "s1", tid: "t")
        let b = try Self.claims(sub: "s1", tid: "t")
        let other = try Self.claims(sub: "s2", tid: "t")
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(a != other)
        let p = Self.profile("t", claims: a), q = Self.profile("t", claims: b)
        #expect(p == q && p.hashValue == q.hashValue)
        #expect(p != Self.profile("t", claims: other))
        #expect(p != Self.profile("t", claims: a, home: true))
        #expect(p != Self.profile("u", claims: a))
        #expect(Set([p, q]).count == 1)
    }

    /// Counts the calls of a claims decoder.
    final class DecodeCounter: Sendable {
        private let calls = Mutex(0)
        var count: Int { calls.withLock { $0 } }

        @Sendable func decode(_ jwt: String) -> IDTokenClaims? {
            calls.withLock { $0 += 1 }
            return try? IDTokenClaims(jwt: jwt)
        }
    }

    @Test("A profile made from an ID token decodes it when its claims are first read, once for every reader, and equals one made from the claims")
    func claimsDecodedOnFirstRead() async throws {
        let decoded = try Self.claims(sub: "s1", tid: "t")
        let counter = DecodeCounter()
        let lazy = TenantProfile(
            identifier: "oid-t", tenantID: "t", environment: "login.microsoftonline.com", isHomeTenant: true,
            idToken: decoded.rawValue, decode: counter.decode)
        let account = Account(identifier: "uid.t", username: nil, environment: "login.microsoftonline.com", tenantProfiles: [lazy])
        #expect(account.tenantProfiles[0].tenantID == "t" && account.tenantProfiles[0].identifier == "oid-t")
        #expect(counter.count == 0, "assembling the account and reading its other fields decodes nothing")

        let read = await withTaskGroup(of: IDTokenClaims?.self) { group in
            for _ in 0..<8 { group.addTask { account.tenantProfiles[0].claims } }
            return await group.reduce(into: [IDTokenClaims?]()) { $0.append($1) }
        }
        #expect(read.count == 8 && read.allSatisfy { $0 == decoded })
        #expect(account.claims(ofTenant: "T")?.subject == "s1")
        #expect(counter.count == 1, "eight concurrent readers and a lookup by tenant: one decode")
        #expect(lazy == Self.profile("t", claims: decoded, home: true) && lazy.hashValue == Self.profile("t", claims: decoded, home: true).hashValue)
    }

    @Test("A profile whose ID token does not decode has no claims, and tries once")
    func undecodableIDToken() {
        let counter = DecodeCounter()
        let profile = TenantProfile(
            identifier: "oid-t", tenantID: "t", environment: "login.microsoftonline.com", isHomeTenant: false,
            idToken: "not.a-jwt%%.x", decode: counter.decode)
        #expect(profile.claims == nil)
        #expect(profile.claims == nil)
        #expect(counter.count == 1)
        #expect(profile == Self.profile("t", claims: nil))
    }

    @Test("dump shows an account's and a profile's fields by name")
    func mirror() throws {
        let account = Account(
            identifier: "uid.utid", username: nil, environment: "login.microsoftonline.com",
            tenantProfiles: [Self.profile("utid", claims: nil, home: true)])
        #expect(Mirror(reflecting: account).children.map(\.label) == ["identifier", "username", "environment", "tenantProfiles"])
        #expect(Mirror(reflecting: account.tenantProfiles[0]).children.map(\.label) == ["identifier", "tenantID", "environment", "isHomeTenant", "claims"])
        var dumped = ""
        dump(account, to: &dumped)
        #expect(dumped.contains("identifier: \"uid.utid\"") && dumped.contains("tenantID: \"utid\"") && !dumped.contains("Storage"))
    }

    @Test("print shows an account's and a profile's fields as a struct's would, claims redacted; an authority's dump shows its fields")
    func printing() throws {
        let claims = try Self.claims(sub: "subject-secret", tid: "tid")
        let account = Account(
            identifier: "uid.tid", username: "jane@contoso.example", environment: "login.microsoftonline.com",
            tenantProfiles: [Self.profile("tid", claims: claims, home: true)])
        let printed = String(describing: account)
        #expect(printed.hasPrefix("Account(identifier: \"uid.tid\", username: Optional(\"jane@contoso.example\"), environment: \"login.microsoftonline.com\", tenantProfiles: ["))
        #expect(printed.contains("TenantProfile(identifier: \"oid-tid\", tenantID: \"tid\", environment: \"login.microsoftonline.com\", isHomeTenant: true, claims: "))
        #expect(String(reflecting: account) == "MSALCore." + printed)
        #expect(!printed.contains("subject-secret") && !printed.contains(claims.rawValue))
        let authority = try Authority("https://login.microsoftonline.com/contoso.onmicrosoft.com")
        #expect(Mirror(reflecting: authority).children.map(\.label) == ["url", "type", "tenant", "policy", "environment", "isLoopback"])
        var dumped = ""
        dump(authority, to: &dumped)
        #expect(!dumped.contains("Storage") && dumped.contains("environment: \"login.microsoftonline.com\""))
    }
}
