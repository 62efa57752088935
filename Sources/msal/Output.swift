import Foundation
import MSAL
import MSALCore

/// Writes to the standard streams without buffering surprises (each call is one `write`).
enum Console {
    static func out(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func err(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// One JSON object or array on one line, keys sorted, slashes unescaped.
    static func jsonLine(_ value: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]),
              let text = String(data: data, encoding: .utf8)
        else { return "{}" }
        return text
    }
}

extension Date {
    /// ISO 8601 in UTC, e.g. `2026-11-29T13:23:00Z`.
    var iso8601UTC: String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: self)
    }
}

extension Account {
    var jsonObject: [String: Any] {
        [
            "identifier": identifier,
            "username": username ?? NSNull(),
            "environment": environment,
            "tenant_profiles": tenantProfiles.map {
                ["tenant_id": $0.tenantID, "identifier": $0.identifier, "is_home_tenant": $0.isHomeTenant] as [String: Any]
            },
        ]
    }
}

extension AuthenticationResult {
    /// The tool's result contract: `access_token`, `token_type`, `expires_on` (ISO 8601 UTC),
    /// `scopes`, `token_source`, `account` (`identifier`, `username`, `environment`), `correlation_id`.
    var jsonObject: [String: Any] {
        [
            "access_token": accessToken,
            "token_type": tokenType,
            "expires_on": expiresOn.iso8601UTC,
            "scopes": scopes,
            "token_source": tokenSource.rawValue,
            "account": [
                "identifier": account.identifier,
                "username": account.username ?? NSNull(),
                "environment": account.environment,
            ] as [String: Any],
            "correlation_id": correlationID,
        ]
    }
}

extension MSALError {
    /// The tool's exit code for this error: 3 when the user must sign in, else 1.
    var exitCode: Int32 { code == .interactionRequired ? 3 : 1 }

    /// The one-line error report: code, message, server fields and correlation ID; never a token.
    func report(format: OutputFormat) -> String {
        switch format {
        case .text:
            return "msal: error: \(description)"
        case .json:
            var object: [String: Any] = ["error": codeString, "message": message]
            if let oauthError { object["oauth_error"] = oauthError }
            if let subError { object["suberror"] = subError }
            if let httpStatusCode { object["http_status"] = httpStatusCode }
            if let correlationID { object["correlation_id"] = correlationID }
            return Console.jsonLine(object)
        }
    }
}
