import Foundation

/// A JSON value for the report lines, written with its keys in the order given.
public enum ReportValue: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case string(String)
    case integer(Int64)
    case unsigned(UInt64)
    case double(Double)
    case bool(Bool)
    case null

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }

    var json: String {
        switch self {
        case .string(let value): return Self.quoted(value)
        case .integer(let value): return String(value)
        case .unsigned(let value): return String(value)
        case .double(let value):
            guard value.isFinite else { return "null" }
            return String(format: "%.1f", value)
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        }
    }

    static func quoted(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

/// Writes one JSON object per line on standard output, flushed at once (the runner collects them).
public enum Report {
    /// Writes `fields` as one JSON object, keys in the given order.
    public static func line(_ fields: KeyValuePairs<String, ReportValue>) {
        line(Array(fields))
    }

    /// Writes `fields` as one JSON object, keys in the given order.
    public static func line(_ fields: [(key: String, value: ReportValue)]) {
        let body = fields.map { "\(ReportValue.quoted($0.key)):\($0.value.json)" }.joined(separator: ",")
        FileHandle.standardOutput.write(Data(("{" + body + "}\n").utf8))
    }

    /// The line of one case: exactly `name`, `backend`, `n`, `iterations`, `median_ns`, `p99_ns`,
    /// `ops_per_s`, `peak_rss_bytes` (peak RSS of this process so far), then `extra` fields.
    public static func result(
        name: String, backend: String, n: Int, samples: Samples,
        medianOverride: UInt64? = nil, p99Override: UInt64? = nil,
        extra: [(key: String, value: ReportValue)] = []
    ) {
        var fields: [(key: String, value: ReportValue)] = [
            ("name", .string(name)),
            ("backend", .string(backend)),
            ("n", .integer(Int64(n))),
            ("iterations", .integer(Int64(samples.values.count))),
            ("median_ns", .unsigned(medianOverride ?? samples.median)),
            ("p99_ns", .unsigned(p99Override ?? samples.p99)),
            ("ops_per_s", .double(samples.opsPerSecond)),
            ("peak_rss_bytes", .unsigned(peakRSSBytes())),
        ]
        fields += extra
        line(fields)
    }

    /// A progress or diagnostic line on standard error (never a token).
    public static func note(_ message: String) {
        FileHandle.standardError.write(Data("msal-bench: \(message)\n".utf8))
    }
}
