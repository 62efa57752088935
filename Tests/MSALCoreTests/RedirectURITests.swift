import Foundation
import MSALCore
import Testing

@Suite("RedirectURI")
struct RedirectURITests {
    private let appID = "com.contoso.App"

    /// Asserts that `string` is refused with `.invalidRedirectURI` and a message containing `fragment`.
    private func expectRefused(
        _ string: String,
        applicationID: String? = "com.contoso.App",
        messageContains fragment: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            let uri = try RedirectURI(string, applicationID: applicationID)
            Issue.record("'\(string)' was accepted as \(uri.kind)", sourceLocation: sourceLocation)
        } catch {
            #expect(error == .internal(.invalidRedirectURI, ""), sourceLocation: sourceLocation)
            #expect(error.internalCode == .invalidRedirectURI, sourceLocation: sourceLocation)
            #expect(error.message.contains(fragment), "message: \(error.message)", sourceLocation: sourceLocation)
        }
    }

    // MARK: Accepted

    @Test("http://127.0.0.1 without a port: loopback, any port, path /")
    func loopbackIPv4AnyPort() throws {
        let uri = try RedirectURI("http://127.0.0.1", applicationID: nil)
        #expect(uri.kind == .loopback(host: "127.0.0.1", port: nil, path: "/"))
        #expect(uri.isLoopback)
        #expect(uri.url.absoluteString == "http://127.0.0.1")
        #expect(uri.description == "http://127.0.0.1")
    }

    @Test("http://localhost with a port and a path keeps both; the host is lowercased in kind, not in url")
    func loopbackLocalhostPortPath() throws {
        let uri = try RedirectURI("  http://LocalHost:8400/auth/callback ", applicationID: nil)
        #expect(uri.kind == .loopback(host: "localhost", port: 8400, path: "/auth/callback"))
        #expect(uri.url.absoluteString == "http://LocalHost:8400/auth/callback")
    }

    @Test("msauth.<applicationID>://auth is accepted, the ID compared ignoring case")
    func msauthMatchingID() throws {
        let uri = try RedirectURI("msauth.com.contoso.app://auth", applicationID: appID)
        #expect(uri.kind == .customScheme(scheme: "msauth.com.contoso.app"))
        #expect(!uri.isLoopback)
        let built = try RedirectURI(RedirectURI.msauth(applicationID: appID), applicationID: appID)
        #expect(built.url.absoluteString == "msauth.com.contoso.App://auth")
    }

    @Test("Private-use schemes are accepted (RFC 8252 §7.1)", arguments: [
        ("com.contoso.app:/callback", "com.contoso.app"),
        ("myapp://auth", "myapp"),
        ("MSAL00000000-0000-0000-0000-000000000000://auth", "msal00000000-0000-0000-0000-000000000000"),
    ])
    func customScheme(string: String, scheme: String) throws {
        let uri = try RedirectURI(string, applicationID: nil)
        #expect(uri.kind == .customScheme(scheme: scheme))
        #expect(uri.url.absoluteString == string)
    }

    @Test("withPort puts the bound port into a loopback URI and leaves a custom scheme alone")
    func withPort() throws {
        let any = try RedirectURI("http://localhost/cb?x=1", applicationID: nil).withPort(51_234)
        #expect(any.url.absoluteString == "http://localhost:51234/cb?x=1")
        #expect(any.kind == .loopback(host: "localhost", port: 51_234, path: "/cb"))

        let fixed = try RedirectURI("http://127.0.0.1:8400", applicationID: nil).withPort(9000)
        #expect(fixed.url.absoluteString == "http://127.0.0.1:9000")
        #expect(fixed.kind == .loopback(host: "127.0.0.1", port: 9000, path: "/"))

        let custom = try RedirectURI("myapp://auth", applicationID: nil)
        #expect(custom.withPort(9000) == custom)
    }

    @Test("msauth builds msauth.<id>://auth")
    func msauthBuilder() {
        #expect(RedirectURI.msauth(applicationID: "com.contoso.App") == "msauth.com.contoso.App://auth")
    }

    // MARK: Refused

    @Test("A fragment is refused (RFC 6749 §3.1.2)")
    func fragment() {
        expectRefused("http://localhost:8400/cb#frag", messageContains: "fragment")
        expectRefused("myapp://auth#", messageContains: "fragment")
    }

    @Test("A URI without a scheme is refused", arguments: ["//localhost/cb", "localhost:8400", "127.0.0.1:8400/cb", "/callback"])
    func noScheme(string: String) {
        expectRefused(string, messageContains: "no scheme")
    }

    @Test("An http URI without a host is refused", arguments: ["http:///callback", "http:/callback"])
    func noHost(string: String) {
        expectRefused(string, messageContains: "no host")
    }

    @Test("A private-use scheme with nothing after it is refused")
    func customSchemeEmpty() {
        expectRefused("myapp:", messageContains: "nothing after its scheme")
    }

    @Test("The out-of-band URN is refused", arguments: ["urn:ietf:wg:oauth:2.0:oob", "URN:ietf:wg:oauth:2.0:oob:auto"])
    func outOfBand(string: String) {
        expectRefused(string, messageContains: "out-of-band")
    }

    @Test("http on a host that is not 127.0.0.1 or localhost is refused", arguments: [
        "http://contoso.com/cb", "http://127.0.0.2:8400", "http://[::1]:8400", "https://contoso.com/cb",
    ])
    func httpNonLoopback(string: String) {
        expectRefused(string, messageContains: "loopback redirect on 127.0.0.1 or localhost")
    }

    @Test("https on a loopback host is refused: the listener cannot serve TLS", arguments: ["https://localhost:8400", "https://127.0.0.1/cb"])
    func httpsLoopback(string: String) {
        expectRefused(string, messageContains: "cannot serve TLS")
    }

    @Test("Port 0 and user information are refused on a loopback redirect")
    func loopbackOddities() {
        expectRefused("http://127.0.0.1:0/cb", messageContains: "1–65535")
        expectRefused("http://user@localhost/cb", messageContains: "user information")
    }

    @Test("msauth.<another id>://auth is refused and the message names the expected URI")
    func msauthOtherID() {
        expectRefused("msauth.com.fabrikam.App://auth", messageContains: "msauth.com.contoso.App://auth")
    }

    @Test("msauth.<id> with another host or a path is refused")
    func msauthWrongShape() {
        expectRefused("msauth.com.contoso.App://callback", messageContains: "must be exactly")
        expectRefused("msauth.com.contoso.App://auth/x", messageContains: "must be exactly")
    }

    @Test("Any msauth. scheme is refused when no application ID is configured")
    func msauthWithoutApplicationID() {
        expectRefused("msauth.com.contoso.App://auth", applicationID: nil, messageContains: "application ID to be configured")
        expectRefused("msauth.com.contoso.App://auth", applicationID: "", messageContains: "application ID to be configured")
    }

    @Test("A scheme outside RFC 3986 §3.1 syntax is refused", arguments: ["my_app://auth", "1app://auth", "my app://auth", "mý-app://auth"])
    func badSchemeCharacters(string: String) {
        expectRefused(string, messageContains: "not a valid URI scheme")
    }
}
