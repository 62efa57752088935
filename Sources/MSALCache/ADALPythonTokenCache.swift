public import Foundation
public import MSALCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The token cache ADAL for Python serializes, as the Azure CLI kept it in
/// `~/.azure/accessTokens.json` before it moved to MSAL: read-only.
///
/// The format (ADAL for Python `adal/token_cache.py`, `serialize()`: `json.dumps` of the list of
/// entries; `adal/constants.py` `TokenResponseFields`; `adal/oauth2_client.py`, which fills them):
/// a JSON list of objects with
/// - `_authority` and `_clientId`: the authority and client ID of the request (ADAL's cache metadata,
///   `adal/cache_driver.py`),
/// - `resource`, `userId` (the `upn`, else `email`, else `sub` claim), `isUserIdDisplayable`,
/// - `accessToken`, `refreshToken`, `tokenType`, `expiresIn` (seconds), `expiresOn` (`str()` of a
///   naive local `datetime`: `2019-01-01 12:00:00.123456`, without the fraction when it is zero),
///   `createdOn`, `isMRRT`,
/// - from the ID token: `oid`, `tenantId`, `givenName`, `familyName`, `identityProvider`. The Azure
///   CLI drops `familyName`, `givenName`, `isUserIdDisplayable` and `tenantId` before writing
///   (`azure/cli/core/_profile.py`, `TOKEN_FIELDS_EXCLUDED_FROM_PERSISTENCE`).
///
/// The Azure CLI appends its service principals to the same list as
/// `{"servicePrincipalId", "servicePrincipalTenant", "accessToken"}` — where `accessToken` is the
/// client secret — or with `certificateFile` and `thumbprint` instead of the secret: those are
/// reported as ``LegacySkippedEntry/Reason/servicePrincipal`` and never read as users.
/// `expiresOn` in ISO 8601 with an offset (as the Node.js ADAL of the older cross-platform CLI wrote
/// into the same file) is read too.
///
/// Unknown fields are ignored. A known field with the wrong JSON type, an `_authority` that is not
/// an absolute `http(s)` URL, or an `expiresOn` that is not a date makes the entry malformed
/// (skipped, the other entries still count).
public struct ADALPythonTokenCache: LegacyTokenCache {
    /// The file's path.
    public let path: String
    /// The time zone `expiresOn` is read in: the machine's, as ADAL for Python wrote it.
    public let timeZone: TimeZone

    /// Files larger than this (64 MiB) are refused rather than read: no real cache comes close.
    public static let maximumSize = 64 << 20

    /// A reader for the file at `path`. Nothing is read until ``read()``.
    /// - Parameters:
    ///   - path: the file, e.g. ``defaultPath(environment:)``.
    ///   - timeZone: the zone of the local times in `expiresOn`; default the machine's.
    public init(path: String, timeZone: TimeZone = .current) {
        self.path = path
        self.timeZone = timeZone
    }

    /// `ADAL for Python cache <path>`.
    public var name: String { "ADAL for Python cache \(path)" }

    /// Where the Azure CLI kept the file: `AZURE_ACCESS_TOKEN_FILE` when set (Cloud Shell), else
    /// `accessTokens.json` in `AZURE_CONFIG_DIR`, else in `~/.azure` (Azure CLI `CredsCache` and
    /// `get_config_dir()`).
    /// - Returns: an absolute path (it may not exist).
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let file = environment["AZURE_ACCESS_TOKEN_FILE"], !file.isEmpty { return file }
        let directory = environment["AZURE_CONFIG_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/.azure")
        return directory + "/accessTokens.json"
    }

    /// Reads the file (opened read-only; nothing is created, locked or written) and parses it.
    /// - Returns: the user entries with a refresh token, and the entries left out with their reasons.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the file does not exist, is a directory,
    ///   cannot be read, is larger than ``maximumSize``, is not JSON, or is not a JSON list.
    public func read() throws(MSALError) -> LegacyTokenCacheContents {
        // open(2) read-only: no lock file, no temporary file, nothing written or created. Opening
        // first tells a missing file (ENOENT) from one that cannot be reached (EACCES on a directory
        // on the way), which a separate existence check would report as missing.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT {
                throw .internal(.cacheError, "There is no ADAL cache at \(path); check the path (the Azure CLI kept it in ~/.azure/accessTokens.json).")
            }
            throw .internal(.cacheError, "The ADAL cache \(path) cannot be opened (\(String(cString: strerror(code)))); check its permissions and those of its directories.")
        }
        defer { close(descriptor) }
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            throw .internal(.cacheError, "\(path) is a directory, not an ADAL cache file.")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while data.count <= Self.maximumSize {
            let count = buffer.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw .internal(.cacheError, "The ADAL cache \(path) cannot be read (\(String(cString: strerror(errno)))).")
            }
            data.append(contentsOf: buffer[0..<count])
        }
        guard data.count <= Self.maximumSize else {
            throw .internal(.cacheError, "\(path) is larger than \(Self.maximumSize >> 20) MiB; it is not an ADAL cache.")
        }
        return try Self.parse(data, source: name, timeZone: timeZone)
    }

    /// Parses the text of an `accessTokens.json` file.
    /// - Parameters:
    ///   - data: the file's bytes (UTF-8 JSON). Empty or blank text is an empty cache.
    ///   - source: the name the entries and reasons carry (``LegacyTokenEntry/source``).
    ///   - timeZone: the zone of `expiresOn`'s local times.
    /// - Returns: the user entries with a refresh token, and the entries left out with their reasons.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the text is not JSON or its top level is
    ///   not a list.
    public static func parse(_ data: Data, source: String, timeZone: TimeZone) throws(MSALError) -> LegacyTokenCacheContents {
        if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) { return LegacyTokenCacheContents() }
        guard let document = JSONValue(parsing: data) else {
            throw .internal(.cacheError, "\(source) is not JSON; it is not an ADAL cache (nothing was read from it).")
        }
        guard let list = document.arrayValue else {
            throw .internal(.cacheError, "\(source) is JSON but not a list of entries; it is not an ADAL for Python cache (nothing was read from it).")
        }
        var contents = LegacyTokenCacheContents()
        for (offset, element) in list.enumerated() {
            switch entry(element, position: offset + 1, source: source, timeZone: timeZone) {
            case .success(let entry): contents.entries.append(entry)
            case .failure(let skipped): contents.skipped.append(skipped.entry)
            }
        }
        return contents
    }

    private struct Skip: Error {
        var entry: LegacySkippedEntry
    }

    /// One element of the list as an entry, or why it is skipped.
    private static func entry(_ element: JSONValue, position: Int, source: String, timeZone: TimeZone) -> Result<LegacyTokenEntry, Skip> {
        guard let object = element.objectValue else {
            return .failure(Skip(entry: LegacySkippedEntry(source: source, position: position, reason: .malformed("not a JSON object"))))
        }
        // Readable identification for the report, whatever else is wrong.
        let userID = object["userId"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        let authority = object["_authority"]?.stringValue
        let resource = object["resource"]?.stringValue
        func skip(_ reason: LegacySkippedEntry.Reason) -> Result<LegacyTokenEntry, Skip> {
            .failure(Skip(entry: LegacySkippedEntry(
                source: source, position: position, reason: reason, userID: userID, authority: authority, resource: resource)))
        }
        // Service principals first: their `accessToken` is a client secret, and they are never users.
        if isPresent(object["servicePrincipalId"]) || isPresent(object["servicePrincipalTenant"]) {
            return .failure(Skip(entry: LegacySkippedEntry(source: source, position: position, reason: .servicePrincipal)))
        }
        let stringFields = [
            "_authority", "_clientId", "resource", "userId", "refreshToken", "accessToken", "expiresOn", "createdOn",
            "tokenType", "oid", "tenantId", "givenName", "familyName", "identityProvider",
        ]
        for field in stringFields where isPresent(object[field]) && object[field]?.stringValue == nil {
            return skip(.malformed("`\(field)` is not a string"))
        }
        for field in ["isMRRT", "isUserIdDisplayable"] where isPresent(object[field]) && object[field]?.boolValue == nil {
            return skip(.malformed("`\(field)` is not true or false"))
        }
        var expiresIn: Int?
        if let value = object["expiresIn"], isPresent(value) {
            guard let seconds = value.doubleValue, seconds.isFinite, seconds == seconds.rounded(), abs(seconds) < 1e12 else {
                return skip(.malformed("`expiresIn` is not a whole number of seconds"))
            }
            expiresIn = Int(seconds)
        }
        var expiresOn: Date?
        if let text = object["expiresOn"]?.stringValue {
            guard let date = date(fromExpiresOn: text, timeZone: timeZone) else {
                return skip(.malformed("`expiresOn` is not a date (ADAL for Python writes 'YYYY-MM-DD HH:MM:SS.ffffff' in local time)"))
            }
            expiresOn = date
        }
        guard let userID else { return skip(.noUser) }
        guard let authority, !authority.isEmpty else { return skip(.malformed("no `_authority`")) }
        guard let url = URL(string: authority), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = url.host, !host.isEmpty
        else {
            return skip(.malformed("`_authority` is not an absolute http(s) URL"))
        }
        guard let clientID = object["_clientId"]?.stringValue, !clientID.isEmpty else { return skip(.malformed("no `_clientId`")) }
        guard let refreshToken = object["refreshToken"]?.stringValue, !refreshToken.isEmpty else { return skip(.noRefreshToken) }
        func optional(_ field: String) -> String? { object[field]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } }
        return .success(LegacyTokenEntry(
            source: source, position: position, authority: authority, clientID: clientID, resource: optional("resource"),
            userID: userID, refreshToken: refreshToken, isUserIDDisplayable: object["isUserIdDisplayable"]?.boolValue,
            objectID: optional("oid"), tenantID: optional("tenantId"), givenName: optional("givenName"),
            familyName: optional("familyName"), identityProvider: optional("identityProvider"),
            expiresOn: expiresOn, expiresIn: expiresIn, tokenType: optional("tokenType"),
            isMRRT: object["isMRRT"]?.boolValue ?? false))
    }

    /// A field is present unless it is missing or `null` (ADAL for Python writes `None` as `null`).
    private static func isPresent(_ value: JSONValue?) -> Bool {
        guard let value else { return false }
        return value != .null
    }

    /// Reads an `expiresOn` value: `YYYY-MM-DD HH:MM:SS[.f…]` (Python's `str(datetime)`, 1 to 6
    /// fraction digits), with `T` instead of the space, and with an optional `Z` or `±HH:MM` offset
    /// (ISO 8601; then `timeZone` is not used).
    /// - Parameters:
    ///   - text: the value.
    ///   - timeZone: the zone of a time without an offset.
    /// - Returns: the instant, or `nil` when the text is not such a date or names a day or time
    ///   that does not exist (month 13, February 30, hour 24).
    public static func date(fromExpiresOn text: String, timeZone: TimeZone) -> Date? {
        let scalars = Array(text.trimmingCharacters(in: .whitespaces).utf8)
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= scalars.count else { return nil }
            var value = 0
            for offset in 0..<digits {
                let byte = scalars[index + offset]
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += digits
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < scalars.count, characters.utf8.contains(scalars[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
              expect(" T"), let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2)
        else { return nil }
        var nanoseconds = 0
        if index < scalars.count, scalars[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < scalars.count, (0x30...0x39).contains(scalars[index]), digits < 9 {
                nanoseconds = nanoseconds * 10 + Int(scalars[index] - 0x30)
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<9 { nanoseconds *= 10 }
        }
        var zone = timeZone
        if index < scalars.count {
            if scalars[index] == UInt8(ascii: "Z") {
                index += 1
                zone = TimeZone(secondsFromGMT: 0)!
            } else if scalars[index] == UInt8(ascii: "+") || scalars[index] == UInt8(ascii: "-") {
                let sign = scalars[index] == UInt8(ascii: "-") ? -1 : 1
                index += 1
                guard let hours = number(2), expect(":"), let minutes = number(2), hours < 24, minutes < 60,
                      let offset = TimeZone(secondsFromGMT: sign * (hours * 3600 + minutes * 60))
                else { return nil }
                zone = offset
            }
        }
        guard index == scalars.count, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else {
            return nil
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        guard let date = calendar.date(from: components) else { return nil }
        // A day the month does not have (February 30) rolls over; refuse it.
        let back = calendar.dateComponents([.year, .month, .day], from: date)
        guard back.year == year, back.month == month, back.day == day else { return nil }
        return date.addingTimeInterval(Double(nanoseconds) / 1_000_000_000)
    }
}

/// read(2), named apart from ``ADALPythonTokenCache/read()``.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
