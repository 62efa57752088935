import Foundation
import MSALCache
@testable import MSALCacheKeyring
import MSALCore
import MSALTestSupport
import Testing

/// Machines where the keyring cannot be used, each set up for real in a child process (this test
/// binary, filtered to this test) so that it has its own environment, bus and keyring daemon:
/// no session bus, a bus address that does not connect, a bus with no Secret Service, a keyring with
/// no default collection, and a locked default collection. Each must fail fast with
/// `.internal(.cacheUnavailable)` and a message saying what to do. And a Secret Service that never
/// answers: the call must be cancelled after the service timeout (`.internal(.cacheError)`).
@Suite("Unusable keyrings", .enabled(if: ChildProcesses.run))
struct UnusableKeyring {
    enum Scenario: String, CaseIterable, Sendable {
        case noSessionBus
        case unreachableBus
        case noProvider
        case noDefaultCollection
        case lockedCollection
        case silentProvider

        /// The error code the scenario must produce.
        var expectedCode: MSALError.InternalCode { self == .silentProvider ? .cacheError : .cacheUnavailable }
    }

    static var childScenario: String? { ChildProcesses.childScenario }

    @Test("An unusable keyring is .cacheUnavailable with advice, fast and without a prompt", arguments: Scenario.allCases)
    func unusableKeyringScenario(_ scenario: Scenario) throws {
        if let child = Self.childScenario {
            guard child == scenario.rawValue else { return }  // the child plays one scenario
            try playChild(scenario)
            return
        }
        let result = try spawnChild(scenario)
        let marker = "MSAL-KEYRING-SCENARIO \(scenario.rawValue): \(scenario.expectedCode.rawValue): "
        let line = result.output.split(separator: "\n").first { $0.hasPrefix(marker) }.map { String($0.dropFirst(marker.count)) }
        #expect(result.status == 0, "the child failed:\n\(result.output)")
        let message = try #require(line, "the child did not report its scenario:\n\(result.output)")
        switch scenario {
        case .noSessionBus, .unreachableBus:
            #expect(message.contains("D-Bus session bus") && message.contains("dbus-run-session"))
        case .noProvider:
            #expect(message.contains("apt install gnome-keyring") && message.contains("KeePassXC"))
        case .noDefaultCollection:
            #expect(message.contains("no default keyring"))
        case .lockedCollection:
            #expect(message.contains("is locked") && message.contains("Unlock it"))
        case .silentProvider:
            #expect(message.contains("did not answer within 1 second while opening the token cache in the keyring"))
            return
        }
        #expect(message.contains("encrypted file or SQLite"))
    }

    // MARK: Child

    /// Sets the scenario up (where the process environment does not already), checks the store and
    /// the secret API fail as they should, and prints the message for the parent.
    private func playChild(_ scenario: Scenario) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msal-keyring-unusable-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let group = "org.swift-msal.tests.unusable"
        var existing: KeyringTokenCacheStore?
        var secret: [UInt8]?
        var silentService: ChildProcess?
        defer { silentService?.kill() }
        switch scenario {
        case .noSessionBus, .unreachableBus, .noProvider:
            break
        case .silentProvider:
            // Owns the Secret Service's name and never answers a call.
            let script = "import dbus, time\nbus = dbus.SessionBus()\nbus.request_name('org.freedesktop.secrets')\nprint('owned', flush=True)\ntime.sleep(600)\n"
            let service = try ChildProcess("/usr/bin/python3", ["-c", script], environment: ProcessInfo.processInfo.environment)
            silentService = service
            try #require(service.waitForOutput(containing: "owned", timeout: 60), "python3-dbus could not own the name: \(service.output)")
        case .noDefaultCollection:
            try SecretServiceClient.shared.withSession(timeout: 10) { session throws(KeyringProblem) in
                try session.setAlias("default", to: nil)
            }
        case .lockedCollection:
            let store = try KeyringTokenCacheStore(accessGroup: group, lockDirectory: directory)
            try store.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "h.t", secret: "AT-before"))]))
            try KeyringSecret.store([1, 2, 3], name: "key", accessGroup: group)
            existing = store
            secret = [1, 2, 3]
            try SecretServiceClient.shared.withSession(timeout: 10) { session throws(KeyringProblem) in
                try session.lock([try session.defaultCollection()])
            }
        }

        var messages: [String] = []
        let timeout: TimeInterval = scenario == .silentProvider ? 1 : 10
        func expectUnavailable(_ what: String, _ body: () throws -> Void) {
            do {
                try body()
                Issue.record("\(what) did not fail")
            } catch let error as MSALError {
                #expect(error == .internal(scenario.expectedCode, ""), "\(what): \(error)")
                #expect(!error.message.contains("AT-before"))
                messages.append(error.message)
            } catch {
                Issue.record("\(what) threw \(error)")
            }
        }
        expectUnavailable("opening a store") { _ = try KeyringTokenCacheStore(accessGroup: group, lockDirectory: directory, serviceTimeout: timeout) }
        expectUnavailable("loading a secret") { _ = try KeyringSecret.load(name: "key", accessGroup: group, serviceTimeout: timeout) }
        expectUnavailable("storing a secret") { try KeyringSecret.store([9], name: "key", accessGroup: group, serviceTimeout: timeout) }
        if let existing {
            expectUnavailable("reading an open store") { _ = try existing.readAll() }
            expectUnavailable("writing an open store") {
                try existing.apply(TokenCacheChange(upserts: [.accessToken(Sample.accessToken(home: "h.t", secret: "AT-while-locked"))]))
            }
        }
        if scenario == .silentProvider {
            #expect(messages.count == 3)
        } else {
            #expect(Set(messages).count == 1, "every operation gives the same advice: \(messages)")
        }
        print("MSAL-KEYRING-SCENARIO \(scenario.rawValue): \(scenario.expectedCode.rawValue): \(messages.first ?? "")")

        // Unlocked again (with the throwaway password), the store holds what it held before: the
        // failed change wrote nothing.
        if scenario == .lockedCollection, let existing, let password = ProcessInfo.processInfo.environment["MSAL_TEST_KEYRING_PASSWORD"] {
            try unlockLoginKeyring(password: password)
            #expect(try existing.readAll().accessTokens.values.map(\.secret) == ["AT-before"])
            #expect(try KeyringSecret.load(name: "key", accessGroup: group) == secret)
        }
    }

    /// Unlocks gnome-keyring's login keyring through its private `UnlockWithMasterPassword` method
    /// (python3-dbus), as only the password can; libsecret would need a prompt.
    private func unlockLoginKeyring(password: String) throws {
        let script = """
            import dbus, os
            bus = dbus.SessionBus()
            service = bus.get_object('org.freedesktop.secrets', '/org/freedesktop/secrets')
            _, session = dbus.Interface(service, 'org.freedesktop.Secret.Service').OpenSession('plain', dbus.String('', variant_level=1))
            unlock = dbus.Interface(service, 'org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface')
            secret = dbus.Struct((session, dbus.ByteArray(b''), dbus.ByteArray(os.environ['MSAL_TEST_KEYRING_PASSWORD'].encode()), 'text/plain'))
            unlock.UnlockWithMasterPassword(dbus.ObjectPath('/org/freedesktop/secrets/collection/login'), secret)
            """
        let process = try SpawnedProcess(
            "/usr/bin/python3", ["-c", script],
            environment: ProcessInfo.processInfo.environment.merging(["MSAL_TEST_KEYRING_PASSWORD": password]) { $1 })
        #expect(process.waitUntilExit().status == 0, "python3-dbus could not unlock the login keyring")
    }

    // MARK: Parent

    /// Runs this test binary, filtered to this test, as the child of `scenario`.
    /// - Returns: its exit status and combined output; a child still running after two minutes is
    ///   killed and reported as hanging.
    private func spawnChild(_ scenario: Scenario) throws -> (status: Int32, output: String) {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
        let testArguments = [binary, "--testing-library", "swift-testing", "--filter", "unusableKeyringScenario"]
        var environment = ProcessInfo.processInfo.environment
        environment["MSAL_KEYRING_SCENARIO"] = scenario.rawValue
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("msal-keyring-child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let command: [String]
        switch scenario {
        case .noSessionBus:
            environment["DBUS_SESSION_BUS_ADDRESS"] = nil
            environment["XDG_RUNTIME_DIR"] = work.path  // an empty runtime directory: no 'bus' socket
            command = testArguments
        case .unreachableBus:
            environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=" + work.appendingPathComponent("no-such-bus").path
            command = testArguments
        case .noProvider, .silentProvider:
            // A session bus that knows no service files, so nothing can be activated.
            let configuration = work.appendingPathComponent("session.conf")
            try """
                <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
                 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
                <busconfig>
                  <type>session</type>
                  <listen>unix:tmpdir=\(work.path)</listen>
                  <auth>EXTERNAL</auth>
                  <policy context="default">
                    <allow send_destination="*" eavesdrop="true"/>
                    <allow eavesdrop="true"/>
                    <allow own="*"/>
                  </policy>
                </busconfig>
                """.write(to: configuration, atomically: true, encoding: .utf8)
            command = ["/usr/bin/dbus-run-session", "--config-file=\(configuration.path)", "--"] + testArguments
        case .noDefaultCollection, .lockedCollection:
            command = [Keyring.repositoryRoot.appendingPathComponent("scripts/lib/keyring-session.sh").path] + testArguments
        }
        let result = try ChildProcess.run(command[0], Array(command.dropFirst()), environment: environment, timeout: 120)
        if result.timedOut {
            Issue.record("the \(scenario.rawValue) child hung for two minutes (a prompt or a blocked call)")
        }
        return (result.status, result.output)
    }
}

/// Whether the tests that start child processes run.
enum ChildProcesses {
    /// The scenario this process plays when it is a child, from `MSAL_KEYRING_SCENARIO`.
    static let childScenario = ProcessInfo.processInfo.environment["MSAL_KEYRING_SCENARIO"]

    /// The tools the parent needs: dbus-run-session, and what scripts/lib/keyring-session.sh needs.
    static let missingTools = ["/usr/bin/dbus-run-session", "/usr/bin/gnome-keyring-daemon", "/usr/bin/gdbus"]
        .filter { !FileManager.default.isExecutableFile(atPath: $0) }

    static let run: Bool = {
        if childScenario != nil || missingTools.isEmpty || Keyring.isRequired { return true }
        FileHandle.standardError.write(Data("Skipping the unusable-keyring tests: missing \(missingTools.joined(separator: ", ")) (scripts/install-deps.sh --test installs them).\n".utf8))
        return false
    }()
}
