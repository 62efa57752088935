import Foundation
#if canImport(Glibc)
import Glibc
#endif
import MSALWebAuth
import Testing

/// A temporary directory with executable shell scripts standing in for browsers.
private final class ScriptDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("browser-launcher-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// Writes an executable `/bin/sh` script named `name` with `body`.
    /// - Returns: its absolute path.
    @discardableResult
    func script(_ name: String, _ body: String) throws -> String {
        let path = url.appendingPathComponent(name).path
        // O_CLOEXEC: a process spawned meanwhile by another test must not inherit the writable
        // descriptor, or executing the script fails with ETXTBSY.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        let bytes = Array("#!/bin/sh\n\(body)\n".utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == bytes.count else { throw POSIXError(.EIO) }
        return path
    }

    /// The path of a file in the directory (not created).
    func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// A script that writes each of its arguments on one line to `name`.txt, atomically (the
    /// test reads the file as soon as it appears).
    @discardableResult
    func recorder(_ name: String) throws -> String {
        let out = file("\(name).txt")
        return try script(name, "printf '%s\\n' \"$@\" > '\(out).tmp' && /bin/mv '\(out).tmp' '\(out)'")
    }
}

/// Waits (polling every 20 ms, at most `seconds`; generous for a loaded machine) until the file exists.
/// The file is looked for once more after the deadline: while other tests block the cooperative
/// threads this task may resume only after it, and the file written meanwhile must still count.
/// - Returns: its contents, or nil if it did not appear in time.
private func waitForFile(_ path: String, seconds: TimeInterval = 30) async throws -> String? {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        if let text = try? String(contentsOfFile: path, encoding: .utf8) { return text }
        guard Date() < deadline else { return nil }
        try await Task.sleep(nanoseconds: 20_000_000)
    }
}

private let signInURL = URL(string: "https://login.example.com/authorize?client_id=abc&state=s%20t&scope=openid+profile")!

@Suite("BrowserLauncher", .serialized)
struct BrowserLauncherTests {
    @Test func browserVariableScriptReceivesTheURL() async throws {
        let dir = try ScriptDirectory()
        let browser = try dir.recorder("fake-browser")
        let launcher = SystemBrowserLauncher(environment: ["BROWSER": browser, "PATH": dir.url.path])
        #expect(await launcher.open(signInURL))
        let recorded = try await waitForFile(dir.file("fake-browser.txt"))
        #expect(recorded == signInURL.absoluteString + "\n")
    }

    @Test func percentSPlacesTheURLAndPercentPercentIsLiteral() async throws {
        let dir = try ScriptDirectory()
        try dir.recorder("fake-browser")
        // Found on PATH by name; `%s` inside a word, `%%` a literal percent, quotes group a word.
        let launcher = SystemBrowserLauncher(environment: [
            "BROWSER": "fake-browser --new-window 'two words' --open=%s 100%%",
            "PATH": dir.url.path,
        ])
        #expect(await launcher.open(signInURL))
        let recorded = try await waitForFile(dir.file("fake-browser.txt"))
        #expect(recorded == "--new-window\ntwo words\n--open=\(signInURL.absoluteString)\n100%\n")
    }

    @Test func firstCommandThatStartsWins() async throws {
        let dir = try ScriptDirectory()
        let first = try dir.recorder("first")
        let second = try dir.recorder("second")
        let notExecutable = dir.file("plain-file")
        try "not a program".write(toFile: notExecutable, atomically: true, encoding: .utf8)
        let launcher = SystemBrowserLauncher(environment: [
            "BROWSER": "/no/such/browser:\(notExecutable)::\(first):\(second)",
            "PATH": dir.url.path,
        ])
        #expect(await launcher.open(signInURL))
        #expect(try await waitForFile(dir.file("first.txt")) == signInURL.absoluteString + "\n")
        #expect(!FileManager.default.fileExists(atPath: dir.file("second.txt")))
    }

    @Test func fallsBackToXdgOpenOnPath() async throws {
        let dir = try ScriptDirectory()
        try dir.recorder("xdg-open")
        for environment in [["PATH": dir.url.path], ["PATH": dir.url.path, "BROWSER": "missing-browser"]] {
            try? FileManager.default.removeItem(atPath: dir.file("xdg-open.txt"))
            let launcher = SystemBrowserLauncher(environment: environment)
            #expect(await launcher.open(signInURL))
            #expect(try await waitForFile(dir.file("xdg-open.txt")) == signInURL.absoluteString + "\n")
        }
    }

    @Test func nothingToStartReturnsFalse() async throws {
        let emptyDir = try ScriptDirectory()
        let launcher = SystemBrowserLauncher(environment: [
            "BROWSER": "/no/such/browser:missing-browser %s",
            "PATH": emptyDir.url.path,  // no xdg-open here
        ])
        #expect(await launcher.open(signInURL) == false)
        #expect(await SystemBrowserLauncher(environment: ["PATH": emptyDir.url.path]).open(signInURL) == false)
    }

    @Test func startsDetachedWithoutOurStdinAndDoesNotWait() async throws {
        let dir = try ScriptDirectory()
        let out = dir.file("facts.txt")
        // Records its stdin, its session ID vs its PID, then stays running until killed.
        let browser = try dir.script("slow-browser", """
            sid=$(/usr/bin/cut -d' ' -f6 /proc/$$/stat)
            printf '%s\\n%s\\n%s\\n' "$(/usr/bin/readlink /proc/$$/fd/0)" "$sid" "$$" > '\(out).tmp' && /bin/mv '\(out).tmp' '\(out)'
            exec /usr/bin/sleep 30
            """)
        // PATH without the real xdg-open: if the script failed to start, nothing else must.
        let launcher = SystemBrowserLauncher(environment: ["BROWSER": browser, "PATH": dir.url.path])
        // Our stdin may itself be /dev/null (as under CI): make it a pipe while the browser
        // starts, so inheriting it would show. Both pipe ends are close-on-exec, so a process
        // another test starts meanwhile holds at most the read end, which sees EOF once closed.
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let savedStdin = dup(0)
        try #require(savedStdin >= 0)
        dup2(ends[0], 0)
        let opened = await launcher.open(signInURL)
        dup2(savedStdin, 0)
        close(savedStdin)
        close(ends[0])
        close(ends[1])
        #expect(opened)
        let facts = try #require(try await waitForFile(out)).split(separator: "\n").map(String.init)
        try #require(facts.count == 3)
        let pid = try #require(Int32(facts[2]))
        defer { kill(pid, SIGTERM) }
        // Had open() waited for the browser to exit, the browser would be gone by now.
        #expect(kill(pid, 0) == 0, "open must return while the browser still runs")
        #expect(facts[0] == "/dev/null")
        #expect(facts[1] == facts[2], "the browser runs in its own session")
    }

    @Test func candidateCommands() {
        let launcher = SystemBrowserLauncher(environment: ["BROWSER": "firefox:chromium --app=%s: :w3m"])
        let url = "https://x.example/a?b=c"
        #expect(launcher.candidateCommands(for: URL(string: url)!) == [
            ["firefox", url],
            ["chromium", "--app=\(url)"],
            ["w3m", url],
            ["xdg-open", url],
        ])
        #expect(SystemBrowserLauncher(environment: [:]).candidateCommands(for: URL(string: url)!) == [["xdg-open", url]])
    }

    @Test func closureLauncherReturnsWhatTheClosureSays() async {
        let yes = ClosureBrowserLauncher { $0.host == "login.example.com" }
        #expect(await yes.open(signInURL))
        #expect(await yes.open(URL(string: "https://other.example")!) == false)
    }
}
