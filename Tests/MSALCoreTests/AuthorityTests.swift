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

    @Test("The hint of an authority without its tenant, policy or path keeps the given scheme and port", arguments: [
        ("http://127.0.0.1:8765", AuthorityType.aad, "http://127.0.0.1:8765/{common|organizations|consumers|<tenant id or domain>}"),
        ("https://login.microsoftonline.com", .aad, "https://login.microsoftonline.com/{common|"),
        ("http://localhost:9000/", .b2c, "http://localhost:9000/tfp/<tenant>/<policy>"),
        ("https://fs.contoso.com:8443/", .adfs, "https://fs.contoso.com:8443/adfs."),
    ])
    func hintKeepsOrigin(url: String, type: AuthorityType, hint: String) {
        do {
            _ = try Authority(url, type: type)
            Issue.record("\(url) was accepted")
        } catch {
            // `Authority.init` throws `MSALError` only (a typed throw).
            #expect(error == .internal(.invalidAuthority, ""))
            #expect(error.message.contains(hint), "\(error.message)")
        }
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

    // MARK: B2C

    @Test("B2C tfp shape: tenant and policy, extra segments dropped, discovery under v2.0")
    func b2cTFP() throws {
        let authority = try Authority(
            "https://Fabrikam.b2clogin.com/tfp/Fabrikam.onmicrosoft.com/B2C_1_SignUpSignIn/v2.0/",
            knownAuthorities: ["fabrikam.b2clogin.com"]
        )
        #expect(authority.type == .b2c)
        #expect(authority.tenant == .domain("fabrikam.onmicrosoft.com"))
        #expect(authority.policy == "B2C_1_SignUpSignIn")
        #expect(authority.url.absoluteString == "https://fabrikam.b2clogin.com/tfp/fabrikam.onmicrosoft.com/B2C_1_SignUpSignIn")
        #expect(authority.discoveryURL.absoluteString
            == "https://fabrikam.b2clogin.com/tfp/fabrikam.onmicrosoft.com/B2C_1_SignUpSignIn/v2.0/.well-known/openid-configuration")
        #expect(authority.environment == "fabrikam.b2clogin.com")
        #expect(authority.withTenant("other") == authority)
    }

    @Test("B2C tfp on an Entra host is B2C, not an Entra tenant named tfp")
    func b2cTFPOnEntraHost() throws {
        let authority = try Authority(
            "https://login.microsoftonline.com/tfp/contoso.onmicrosoft.com/B2C_1_SignIn",
            knownAuthorities: ["login.microsoftonline.com"]
        )
        #expect(authority.type == .b2c)
        #expect(authority.policy == "B2C_1_SignIn")
    }

    @Test("B2C b2clogin shape is inferred from the host", arguments: ["b2clogin.com", "b2clogin.cn", "b2clogin.us", "b2clogin.de"])
    func b2cLogin(suffix: String) throws {
        let host = "contoso.\(suffix)"
        let authority = try Authority("https://\(host)/contoso.onmicrosoft.com/B2C_1_EditProfile", knownAuthorities: [host])
        #expect(authority.type == .b2c)
        #expect(authority.tenant == .domain("contoso.onmicrosoft.com"))
        #expect(authority.policy == "B2C_1_EditProfile")
        #expect(authority.url.absoluteString == "https://\(host)/contoso.onmicrosoft.com/B2C_1_EditProfile")
        #expect(authority.discoveryURL.absoluteString
            == "https://\(host)/contoso.onmicrosoft.com/B2C_1_EditProfile/v2.0/.well-known/openid-configuration")
    }

    @Test("B2C on a custom domain needs the explicit type; the tenant may be a GUID")
    func b2cCustomDomain() throws {
        let authority = try Authority(
            "https://login.contoso.com/AAAAAAAA-0000-4000-8000-00000000AAAA/B2C_1A_signup_signin",
            type: .b2c, knownAuthorities: ["login.contoso.com"]
        )
        #expect(authority.type == .b2c)
        #expect(authority.tenant == .tenantID("aaaaaaaa-0000-4000-8000-00000000aaaa"))
        #expect(authority.policy == "B2C_1A_signup_signin")
        // Without the type, the same URL is a generic issuer.
        #expect(try Authority("https://login.contoso.com/x/y").type == .oidc)
    }

    @Test("knownAuthorities entries: host, host:port, URL, any case", arguments: [
        ("https://contoso.b2clogin.com/tfp/t/p", "CONTOSO.b2clogin.com"),
        ("https://contoso.b2clogin.com/tfp/t/p", "https://contoso.b2clogin.com/"),
        ("https://contoso.b2clogin.com:8443/tfp/t/p", "contoso.b2clogin.com:8443"),
        ("https://contoso.b2clogin.com:8443/tfp/t/p", "contoso.b2clogin.com"),
        ("http://127.0.0.1:4321/tfp/t/p", "127.0.0.1:4321"),
    ])
    func knownAuthorityEntries(url: String, entry: String) throws {
        #expect(try Authority(url, knownAuthorities: [entry]).type == .b2c)
    }

    @Test("A B2C host not in knownAuthorities is refused, and the message says to add it", arguments: [
        ("https://fabrikam.b2clogin.com/fabrikam.onmicrosoft.com/B2C_1_SignIn", AuthorityType?.none, [String]()),
        ("https://fabrikam.b2clogin.com/tfp/fabrikam.onmicrosoft.com/B2C_1_SignIn", nil, ["other.b2clogin.com"]),
        ("https://login.contoso.com/contoso.onmicrosoft.com/B2C_1_SignIn", .b2c, []),
        ("https://contoso.b2clogin.com:8443/tfp/t/p", nil, ["contoso.b2clogin.com:9443"]),
    ])
    func b2cNotKnown(url: String, type: AuthorityType?, known: [String]) {
        do {
            _ = try Authority(url, type: type, knownAuthorities: Set(known))
            Issue.record("expected an error")
        } catch {
            #expect(error == .internal(.invalidAuthority, ""))
            #expect(error.message.contains("knownAuthorities"))
            #expect(error.message.contains(URL(string: url)!.host!))
        }
    }

    @Test("A B2C authority without a tenant and a policy is invalid", arguments: [
        "https://contoso.b2clogin.com/tfp/contoso.onmicrosoft.com",
        "https://contoso.b2clogin.com/contoso.onmicrosoft.com",
        "https://contoso.b2clogin.com",
        "https://contoso.b2clogin.com/tfp",
    ])
    func b2cIncomplete(url: String) {
        #expect(throws: MSALError.internal(.invalidAuthority, "")) {
            try Authority(url, knownAuthorities: ["contoso.b2clogin.com"])
        }
    }

    // MARK: AD FS

    @Test("AD FS is inferred from /adfs, normalized to https://<host>/adfs", arguments: [
        "https://fs.contoso.com/adfs", "https://FS.contoso.com/ADFS/", "https://fs.contoso.com/adfs/oauth2/authorize",
    ])
    func adfs(url: String) throws {
        let authority = try Authority(url)
        #expect(authority.type == .adfs)
        #expect(authority.tenant == nil)
        #expect(authority.policy == nil)
        #expect(authority.url.absoluteString == "https://fs.contoso.com/adfs")
        #expect(authority.discoveryURL.absoluteString == "https://fs.contoso.com/adfs/.well-known/openid-configuration")
    }

    @Test("An explicit AD FS type needs the /adfs path; an Entra host keeps adfs as a tenant")
    func adfsExplicit() throws {
        #expect(try Authority("https://fs.contoso.com/adfs", type: .adfs).type == .adfs)
        #expect(throws: MSALError.internal(.invalidAuthority, "")) { try Authority("https://fs.contoso.com/realms/x", type: .adfs) }
        #expect(try Authority("https://login.microsoftonline.com/adfs").type == .aad)
    }

    @Test("Types round-trip through their raw values")
    func rawValues() {
        #expect(AuthorityType.allCases.map(\.rawValue) == ["aad", "oidc", "b2c", "adfs"])
    }

    @Test("Authorities parsed separately from equivalent strings are equal and hash alike; another tenant, host, port, type or policy differs")
    func equality() throws {
        let a = try Authority("https://login.microsoftonline.com/contoso.onmicrosoft.com")
        let b = try Authority("HTTPS://Login.MicrosoftOnline.com/contoso.onmicrosoft.com/")
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        #expect(a == a.withTenant("contoso.onmicrosoft.com"))
        #expect(a != (try Authority("https://login.microsoftonline.com/common")))
        #expect(a != (try Authority("https://login.microsoftonline.us/contoso.onmicrosoft.com")))
        #expect((try Authority("http://127.0.0.1:8080/t", type: .aad)) != (try Authority("http://127.0.0.1:8081/t", type: .aad)))
        #expect((try Authority("https://idp.example.com/adfs", type: .adfs)) != (try Authority("https://idp.example.com/adfs", type: .oidc)))
        let hosts: Set<String> = ["contoso.b2clogin.com"]
        let signIn = try Authority("https://contoso.b2clogin.com/tfp/contoso.onmicrosoft.com/B2C_1_signin", knownAuthorities: hosts)
        let edit = try Authority("https://contoso.b2clogin.com/tfp/contoso.onmicrosoft.com/B2C_1_edit", knownAuthorities: hosts)
        #expect(signIn != edit && signIn.policy == "B2C_1_signin" && edit.policy == "B2C_1_edit")
    }
}
