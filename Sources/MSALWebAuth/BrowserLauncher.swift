public import Foundation
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens the authorization URL in a browser, for interactive sign-in through the system browser
/// (RFC 8252 §6: a native app uses an external user agent, not an embedded web view).
///
/// An implementation must not wait for the browser to exit, and must not throw: it reports
/// whether a browser was started, so the app can show the URL itself when none was.
public protocol BrowserLauncher: Sendable {
    /// Opens `url` in a browser.
    /// - Parameter url: the authorization request URL (it carries `state`, `nonce` and the PKCE
    ///   challenge; an implementation must not log it).
    /// - Returns: `true` if a browser (or the program that hands the URL to one) was started,
    ///   `false` if nothing could be started. `true` does not mean the user saw the page.
    func open(_ url: URL) async -> Bool
}

/// Opens URLs in the user's browser the way Linux desktop tools do: the `BROWSER` environment
/// variable first, then `xdg-open`.
///
/// `BROWSER` is a colon-separated list of commands, tried in order (the convention of
/// Python's `webbrowser` module and of `sensible-browser`). In each command, `%s` stands for
/// the URL and `%%` for a literal `%`; a command without `%s` gets the URL appended as its last
/// argument. A command is split into words at spaces, with single or double quotes grouping a
/// word; it is run directly (no shell), its program found on the `PATH` of ``environment``.
/// The first command whose program starts wins; if none does, `xdg-open <url>` is tried.
///
/// The program is started detached: in a new session (so Ctrl-C in the terminal does not reach
/// it), with standard input, output and error on `/dev/null` (it cannot read our input or print
/// into our output), and it is not waited for; a background thread reaps it when it exits.
///
/// Its description and mirror show `BROWSER` and the number of environment variables, never their
/// values (an environment holds secrets: passphrases, API tokens).
public struct SystemBrowserLauncher: BrowserLauncher, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The environment used to read `BROWSER` and `PATH` and given to the started program.
    public let environment: [String: String]

    /// Creates a launcher.
    /// - Parameter environment: where `BROWSER` and `PATH` are read, and the environment the
    ///   browser is started with; default the process's own. Tests pass their own to control
    ///   which programs can be found.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// `SystemBrowserLauncher(BROWSER: "…", environment: N variables, redacted)` (`BROWSER: nil`
    /// when unset).
    public var description: String {
        let browser = environment["BROWSER"].map { "\"\($0)\"" } ?? "nil"
        return "SystemBrowserLauncher(BROWSER: \(browser), environment: \(environment.count) variables, redacted)"
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// No children: `dump` and debuggers show ``description`` only.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// The commands that would be tried for `url`, in order, each as its argument vector
    /// (program first, not yet resolved on `PATH`).
    /// - Returns: one entry per non-empty `BROWSER` command, then `["xdg-open", url]`.
    public func candidateCommands(for url: URL) -> [[String]] {
        let urlString = url.absoluteString
        var commands: [[String]] = []
        for entry in (environment["BROWSER"] ?? "").split(separator: ":", omittingEmptySubsequences: true) {
            var words = SystemBrowserLauncher.splitWords(String(entry))
            guard !words.isEmpty else { continue }
            if words.contains(where: { $0.contains("%s") }) {
                words = words.map { SystemBrowserLauncher.substitute($0, url: urlString) }
            } else {
                words = words.map { $0.replacingOccurrences(of: "%%", with: "%") }
                words.append(urlString)
            }
            commands.append(words)
        }
        commands.append(["xdg-open", urlString])
        return commands
    }

    /// Starts the first command of ``candidateCommands(for:)`` whose program can be started.
    /// - Returns: `true` once a program was started (it is not waited for); `false` if no
    ///   program could be found on `PATH` or started.
    public func open(_ url: URL) async -> Bool {
        for command in candidateCommands(for: url) {
            guard let program = resolve(command[0]) else { continue }
            if spawnDetached(program: program, arguments: command) { return true }
        }
        return false
    }

    // MARK: - Commands

    /// Splits a command into words at spaces and tabs; `'…'` and `"…"` group a word (no escapes
    /// inside single quotes; `\` escapes the next character elsewhere).
    static func splitWords(_ command: String) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in command {
            if escaped {
                current.append(character)
                escaped = false
                continue
            }
            if let open = quote {
                if character == open {
                    quote = nil
                } else if character == "\\" && open == "\"" {
                    escaped = true
                } else {
                    current.append(character)
                }
                continue
            }
            switch character {
            case " ", "\t":
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
            case "'", "\"":
                quote = character
                inWord = true
            case "\\":
                escaped = true
                inWord = true
            default:
                current.append(character)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }

    /// Replaces `%s` with the URL and `%%` with `%`, left to right.
    static func substitute(_ word: String, url: String) -> String {
        var result = ""
        var index = word.startIndex
        while index < word.endIndex {
            let character = word[index]
            let next = word.index(after: index)
            if character == "%", next < word.endIndex {
                if word[next] == "s" {
                    result += url
                    index = word.index(after: next)
                    continue
                }
                if word[next] == "%" {
                    result += "%"
                    index = word.index(after: next)
                    continue
                }
            }
            result.append(character)
            index = next
        }
        return result
    }

    /// The path of an executable regular file for `program`: as given when it contains a `/`,
    /// else the first match in the directories of `PATH` (an empty `PATH` entry is the current
    /// directory, as POSIX `execvp` reads it; no `PATH` means `/usr/local/bin:/usr/bin:/bin`).
    func resolve(_ program: String) -> String? {
        guard !program.isEmpty else { return nil }
        if program.contains("/") {
            return SystemBrowserLauncher.isExecutableFile(program) ? program : nil
        }
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = directory.isEmpty ? program : "\(directory)/\(program)"
            if SystemBrowserLauncher.isExecutableFile(candidate) { return candidate }
        }
        return nil
    }

    private static func isExecutableFile(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
        return access(path, X_OK) == 0
    }

    // MARK: - Starting the process

    /// posix_spawn in a new session with stdio on /dev/null; reaped by a background thread.
    /// - Returns: `false` when the program could not be executed (glibc reports exec failures).
    private func spawnDetached(program: String, arguments: [String]) -> Bool {
        var fileActions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        guard posix_spawn_file_actions_init(&fileActions) == 0 else { return false }
        defer { posix_spawn_file_actions_destroy(&fileActions) }
        guard posix_spawnattr_init(&attributes) == 0 else { return false }
        defer { posix_spawnattr_destroy(&attributes) }

        posix_spawn_file_actions_addopen(&fileActions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&fileActions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&fileActions, 2, "/dev/null", O_WRONLY, 0)
        #if canImport(Glibc)
        // A new session (no controlling terminal) and default signal handling in the child.
        var defaultSignals = sigset_t()
        sigemptyset(&defaultSignals)
        sigaddset(&defaultSignals, SIGINT)
        sigaddset(&defaultSignals, SIGPIPE)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        // POSIX_SPAWN_SETSID (glibc 2.26+) is behind _GNU_SOURCE, so not imported: 0x80.
        let setSessionID: Int32 = 0x80
        posix_spawnattr_setflags(
            &attributes,
            Int16(setSessionID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        )
        #endif

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid = pid_t()
        let result = posix_spawn(&pid, program, &fileActions, &attributes, argv, envp)
        guard result == 0 else { return false }

        let child = pid
        let thread = Thread {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        }
        thread.name = "SystemBrowserLauncher reaper"
        thread.start()
        return true
    }
}

/// A ``BrowserLauncher`` that calls a closure: for tests, and for apps that open URLs their own
/// way (a GUI toolkit's "open URL" call, a remote session that forwards the URL).
public struct ClosureBrowserLauncher: BrowserLauncher {
    private let closure: @Sendable (URL) async -> Bool

    /// Creates a launcher.
    /// - Parameter closure: opens the URL; returns `true` if a browser was started.
    public init(_ closure: @escaping @Sendable (URL) async -> Bool) {
        self.closure = closure
    }

    /// Calls the closure.
    /// - Returns: what the closure returned.
    public func open(_ url: URL) async -> Bool {
        await closure(url)
    }
}
