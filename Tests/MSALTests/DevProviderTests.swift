import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MSALTestSupport
import Synchronization
import Testing

/// `msal dev-provider` as a developer runs it: a subprocess that prints one line, serves the
/// provider and its control API over HTTP, and exits 0 on SIGTERM.
@Suite("msal dev-provider")
struct DevProviderTests {
    /// A running `msal dev-provider` and its first stdout line.
    final class Server: Sendable {
        /// The server; its standard error is a pipe kept open (never read) so that the server's
        /// stderr writes never fail.
        let process: SpawnedProcess
        let firstLine: String

        init(_ arguments: [String]) async throws {
            try #require(FileManager.default.isExecutableFile(atPath: ToolTests.binary), "build the tool first: swift build --product msal")
            let process = try SpawnedProcess(
                ToolTests.binary, ["dev-provider"] + arguments,
                environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("MSAL_") },
                standardOutput: .pipe, standardError: .pipe)
            // A server that never prints is killed, so the read below ends. A hang guard, not a speed
            // check: at the start of the whole parallel suite on two cores a debug server has taken
            // close to 30 s to print, and was killed right after.
            let watchdog = DispatchWorkItem { if process.isRunning { process.interrupt(); process.kill() } }
            DispatchQueue.global().asyncAfter(deadline: .now() + 180, execute: watchdog)
            let out = try #require(process.standardOutput)
            let line: String = await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    var data = Data()
                    while !data.contains(UInt8(ascii: "\n")) {
                        let chunk = (try? out.read()) ?? Data()
                        if chunk.isEmpty { break }
                        data.append(chunk)
                    }
                    let text = String(decoding: data, as: UTF8.self)
                    continuation.resume(returning: String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? ""))
                }
            }
            watchdog.cancel()
            self.process = process
            self.firstLine = line
        }

        /// The first line as JSON (with `--output json`).
        func startup() throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(firstLine.utf8)) as? [String: Any], "first line: \(firstLine)")
        }

        /// Sends SIGTERM and returns the exit status.
        func terminate() async -> Int32 {
            process.terminate()
            let termination = await process.waitForExit()
            process.standardOutput?.close()
            process.standardError?.close()
            return termination.status
        }
    }

    /// One HTTP request; `form` is sent form-encoded, `json` as JSON.
    func send(_ method: String, _ url: String, form: [String: String]? = nil, json: [String: Any]? = nil) async throws -> (status: Int, body: [String: Any]) {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = method
        if let form {
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            request.httpBody = Data(form.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&").utf8)
        }
        if let json {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = try #require(response as? HTTPURLResponse).statusCode
        return (status, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
    }

    /// Device authorization, approval through the control API, one poll.
    func deviceCodeSignIn(_ base: String, clientID: String, username: String? = nil) async throws -> [String: Any] {
        let code = try await send("POST", "\(base)/organizations/oauth2/v2.0/devicecode", form: ["client_id": clientID, "scope": "user.read openid offline_access"])
        #expect(code.status == 200)
        var approval: [String: Any] = ["user_code": try #require(code.body["user_code"] as? String)]
        if let username { approval["username"] = username }
        let approved = try await send("POST", "\(base)/_control/device/approve", json: approval)
        #expect(approved.status == 200, "\(approved.body)")
        let tokens = try await send("POST", "\(base)/organizations/oauth2/v2.0/token", form: [
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "client_id": clientID,
            "device_code": try #require(code.body["device_code"] as? String), "client_info": "1",
        ])
        #expect(tokens.status == 200, "\(tokens.body)")
        return tokens.body
    }

    @Test("Device-code sign-in over HTTP, approved through the control API; the log is redacted; SIGTERM exits 0")
    func deviceCodeSignIn() async throws {
        let server = try await Server(["--port", "0", "--output", "json"])
        let startup = try server.startup()
        let base = try #require(startup["base_url"] as? String)
        #expect(base.hasPrefix("http://127.0.0.1:"))
        #expect((startup["port"] as? Int).map { $0 > 0 } == true)
        let clientID = try #require((startup["clients"] as? [[String: Any]])?.first?["client_id"] as? String)
        #expect((startup["users"] as? [[String: Any]])?.first?["username"] as? String == "alice@contoso.example")
        #expect((startup["tenants"] as? [[String: Any]])?.first?["domains"] as? [String] == ["contoso.example"])

        let tokens = try await deviceCodeSignIn(base, clientID: clientID)
        #expect((tokens["access_token"] as? String)?.isEmpty == false)
        let refreshToken = try #require(tokens["refresh_token"] as? String)

        let log = try await send("GET", "\(base)/_control/requests")
        let requests = try #require(log.body["requests"] as? [[String: Any]])
        #expect(requests.map { $0["endpoint"] as? String } == ["devicecode", "token"])
        let text = String(decoding: try JSONSerialization.data(withJSONObject: log.body), as: UTF8.self)
        #expect(!text.contains(refreshToken))
        #expect((requests[1]["parameters"] as? [String: String])?["device_code"] == "<redacted>")

        // An unregistered client is refused, as Entra refuses an unknown application.
        let stranger = try await send("POST", "\(base)/organizations/oauth2/v2.0/devicecode", form: ["client_id": "0b5c4d2a-1e3f-4a6b-8c7d-9e0f1a2b3c4d", "scope": "openid"])
        #expect(stranger.status == 400)
        #expect(stranger.body["error"] as? String == "unauthorized_client")

        #expect(await server.terminate() == 0)
    }

    @Test("--config and --state: users, families and refresh tokens survive a restart")
    func configAndState() async throws {
        let directory = TemporaryDirectory()
        let teams = "1fec8e78-bce4-4aaf-ab1b-5451cc387264", office = "d3590ed6-52b3-4102-aeff-aad2292ab01c"
        let config: [String: Any] = [
            "tenants": [["tenant_id": "bbbbbbbb-cccc-4ddd-8eee-ffffffffffff", "domain": "fabrikam.example"]],
            "users": [["username": "bob@fabrikam.example", "object_id": "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "name": "Bob"]],
            "clients": [["client_id": teams, "family_id": "1"], ["client_id": office, "family_id": "1"]],
            "refresh_in": 1800, "device_code_interval": 0,
        ]
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: directory.path("config.json")))
        let arguments = ["--port", "0", "--output", "json", "--config", directory.path("config.json"), "--state", directory.path("state.json")]

        let first = try await Server(arguments)
        let base = try #require(try first.startup()["base_url"] as? String)
        let tokens = try await deviceCodeSignIn(base, clientID: teams, username: "bob@fabrikam.example")
        #expect(tokens["foci"] as? String == "1")
        #expect(tokens["refresh_in"] as? Int == 1800)
        #expect(await first.terminate() == 0)

        let saved = try #require(FileManager.default.contents(atPath: directory.path("state.json")))
        #expect(String(decoding: saved, as: UTF8.self).contains(try #require(tokens["refresh_token"] as? String)))
        let mode = try FileManager.default.attributesOfItem(atPath: directory.path("state.json"))[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let second = try await Server(arguments)
        let secondBase = try #require(try second.startup()["base_url"] as? String)
        let refreshed = try await send("POST", "\(secondBase)/organizations/oauth2/v2.0/token", form: [
            "grant_type": "refresh_token", "client_id": office, "refresh_token": try #require(tokens["refresh_token"] as? String),
            "scope": "user.read openid offline_access",
        ])
        #expect(refreshed.status == 200, "\(refreshed.body)")
        #expect(refreshed.body["foci"] as? String == "1")
        #expect(await second.terminate() == 0)
    }

    @Test("The text line names the base URL, tenants, clients and users")
    func textLine() async throws {
        let server = try await Server(["--port", "0"])
        #expect(server.firstLine.hasPrefix("msal dev-provider: listening at http://127.0.0.1:"))
        #expect(server.firstLine.contains("alice@contoso.example"))
        #expect(server.firstLine.contains("4a1d9e3b-7c2f-4e8a-b5d6-0f3e9c2a7b18"))
        #expect(await server.terminate() == 0)
    }

    @Test("Usage errors exit 2", arguments: [
        ["--port", "70000"], ["--bogus"], ["--state", "/nonexistent-dir/state.json"], ["--config", "/nonexistent-dir/config.json"],
        ["--output", "xml"],
    ])
    func usage(arguments: [String]) async throws {
        let run = try await ToolTests().msal(["dev-provider"] + arguments)
        #expect(run.status == 2)
        #expect(run.stderr.contains("usage error"))
    }

    @Test("A configuration with an unknown key is a usage error naming it")
    func unknownConfigKey() async throws {
        let directory = TemporaryDirectory()
        try Data(#"{"users": [{"username": "a@b.example", "object_id": "x", "tenant": "t"}]}"#.utf8)
            .write(to: URL(fileURLWithPath: directory.path("config.json")))
        let run = try await ToolTests().msal(["dev-provider", "--config", directory.path("config.json")])
        #expect(run.status == 2)
        #expect(run.stderr.contains("'tenant'"))
    }

    @Test("Configurations that reference an unknown tenant, repeat a user or list no user are usage errors", arguments: [
        (#"{"tenants": [{"tenant_id": "t1"}], "users": [{"username": "a@b.example", "object_id": "x", "tenant_id": "nope"}]}"#, "not in tenants"),
        (#"{"users": [{"username": "a@b.example", "object_id": "x", "tenant_id": "t"}, {"username": "A@b.example", "object_id": "y", "tenant_id": "t"}]}"#, "listed twice"),
        (#"{"users": []}"#, "users is empty"),
    ])
    func invalidConfigurations(config: String, message: String) async throws {
        let directory = TemporaryDirectory()
        try Data(config.utf8).write(to: URL(fileURLWithPath: directory.path("config.json")))
        let run = try await ToolTests().msal(["dev-provider", "--config", directory.path("config.json")])
        #expect(run.status == 2)
        #expect(run.stderr.contains(message))
    }
}
