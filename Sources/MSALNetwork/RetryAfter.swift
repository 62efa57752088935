public import Foundation

/// The `Retry-After` response header (RFC 9110 §10.2.3): how long a client ought to wait before
/// its next request, as `delay-seconds` (`120`) or as an `HTTP-date`
/// (`Fri, 31 Dec 1999 23:59:59 GMT`).
///
/// Entra ID sends delta-seconds (MSAL for Python parses integers only); MSAL.NET reads both forms
/// through `RetryConditionHeaderValue`, and so does swift-msal. A date is measured from the
/// response's own `Date` header when it has one (so a skewed local clock does not stretch or
/// shrink the wait), else from the local "now".
public enum RetryAfter {
    /// Parses a `Retry-After` value.
    ///
    /// - Parameters:
    ///   - value: the header value; surrounding spaces and tabs are ignored.
    ///   - responseDate: the response's `Date` header as a date, if any: the reference for an
    ///     HTTP-date value.
    ///   - now: the local "now", the reference when `responseDate` is `nil`.
    /// - Returns: the delay in seconds, never negative (a date in the past gives 0), uncapped; `nil`
    ///   when the value is neither `1*DIGIT` (RFC 9110 §10.2.3) nor an HTTP-date (§5.6.7).
    public static func seconds(_ value: String, responseDate: Date? = nil, now: Date) -> TimeInterval? {
        let trimmed = value.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
        guard !trimmed.isEmpty else { return nil }
        if trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return TimeInterval(trimmed)
        }
        guard let date = httpDate(trimmed, now: now) else { return nil }
        return max(0, date.timeIntervalSince(responseDate ?? now))
    }

    /// The delay a response asks for: its `Retry-After` measured as ``seconds(_:responseDate:now:)``
    /// describes, with the response's `Date` header as the reference for an HTTP-date.
    /// - Returns: the delay in seconds, or `nil` when the response has no valid `Retry-After`.
    public static func seconds(in response: HTTPResponse, now: Date) -> TimeInterval? {
        guard let value = response.header("Retry-After") else { return nil }
        let responseDate = response.header("Date").flatMap { httpDate($0, now: now) }
        return seconds(value, responseDate: responseDate, now: now)
    }

    /// Parses an HTTP-date in any of the three forms a recipient must accept (RFC 9110 §5.6.7):
    /// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
    /// (`Sunday, 06-Nov-94 08:49:37 GMT`) and ANSI C's asctime form (`Sun Nov  6 08:49:37 1994`).
    ///
    /// A two-digit RFC 850 year that would lie more than 50 years after `now` is read as the most
    /// recent past year with those digits, as §5.6.7 requires.
    /// - Returns: the instant, or `nil` when the string is in none of the forms.
    public static func httpDate(_ string: String, now: Date) -> Date? {
        // Runs of spaces collapse: asctime pads a one-digit day with a second space.
        let fields = string.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
        switch fields.count {
        case 6 where shortDays.contains(String(fields[0].dropLast())) && fields[0].hasSuffix(",") && fields[5] == "GMT":
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            return date(day: fields[1], month: fields[2], year: fields[3], digits: 2, yearDigits: 4, time: fields[4], now: now)
        case 4 where longDays.contains(String(fields[0].dropLast())) && fields[0].hasSuffix(",") && fields[3] == "GMT":
            // rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT
            let parts = fields[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3 else { return nil }
            return date(day: parts[0], month: parts[1], year: parts[2], digits: 2, yearDigits: 2, time: fields[2], now: now)
        case 5 where shortDays.contains(fields[0]):
            // asctime-date: Sun Nov  6 08:49:37 1994
            return date(day: fields[2], month: fields[1], year: fields[4], digits: nil, yearDigits: 4, time: fields[3], now: now)
        default:
            return nil
        }
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Digits only, of the given count (or 1–2 when `count` is nil).
    private static func number(_ string: String, count: Int?) -> Int? {
        guard string.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        if let count { guard string.utf8.count == count else { return nil } } else { guard (1...2).contains(string.utf8.count) else { return nil } }
        return Int(string)
    }

    private static func date(day: String, month: String, year: String, digits: Int?, yearDigits: Int, time: String, now: Date) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        let clock = time.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard let day = number(day, count: digits),
              let month = months.firstIndex(of: month).map({ $0 + 1 }),
              var year = number(year, count: yearDigits),
              clock.count == 3,
              let hour = number(clock[0], count: 2), let minute = number(clock[1], count: 2), let second = number(clock[2], count: 2),
              (1...31).contains(day), hour < 24, minute < 60, second <= 60
        else { return nil }
        if yearDigits == 2 {
            // RFC 9110 §5.6.7: more than 50 years in the future means the most recent past such year.
            let currentYear = calendar.component(.year, from: now)
            year += currentYear - currentYear % 100
            if year > currentYear + 50 { year -= 100 } else if year <= currentYear - 50 { year += 100 }
        }
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: min(second, 59))
        guard let date = calendar.date(from: components),
              calendar.component(.day, from: date) == day  // rejects 31 Feb and the like
        else { return nil }
        return date
    }
}
