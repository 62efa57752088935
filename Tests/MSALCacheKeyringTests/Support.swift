import Foundation
import MSALCache
@testable import MSALCacheKeyring
import MSALCore
import MSALTestSupport
import Synchronization
import Testing

/// The tests that use the real keyring (skipped, or failed under MSAL_KEYRING_REQUIRED=1, when no
/// Secret Service is reachable). Each test uses its own access group and lock directory.
///
/// Serialized: the keyring calls block their thread until gnome-keyring answers, and it answers
/// one call at a time (rewriting its file for each item written). Run side by side, these tests
/// held both of the test process's cooperative threads on a 2-core machine for about a minute,
/// and every other suite's tests waited behind them (the whole first `swift test` run of
/// scripts/test.sh took 80 s, a loopback HTTP test 60 s; one after another: 50 s and 21 s).
@Suite("Keyring (real Secret Service)", .enabled(if: Keyring.testsRun), .serialized)
struct KeyringTests {}

/// Whether the keyring tests can run, and how they reach the keyring.
enum Keyring {
    static let environment = ProcessInfo.processInfo.environment

    /// `MSAL_KEYRING_REQUIRED=1` (set by scripts/test.sh): a missing keyring fails the tests
    /// instead of skipping them.
    static let isRequired = environment["MSAL_KEYRING_REQUIRED"] == "1"

    /// Whether the keyring is a throwaway one made by scripts/lib/keyring-session.sh.
    static let isThrowaway = environment["MSAL_TEST_KEYRING_SESSION"] == "1"

    /// Why no Secret Service is reachable, or `nil` when one is.
    static let unreachableReason: String? = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msal-keyring-probe-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            _ = try KeyringTokenCacheStore(accessGroup: "org.swift-msal.tests.probe", lockDirectory: directory)
            return nil
        } catch {
            return (error as? MSALError)?.message ?? "\(error)"
        }
    }()

    /// Whether the keyring tests run: a keyring is reachable, or it is required (then they fail).
    static let testsRun: Bool = {
        if let reason = unreachableReason, !isRequired {
            FileHandle.standardError.write(Data("Skipping the keyring tests: \(reason) (scripts/lib/keyring-session.sh provides a keyring).\n".utf8))
            return false
        }
        return true
    }()

    /// The repository's root directory (this file is Tests/MSALCacheKeyringTests/Support.swift).
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}

/// A fresh access group and lock directory for one test; the group's keyring items and the
/// directory are removed when the value goes away.
final class KeyringFixture: Sendable {
    let accessGroup: String
    let lockDirectory: String

    init(_ name: String = "store") {
        accessGroup = "org.swift-msal.tests.\(name).\(UUID().uuidString.lowercased())"
        lockDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("msal-keyring-tests-\(UUID().uuidString)").path
    }

    /// A store of the fixture's group and lock directory, with a generous lock timeout: all tests
    /// of the run share one keyring daemon (a hang guard, not a speed limit).
    func store(accessGroup: String? = nil) throws -> KeyringTokenCacheStore {
        try KeyringTokenCacheStore(accessGroup: accessGroup ?? self.accessGroup, lockDirectory: lockDirectory, lockTimeout: 120)
    }

    /// The lock file of the fixture's group.
    var lockFile: KeyringLockFile {
        KeyringLockFile(directory: lockDirectory, accessGroup: accessGroup, timeout: 10)
    }

    deinit {
        for group in [accessGroup, accessGroup + ".other"] {
            try? KeyringItems.removeAll(accessGroup: group)
        }
        try? FileManager.default.removeItem(atPath: lockDirectory)
    }
}

/// Direct access to the keyring items, bypassing the store.
enum KeyringItems {
    /// Removes every item (token cache and secret schemas) of `accessGroup`.
    static func removeAll(accessGroup: String) throws {
        try SecretServiceClient.shared.withSession(timeout: 10) { session throws(KeyringProblem) in
            for schema in [KeyringItemLayout.tokenCacheSchema, KeyringItemLayout.secretSchema] {
                let found = try session.search([KeyringItemLayout.schemaAttribute: schema, KeyringItemLayout.Attribute.accessGroup: accessGroup])
                for path in found.unlocked { try session.delete(path) }
            }
        }
    }

    /// The paths of the items of `accessGroup` with `extra` attributes.
    static func paths(accessGroup: String, _ extra: [String: String] = [:]) throws -> [String] {
        let attributes = [KeyringItemLayout.schemaAttribute: KeyringItemLayout.tokenCacheSchema, KeyringItemLayout.Attribute.accessGroup: accessGroup]
            .merging(extra) { $1 }
        return try SecretServiceClient.shared.withSession(timeout: 10) { session throws(KeyringProblem) -> [String] in
            try session.search(attributes).unlocked
        }
    }

    /// The journals of `accessGroup`, decoded.
    static func journals(accessGroup: String) throws -> [JournalRecord] {
        let paths = try paths(accessGroup: accessGroup, ["kind": KeyringItemLayout.journalKind])
        let secrets = try SecretServiceClient.shared.withSession(timeout: 10) { session throws(KeyringProblem) -> [String: [UInt8]] in
            try session.secrets(paths)
        }
        return try secrets.values.map { try JournalRecord(decoding: $0) }
    }

    /// Stores an item as a foreign program could (tests of unusual contents).
    static func create(accessGroup: String, attributes: [String: String], secret: [UInt8]) throws {
        let all = [KeyringItemLayout.schemaAttribute: KeyringItemLayout.tokenCacheSchema, KeyringItemLayout.Attribute.accessGroup: accessGroup]
            .merging(attributes) { $1 }
        try SecretServiceClient.shared.withSession(timeout: 10) { session throws(KeyringProblem) in
            _ = try session.createItem(in: session.defaultCollection(), label: "test item", attributes: all, secret: secret, contentType: "application/json")
        }
    }
}

/// `secret-tool` (libsecret-tools), a second program reading the keyring.
enum SecretTool {
    static let path = "/usr/bin/secret-tool"

    /// One item as `secret-tool search` prints it.
    struct Item {
        var label = ""
        var secret = ""
        var schema = ""
        var attributes: [String: String] = [:]
    }

    /// The one item whose attributes include `attributes`, or `nil` when none does. (When its output
    /// is not a terminal, secret-tool prints label, secret and schema to standard output and the
    /// attributes to standard error, so a search must match one item to keep them together.)
    static func item(_ attributes: [String: String]) throws -> Item? {
        let process = try SpawnedProcess(
            path, ["search"] + attributes.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] },
            standardOutput: .pipe, standardError: .pipe)
        let output = try process.readOutputAndWaitUntilExit()
        let outputText = output.standardOutputText
        let errorText = output.standardErrorText
        if outputText.isEmpty { return nil }
        var item = Item()
        for line in (outputText + "\n" + errorText).split(separator: "\n") {
            guard let range = line.range(of: " = ") else { continue }
            let name = String(line[..<range.lowerBound])
            let value = String(line[range.upperBound...])
            switch name {
            case "label": item.label = value
            case "secret": item.secret = value
            case "schema": item.schema = value
            case _ where name.hasPrefix("attribute."): item.attributes[String(name.dropFirst("attribute.".count))] = value
            default: break
            }
        }
        return item
    }
}

/// Entries for the tests.
enum Sample {
    static let environment = "login.microsoftonline.com"
    static let clientID = "c11e0000-0000-4000-8000-000000000001"
    static let tenant = "aaaaaaaa-0000-4000-8000-00000000aaaa"
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    static func accessToken(home: String, target: String = "User.Read", secret: String = "AT-secret") -> AccessTokenEntry {
        AccessTokenEntry(
            homeAccountID: home, environment: environment, clientID: clientID, realm: tenant, target: target,
            secret: secret, cachedAt: t0, expiresOn: t0.addingTimeInterval(3600))
    }

    static func account(home: String) -> AccountEntry {
        AccountEntry(homeAccountID: home, environment: environment, realm: tenant, localAccountID: home, username: "\(home)@example")
    }

    /// One entry of every kind, each with fields this version does not model.
    static func everyKind(home: String) -> [CacheEntry] {
        var at = accessToken(home: home, target: "User.Read Mail.Send", secret: "AT-\(home)")
        at.extendedExpiresOn = t0.addingTimeInterval(7200)
        at.refreshOn = t0.addingTimeInterval(1800)
        at.additionalFields = ["future": .object(["nested": .array([.bool(true), .null, .number(1.5)])])]
        return [
            .accessToken(at),
            .refreshToken(RefreshTokenEntry(
                homeAccountID: home, environment: environment, clientID: clientID, familyID: "1", secret: "RT-\(home)",
                target: "User.Read offline_access", additionalFields: ["last_modification_time": .string("1700000000")])),
            .idToken(IDTokenEntry(
                homeAccountID: home, environment: environment, clientID: clientID, realm: tenant, secret: "ID-\(home)",
                additionalFields: ["unknown": .string("kept")])),
            .account(AccountEntry(
                homeAccountID: home, environment: environment, realm: tenant, localAccountID: "local", username: "user@contoso.com",
                authorityType: "MSSTS", accountSource: "device_code", name: "N", givenName: "G", familyName: "F",
                additionalFields: ["client_info": .string("abc")])),
            .appMetadata(AppMetadataEntry(clientID: clientID, environment: environment, familyID: "1", additionalFields: ["x": .number(2)])),
        ]
    }
}

/// Whether `error` is an ``MSALError`` with internal code `code`.
func isMSALError(_ error: any Error, _ code: MSALError.InternalCode, containing text: String = "") -> Bool {
    guard let error = error as? MSALError else { return false }
    return error == .internal(code, "") && (text.isEmpty || error.message.contains(text))
}

/// A program run as a child process (a ``SpawnedProcess``: every signal unblocked and at its default
/// disposition, its own process group, no descriptor of this process but 0, 1 and 2) whose standard
/// output and standard error go into one pipe, read on a thread of its own so that a chatty child
/// never blocks on a full pipe. When the child ends, whatever it left running in its process group
/// is killed.
final class ChildProcess: Sendable {
    /// The outcome of one run.
    struct Result {
        /// The exit status (128 + signal number when a signal ended it).
        var status: Int32
        /// Standard output and standard error, interleaved.
        var output: String
        /// Whether it was still running at the deadline and was killed.
        var timedOut: Bool
    }

    /// The process ID (also its process group ID).
    var pid: pid_t { process.pid }
    private let process: SpawnedProcess
    private let received = Mutex(Data())
    /// Entered until the pipe is read to its end.
    private let reading = DispatchGroup()

    /// Starts `executable` with `arguments` and `environment`.
    /// - Throws: ``SpawnedProcess/SystemError`` when it cannot be started.
    init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        process = try SpawnedProcess(
            executable, arguments, environment: environment, standardOutput: .pipe, standardError: .standardOutput,
            killsGroupOnExit: true)
        reading.enter()
        Thread { [self] in
            if let pipe = process.standardOutput {
                // A read error ends the output as end of file does.
                while let chunk = try? pipe.read(), !chunk.isEmpty {
                    received.withLock { $0.append(chunk) }
                }
                pipe.close()
            }
            reading.leave()
        }.start()
    }

    /// The output so far.
    var output: String { received.withLock { String(decoding: $0, as: UTF8.self) } }

    /// Waits until the output contains `text`, the process ends (and its output is read), or
    /// `timeout` seconds pass.
    /// - Returns: whether the output contains `text`.
    func waitForOutput(containing text: String, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if output.contains(text) { return true }
            if !process.isRunning {
                _ = reading.wait(timeout: .now() + max(deadline.timeIntervalSinceNow, 0))
                break
            }
            usleep(5_000)
        }
        return output.contains(text)
    }

    /// Sends SIGKILL to the process group (nothing once the process has ended: its group was killed then).
    func kill() {
        process.send(SIGKILL, toGroup: true)
    }

    /// Waits for the process to end (killing its group after `timeout` seconds: a hang guard, not
    /// a speed check; whatever of its group is left is killed when it ends), then for the end of its output.
    func wait(timeout: TimeInterval) -> Result {
        var timedOut = false
        let termination: SpawnedProcess.Termination
        if let ended = process.waitUntilExit(timeout: timeout) {
            termination = ended
        } else {
            timedOut = true
            kill()
            termination = process.waitUntilExit()
        }
        reading.wait()
        return Result(status: termination.shellStatus, output: output, timedOut: timedOut)
    }

    /// Runs `executable` to its end (see ``wait(timeout:)``).
    /// - Throws: ``SpawnedProcess/SystemError`` when it cannot be started.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String], timeout: TimeInterval) throws -> Result {
        try ChildProcess(executable, arguments, environment: environment).wait(timeout: timeout)
    }
}
