import Foundation
import MSALCore
import MSALNetwork
import Testing

@Suite("URLSessionTransport and IPv6 literals")
struct IPv6LiteralTests {
    @Test("An IPv6-literal URL is refused with a message that says what to use instead")
    func ipv6Literal() async throws {
        let transport = URLSessionTransport(timeout: 2)
        do {
            _ = try await transport.send(HTTPRequest(method: "GET", url: URL(string: "http://[::1]:9/x")!, headers: [:], body: nil))
            Issue.record("expected networkError")
        } catch {
            #expect(error == .internal(.networkError, ""))
            #expect(error.message.contains("127.0.0.1"))
        }
    }
}
