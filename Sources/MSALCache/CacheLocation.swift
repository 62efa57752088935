public import Foundation

/// Where swift-msal keeps its files by default, following the XDG Base Directory Specification.
public enum TokenCacheLocation {
    /// The directory of swift-msal's default cache files: `$XDG_DATA_HOME/msal` when `XDG_DATA_HOME`
    /// is an absolute path, else `$HOME/.local/share/msal` (the home directory from `HOME`, else the
    /// password database).
    /// - Parameter environment: the variables to read; default this process's environment.
    /// - Returns: an absolute path without a trailing `/`.
    public static func dataDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let dataHome = environment["XDG_DATA_HOME"], dataHome.hasPrefix("/") {
            return (dataHome.hasSuffix("/") ? String(dataHome.dropLast()) : dataHome) + "/msal"
        }
        var home = environment["HOME"] ?? ""
        if !home.hasPrefix("/") { home = NSHomeDirectory() }
        if home.hasSuffix("/") { home.removeLast() }
        return home + "/.local/share/msal"
    }
}
