import Foundation
import MSALCacheSQLite
import MSALTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A cache file the user may not read gets advice about the file, not about its directory.
@Suite("An SQLite cache file this user cannot read or write is named as the problem")
struct SQLitePermissionToolTests {
    @Test("msal accounts on a mode-000 cache file says the file is not readable or writable, and leaves it as it was")
    func unreadableFile() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: ToolTests.binary), "build the tool first: swift build --product msal")
        let directory = try ScratchDirectory()
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        let path = directory.file("msal_cache.sqlite")
        _ = try SQLiteTokenCacheStore(path: path).readAll()  // a real cache file, with its schema
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))

        // root reads any file: run the tool as nobody then (the file stays root's, mode 000).
        let executable: String
        let arguments: [String]
        let tool = ["accounts", "--client-id", "client", "--cache", path]
        if geteuid() == 0 {
            executable = "/usr/bin/setpriv"
            arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", ToolTests.binary] + tool
        } else {
            executable = ToolTests.binary
            arguments = tool
        }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("MSAL_") }
        environment["HOME"] = directory.path
        environment["XDG_DATA_HOME"] = directory.path
        let output = try await SpawnedProcess(
            executable, arguments, environment: environment, standardOutput: .null, standardError: .pipe
        ).readOutputAndWait()
        let stderr = output.standardErrorText

        #expect(output.termination.status == 1, "\(stderr)")
        #expect(stderr.contains("exists but is not readable or writable by this user"), "\(stderr)")
        #expect(!stderr.contains("directory exists"), "\(stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }
}
