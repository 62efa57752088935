import Foundation
import MSALCore
import Testing

@Suite("Authority")
struct AuthorityTests {
    @Test("Entra hosts are classified as aad with their tenant kind", arguments: [
        ("https://login.microsoftonline.com/common", AuthorityTenant.common),
        ("https://login.microsoftonline.com/organizations/", .organizations),
        ("https://login.microsoftonline.com/Consumers", .consumers),
        ("https://login.microsoftonline.us/AAAAAAAA-0000-4000-8000-00000000AAAA", .tenantID("aaaaaaaa-0000-4000-8000-00000000aaaa")),
        ("https://login.chinacloudapi.cn/contoso.onmicrosoft.com/v2.0", .domain("contoso.onmicrosoft.com")),
    ])
    func entra(url: String, tenant: AuthorityTenant) throws {
        let authority = try Authority(url)
        #expect(authority.type == .aad)
        #expect(authority.tenant == tenant)
        #expect(authority.url.path == "/" + tenant.segment)
        #expect(authority.discoveryURL.absoluteString.hasSuffix("/\(tenant.segment)/v2.0/.well-known/openid-configuration"))
    }

    @Test("Other hosts are generic OpenID Connect issuers; discovery hangs off the issuer")
    func oidc() throws {
        let authority = try Authority("https://idp.example.com/realms/main/")
        #expect(authority.type == .oidc)
        #expect(authority.tenant == nil)
        #expect(authority.url.absoluteString == "https://idp.example.com/realms/main")
        #expect(authority.discoveryURL.absoluteString == "https://idp.example.com/realms/main/.well-known/openid-configuration")
        #expect(authority.environment == "idp.example.com")
    }

    @Test("An explicit type wins over the host: an Entra-shaped provider on loopback")
    func explicitType() throws {
        let authority = try Authority("http://127.0.0.1:4321/common", type: .aad)
        #expect(authority.type == .aad)
        #expect(authority.tenant == .common)
        #expect(authority.environment == "127.0.0.1:4321")
        #expect(authority.isLoopback)
        #expect(authority.withTenant("aaaaaaaa-0000-4000-8000-00000000aaaa").url.absoluteString
            == "http://127.0.0.1:4321/aaaaaaaa-0000-4000-8000-00000000aaaa")
    }

    @Test("http is allowed on loopback hosts only", arguments: ["http://127.0.0.1:8080/x", "http://localhost/x", "http://[::1]:9/x", "http://127.1.2.3/x"])
    func loopbackHTTP(url: String) throws {
        #expect(try Authority(url).isLoopback)
    }

    @Test("Bad authorities are clear invalidAuthority errors", arguments: [
        "not a url", "login.microsoftonline.com/common", "ftp://example.com/x", "http://example.com/issuer",
        "http://127.0.0.1.example.com/x", "https://login.microsoftonline.com", "https://example.com/x?y=1", "",
    ])
    func invalid(url: String) {
        #expect(throws: MSALError.internal(.invalidAuthority, "")) { try Authority(url) }
    }

    @Test("The http error names the host and says why")
    func httpMessage() {
        do {
            _ = try Authority("http://idp.example.com")
            Issue.record("expected an error")
        } catch {
            #expect(error.message.contains("https"))
            #expect(error.message.contains("idp.example.com"))
        }
    }
}
