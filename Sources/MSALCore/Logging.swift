/// How much a ``Logger`` passes to its handler. Higher levels include the lower ones.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    /// Failures the app should know about.
    case error = 0
    /// Unexpected but handled conditions.
    case warning = 1
    /// Milestones of a request (one line each). swift-msal logs nothing above `debug` in normal
    /// operation except errors and warnings.
    case info = 2
    /// Detail for diagnosing a problem.
    case debug = 3

    /// Orders levels by verbosity: `error < warning < info < debug`.
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A log line under construction, whose personal data (PII) is masked unless the logger allows it.
///
/// Write `"signing in \(pii: username)"`: the username appears only when the ``Logger`` was created
/// with `piiLoggingEnabled: true`; otherwise it is rendered `Masked(not-null)` (or `Masked(null)`
/// for `nil`), as MSAL for iOS/macOS does. Secrets (tokens, codes) must never be interpolated at all.
public struct LogMessage: ExpressibleByStringInterpolation, Sendable {
    enum Segment: Sendable {
        case text(String)
        case pii(String?)
    }

    let segments: [Segment]

    /// Creates a message from a literal with no interpolation.
    public init(stringLiteral value: String) { segments = [.text(value)] }

    /// Creates a message from an interpolated literal.
    public init(stringInterpolation: StringInterpolation) { segments = stringInterpolation.segments }

    /// Renders the message, masking PII unless `includePII` is true.
    /// - Returns: the message text.
    public func rendered(includePII: Bool) -> String {
        segments.map { segment in
            switch segment {
            case .text(let text): return text
            case .pii(let value):
                if includePII { return value ?? "(null)" }
                return value == nil ? "Masked(null)" : "Masked(not-null)"
            }
        }.joined()
    }

    /// Builds a ``LogMessage`` from a string literal with interpolations.
    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        var segments: [Segment] = []

        /// Reserves room; part of `StringInterpolationProtocol`.
        public init(literalCapacity: Int, interpolationCount: Int) {}

        /// Appends literal text.
        public mutating func appendLiteral(_ literal: String) { segments.append(.text(literal)) }

        /// Appends a value that is not personal data (a count, a code, a host name).
        public mutating func appendInterpolation<T>(_ value: T) { segments.append(.text(String(describing: value))) }

        /// Appends personal data (a username, an account identifier): masked unless PII logging is on.
        public mutating func appendInterpolation(pii value: String?) { segments.append(.pii(value)) }
    }
}

/// The logger hook. The library never prints: by default nothing is logged at all
/// (``Logger/none``); an app passes a handler to receive lines.
///
/// Source: MSAL for iOS/macOS `MSALLoggerConfig` (a callback, a level, `piiEnabled`).
public struct Logger: Sendable {
    /// The callback that receives each line at or below ``level``; `nil` discards everything.
    public var handler: (@Sendable (LogLevel, String) -> Void)?
    /// The most verbose level passed to the handler.
    public var level: LogLevel
    /// Whether personal data interpolated with `pii:` is shown. Default `false`: masked.
    public var piiLoggingEnabled: Bool

    /// Creates a logger.
    /// - Parameters:
    ///   - level: the most verbose level to pass on (default `.info`).
    ///   - piiLoggingEnabled: show personal data instead of masking it (default `false`).
    ///   - handler: receives the level and the rendered line.
    public init(
        level: LogLevel = .info,
        piiLoggingEnabled: Bool = false,
        handler: (@Sendable (LogLevel, String) -> Void)?
    ) {
        self.level = level
        self.piiLoggingEnabled = piiLoggingEnabled
        self.handler = handler
    }

    /// A logger that discards everything; the default everywhere.
    public static let none = Logger(handler: nil)

    /// Logs `message` at `level` if the handler wants it; the message is only rendered then.
    public func log(_ level: LogLevel, _ message: @autoclosure () -> LogMessage) {
        guard let handler, level <= self.level else { return }
        handler(level, message().rendered(includePII: piiLoggingEnabled))
    }

    /// Logs at ``LogLevel/error``.
    public func error(_ message: @autoclosure () -> LogMessage) { log(.error, message()) }
    /// Logs at ``LogLevel/warning``.
    public func warning(_ message: @autoclosure () -> LogMessage) { log(.warning, message()) }
    /// Logs at ``LogLevel/info``.
    public func info(_ message: @autoclosure () -> LogMessage) { log(.info, message()) }
    /// Logs at ``LogLevel/debug``.
    public func debug(_ message: @autoclosure () -> LogMessage) { log(.debug, message()) }
}
