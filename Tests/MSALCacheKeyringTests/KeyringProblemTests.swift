import Foundation
import MSALCache
@testable import MSALCacheKeyring
import MSALCore
import Testing

/// The pure parts: error classification, the item layout, the lock file. No keyring needed.
@Suite("Keyring error classification and layout")
struct KeyringProblemTests {
    typealias Failure = SecretServiceFailure

    static let cases: [(Failure, KeyringProblem.Step, KeyringProblem)] = [
        (Failure(origin: .dbus("org.freedesktop.Secret.Error.IsLocked"), message: "Cannot create an item in a locked collection"), .operation, .locked),
        (Failure(origin: .dbus("org.freedesktop.Secret.Error.IsLocked"), message: "locked"), .connecting, .locked),
        (Failure(origin: .dbus("org.freedesktop.DBus.Error.ServiceUnknown"), message: "The name org.freedesktop.secrets was not provided by any .service files"),
         .connecting, .noProvider("The name org.freedesktop.secrets was not provided by any .service files")),
        (Failure(origin: .dbus("org.freedesktop.DBus.Error.NameHasNoOwner"), message: "gone"), .operation, .noProvider("gone")),
        (Failure(origin: .dbus("org.freedesktop.DBus.Error.Spawn.ChildExited"), message: "exited with status 1"), .connecting, .noProvider("exited with status 1")),
        (Failure(origin: .dbus("org.freedesktop.Secret.Error.NoSuchObject"), message: "No such item"), .operation, .noSuchObject("No such item")),
        (Failure(origin: .dbus("org.freedesktop.DBus.Error.UnknownObject"), message: "No such object"), .operation, .noSuchObject("No such object")),
        (Failure(origin: .dbus("org.freedesktop.DBus.Error.NoReply"), message: "Timeout was reached"), .operation, .timedOut(seconds: 7)),
        (Failure(origin: .dbus("org.freedesktop.DBus.Error.TimedOut"), message: "t"), .connecting, .timedOut(seconds: 7)),
        (Failure(origin: .io(.cancelled), message: "Operation was cancelled"), .operation, .timedOut(seconds: 7)),
        (Failure(origin: .io(.timedOut), message: "Timeout was reached"), .connecting, .timedOut(seconds: 7)),
        (Failure(origin: .io(.other(1)), message: "Could not connect: No such file or directory"), .connecting,
         .noSessionBus("Could not connect: No such file or directory")),
        (Failure(origin: .io(.other(0)), message: "Cannot autolaunch D-Bus without X11 $DISPLAY"), .connecting,
         .noSessionBus("Cannot autolaunch D-Bus without X11 $DISPLAY")),
        (Failure(origin: .io(.closed), message: "The connection is closed"), .operation, .failed("The connection is closed")),
        (Failure(origin: .dbus("org.freedesktop.DBus.Error.Disconnected"), message: "bye"), .connecting, .noSessionBus("bye")),
        (Failure(origin: .dbus("org.freedesktop.DBus.Error.Disconnected"), message: "bye"), .operation, .failed("bye")),
        (Failure(origin: .dbus("org.freedesktop.DBus.Error.AccessDenied"), message: "denied"), .operation, .failed("denied")),
        (Failure(origin: .other(domain: "g-file-error-quark", code: 4), message: "odd"), .operation, .failed("odd")),
    ]

    @Test("GError classification", arguments: 0..<cases.count)
    func classification(_ index: Int) {
        let (failure, step, expected) = Self.cases[index]
        #expect(KeyringProblem.classify(failure, step: step, timeout: 7) == expected)
    }

    @Test("An unusable keyring is .cacheUnavailable and says what to install, unlock or choose instead")
    func unavailabilityMessages() {
        let advice: [(KeyringProblem, [String])] = [
            (.noSessionBus("no bus"), ["D-Bus session bus", "no bus", "dbus-run-session"]),
            (.noProvider("not provided"), ["org.freedesktop.secrets", "apt install gnome-keyring", "KeePassXC"]),
            (.locked, ["locked", "never shows an unlock prompt", "Unlock it"]),
            (.noDefaultCollection, ["no default keyring", "login keyring"]),
        ]
        for (problem, phrases) in advice {
            let error = problem.error(doing: "reading the token cache")
            #expect(problem.isUnavailability)
            #expect(error == .internal(.cacheUnavailable, ""))
            #expect(error.message.contains("encrypted file or SQLite store"))
            for phrase in phrases { #expect(error.message.contains(phrase), "\(problem): \(phrase)") }
        }
    }

    @Test("Other failures are .cacheError naming what the store was doing")
    func failureMessages() {
        for problem: KeyringProblem in [.timedOut(seconds: 3), .failed("Invalid arguments"), .noSuchObject("No such item")] {
            let error = problem.error(doing: "storing a change in the keyring")
            #expect(!problem.isUnavailability)
            #expect(error == .internal(.cacheError, ""))
            #expect(error.message.contains("storing a change in the keyring"))
        }
        #expect(KeyringProblem.timedOut(seconds: 3).error(doing: "x").message.contains("within 3 seconds while x"))
        #expect(KeyringProblem.timedOut(seconds: 1).error(doing: "x").message.contains("within 1 second while x"))
        #expect(KeyringProblem.failed("Invalid arguments").error(doing: "x").message.contains("(Invalid arguments)"))
    }

    @Test("A session bus is expected only where the environment names one")
    func sessionBusFromEnvironment() {
        let exists: (String) -> Bool = { $0 == "/run/user/1000/bus" }
        #expect(KeyringProblem.sessionBusProblem(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"], fileExists: { _ in false }) == nil)
        #expect(KeyringProblem.sessionBusProblem(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], fileExists: exists) == nil)
        #expect(KeyringProblem.sessionBusProblem(environment: ["DBUS_SESSION_BUS_ADDRESS": "", "XDG_RUNTIME_DIR": "/run/user/1000"], fileExists: exists) == nil)
        guard case .noSessionBus? = KeyringProblem.sessionBusProblem(environment: ["XDG_RUNTIME_DIR": "/run/user/2000"], fileExists: exists) else {
            Issue.record("a runtime directory without a bus socket is no bus")
            return
        }
        #expect(KeyringProblem.sessionBusProblem(environment: ["XDG_RUNTIME_DIR": "run/user/1000"], fileExists: { _ in true }) != nil)  // not absolute
        #expect(KeyringProblem.sessionBusProblem(environment: [:], fileExists: { _ in true }) != nil)
    }

    // MARK: Layout

    @Test("MSAL's keychain type numbers")
    func typeNumbers() {
        #expect(KeyringItemLayout.type(of: .accessToken) == 2001)
        #expect(KeyringItemLayout.type(of: .refreshToken) == 2002)
        #expect(KeyringItemLayout.type(of: .idToken) == 2003)
        #expect(KeyringItemLayout.type(of: .appMetadata) == 3001)
        #expect(KeyringItemLayout.type(of: .account, authorityType: "AAD") == 1001)
        #expect(KeyringItemLayout.type(of: .account, authorityType: "MSA") == 1002)
        #expect(KeyringItemLayout.type(of: .account, authorityType: "MSSTS") == 1003)
        #expect(KeyringItemLayout.type(of: .account, authorityType: "Other") == 1004)
        #expect(KeyringItemLayout.type(of: .account, authorityType: "ADFS") == 1004)
    }

    @Test("Attributes are MSAL's account and service, trimmed and lowercased")
    func attributes() {
        let token = AccessTokenEntry(
            homeAccountID: " UID.UTID ", environment: "Login.Microsoftonline.com", clientID: "Client", realm: "Contoso.COM",
            target: "User.Read", secret: "AT", cachedAt: Date(), expiresOn: Date())
        let attributes = KeyringItemLayout.attributes(for: .accessToken(token), accessGroup: "com.contoso.shared")
        #expect(attributes == [
            "xdg:schema": "org.swift-msal.TokenCache", "access_group": "com.contoso.shared", "kind": "AccessToken", "key": token.key,
            "account": "uid.utid-login.microsoftonline.com", "service": "accesstoken-client-contoso.com-user.read", "type": "2001",
        ])
        // A refresh token without a family: the client ID, empty realm and target (as MSAL for iOS/macOS).
        let refresh = RefreshTokenEntry(homeAccountID: "u.t", environment: "e", clientID: "c", familyID: nil, secret: "RT", target: "a b")
        #expect(KeyringItemLayout.attributes(for: .refreshToken(refresh), accessGroup: "g")["service"] == "refreshtoken-c--")
        #expect(!(KeyringItemLayout.attributes(for: .refreshToken(refresh), accessGroup: "g").values.contains { $0.contains("RT") }))
        // Missing fields of an unreadable entry count as empty.
        let partial = KeyringItemLayout.attributes(kind: .idToken, key: "k", msalJSONObject: ["client_id": .string("c")], accessGroup: "g")
        #expect(partial["account"] == "-" && partial["service"] == "idtoken-c--")
    }

    @Test("Item records: kind, key and MSAL JSON in, the same out; anything else is no record")
    func records() throws {
        let entry = CacheEntry.appMetadata(AppMetadataEntry(clientID: "c", environment: "e", familyID: "1", additionalFields: ["x": .number(1)]))
        let record = ItemRecord(entry)
        let decoded = try #require(ItemRecord(decoding: record.encoded()))
        #expect(decoded == record)
        #expect(decoded.cacheEntry == entry)
        #expect(ItemRecord(decoding: Array("not json".utf8)) == nil)
        #expect(ItemRecord(decoding: Array("{\"kind\":1,\"key\":\"k\"}".utf8)) == nil)
        #expect(ItemRecord(itemKey: ItemKey(kind: "Future", key: "k"), entry: .object([:])).cacheEntry == nil)
    }

    // MARK: Lock file

    @Test("The lock directory follows XDG_RUNTIME_DIR, then XDG_CACHE_HOME, then ~/.cache")
    func lockDirectory() throws {
        let runtime = FileManager.default.temporaryDirectory.appendingPathComponent("msal-runtime-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        #expect(KeyringLockFile.defaultDirectory(environment: ["XDG_RUNTIME_DIR": runtime + "/", "HOME": "/home/u"]) == runtime + "/swift-msal")
        #expect(KeyringLockFile.defaultDirectory(environment: ["XDG_RUNTIME_DIR": runtime + "/missing", "XDG_CACHE_HOME": "/c", "HOME": "/home/u"]) == "/c/swift-msal")
        #expect(KeyringLockFile.defaultDirectory(environment: ["XDG_CACHE_HOME": "relative", "HOME": "/home/u"]) == "/home/u/.cache/swift-msal")
        #expect(KeyringLockFile.fileName(accessGroup: "com.microsoft.adalcache") == "keyring.com.microsoft.adalcache.lock")
        let long = KeyringLockFile.fileName(accessGroup: String(repeating: "g", count: 255))
        #expect(long.hasPrefix("keyring.fnv-") && long.utf8.count < 64)
    }

    @Test("The lock file: created 0600 in a 0700 directory, a random even counter, read without the lock")
    func lockFileCounter() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msal-lock-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lock = KeyringLockFile(directory: directory + "/nested", accessGroup: "g", timeout: 1)
        #expect(try lock.readCounter() == 0)  // no file yet
        let first = try lock.withExclusiveLock { (holder) throws(MSALError) in try holder.counter() }
        #expect(first & 1 == 0 && first != 0)
        #expect(try lock.readCounter() == first)
        try lock.withExclusiveLock { (holder) throws(MSALError) in try holder.setCounter(first &+ 1) }
        #expect(try lock.readCounter() == first &+ 1)
        let other = KeyringLockFile(directory: directory + "/other", accessGroup: "g", timeout: 1)
        #expect(try other.withExclusiveLock { (holder) throws(MSALError) in try holder.counter() } != first)  // w.h.p.
        let attributes = try FileManager.default.attributesOfItem(atPath: lock.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let directoryAttributes = try FileManager.default.attributesOfItem(atPath: directory + "/nested")
        #expect((directoryAttributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
    }

    @Test("Threads of one process retaking the lock at once all get their turns within the lock timeout")
    func fairLock() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msal-lock-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lock = KeyringLockFile(directory: directory, accessGroup: "g", timeout: 5)
        let order = try await withThrowingTaskGroup(of: [String].self) { tasks in
            for worker in 0..<4 {
                tasks.addTask {
                    var turns: [String] = []
                    for turn in 0..<25 {
                        try lock.withExclusiveLock { (holder) throws(MSALError) in
                            try holder.setCounter(try holder.counter() &+ 2)
                            usleep(200)
                        }
                        turns.append("\(worker).\(turn)")
                    }
                    return turns
                }
            }
            var all: [String] = []
            for try await turns in tasks { all += turns }
            return all
        }
        #expect(order.count == 100)  // every waiter got all its turns within the timeout
    }

    @Test("A writer waiting beyond the lock timeout gets a clear .cacheError")
    func lockTimeout() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msal-lock-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lock = KeyringLockFile(directory: directory, accessGroup: "g", timeout: 0.2)
        try lock.withExclusiveLock { (_) throws(MSALError) in
            let error = #expect(throws: MSALError.self) {
                try lock.withExclusiveLock { (_) throws(MSALError) in }
            }
            #expect(error.map { isMSALError($0, .cacheError, containing: "stayed locked") } == true)
        }
    }
}
