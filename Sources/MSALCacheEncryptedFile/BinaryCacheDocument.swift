public import Foundation
public import MSALCache
public import MSALCore

/// The plaintext of an encrypted cache file of format version 2 (``EncryptedCacheFormat``): every
/// access group's entries of MSAL's unified schema in a compact binary layout that is read without a
/// JSON parse.
///
/// Why not JSON (format version 1, still read): a cold start decrypts the file and must build every
/// entry. Parsing 11 MB of MSAL JSON for 10k access tokens takes 90–150 ms with Foundation's
/// `JSONSerialization` on a 2-core machine, `JSONDecoder` 72–132 ms and a binary property list
/// 170–360 ms (Docs/Performance.md); this layout is read in a few milliseconds. It holds exactly
/// what ``TokenCacheContents`` holds, so nothing is lost between the versions: the unified schema's
/// fields, each entry's unmodelled fields, unknown sections and unreadable entries (these three as
/// compact JSON, usually empty).
///
/// Layout (integers are unsigned LEB128 varints unless said otherwise; a string is a varint byte
/// count and its UTF-8 bytes):
///
/// ```
/// document := groupCount, { groupName: string, blockLength, block }   (groups in name order)
/// block    := stringCount, { string }                                  (the block's string table)
///             unknownSections: string (JSON object, or empty)
///             unreadableEntries: string (JSON object of objects, or empty)
///             for AccessToken, RefreshToken, IdToken, Account, AppMetadata:
///                 entryCount, { entry }
/// entry    := key, fields of the section (below)
/// key      := 0 (the entry's own CacheEntry.key) | 1, string (a key written by another MSAL)
/// ```
///
/// Identifier fields (everything but secrets and keys) are indexes into the block's string table,
/// so a home account ID, environment, client ID, realm or target is stored and read once per block,
/// and the entries read share one copy of it; an optional identifier is 0 for none, else index + 1.
/// Times are 8-byte little-endian signed epoch seconds, rounded down as MSAL JSON writes them.
///
/// | section | fields, in order |
/// |---|---|
/// | AccessToken | home_account_id, environment, client_id, realm, target, secret (string), token_type, cached_at, expires_on, extended_expires_on?, refresh_on?, extra |
/// | RefreshToken | home_account_id, environment, client_id, family_id?, secret (string), target?, extra |
/// | IdToken | home_account_id, environment, client_id, realm, secret (string), extra |
/// | Account | home_account_id, environment, realm, local_account_id, username?, authority_type, account_source?, name?, given_name?, family_name?, extra |
/// | AppMetadata | client_id, environment, family_id?, extra |
///
/// An optional time is a byte 0 (none) or 1 and the time. `extra` is the entry's unmodelled fields
/// as a compact JSON object string, empty when there are none.
///
/// Each group's block is self-contained, so a store reads only its own group and writes the others
/// back byte for byte.
public struct BinaryCacheDocument: Sendable {
    /// Each group's block, by group name.
    private var blocks: [String: [UInt8]]

    /// An empty document.
    public init() {
        blocks = [:]
    }

    /// Reads a document's groups (their entries are read by ``contents(accessGroup:)``).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the bytes are not a document of this layout
    ///   (truncated, or a length past the end).
    public init(data: Data) throws(MSALError) {
        var reader = BinaryReader(Array(data))
        var blocks: [String: [UInt8]] = [:]
        let count = try reader.count()
        for _ in 0 ..< count {
            let name = try reader.string()
            blocks[name] = try reader.bytes(count: reader.count())
        }
        guard reader.isAtEnd else { throw BinaryReader.damaged }
        self.blocks = blocks
    }

    /// Converts a version 1 document (MSAL JSON of every group) into this layout, every group included.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when a group cannot be read, or an unmodelled
    ///   value cannot be encoded.
    public init(converting document: AccessGroupPartitionedJSON) throws(MSALError) {
        blocks = [:]
        for group in document.accessGroups {
            try replace(accessGroup: group, with: document.contents(accessGroup: group))
        }
    }

    /// The access groups the document holds, sorted.
    public var accessGroups: [String] { blocks.keys.sorted() }

    /// The entries of `accessGroup`.
    /// - Returns: that group's contents (empty when the document has none).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the group's block is damaged.
    public func contents(accessGroup: String) throws(MSALError) -> TokenCacheContents {
        guard let block = blocks[accessGroup] else { return TokenCacheContents() }
        return try Self.decode(block)
    }

    /// Replaces the entries of `accessGroup` with `contents` (an empty cache removes the group); the
    /// other groups stay as they are.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when an unmodelled value cannot be encoded as JSON.
    public mutating func replace(accessGroup: String, with contents: TokenCacheContents) throws(MSALError) {
        if contents.count == 0, contents.unknownSections.isEmpty, contents.unreadableEntries.isEmpty {
            blocks[accessGroup] = nil
        } else {
            blocks[accessGroup] = try Self.encode(contents)
        }
    }

    /// The document's bytes (groups in name order).
    public func serialized() -> Data {
        var writer = BinaryWriter()
        writer.count(blocks.count)
        for name in blocks.keys.sorted() {
            writer.string(name)
            writer.count(blocks[name]!.count)
            writer.bytes += blocks[name]!
        }
        return Data(writer.bytes)
    }

    // MARK: Blocks

    static func encode(_ contents: TokenCacheContents) throws(MSALError) -> [UInt8] {
        var table = StringTable()
        var body = BinaryWriter()
        body.string(contents.unknownSections.isEmpty ? "" : try json(.object(contents.unknownSections)))
        body.string(contents.unreadableEntries.isEmpty ? "" : try json(.object(contents.unreadableEntries.mapValues { .object($0) })))

        body.count(contents.accessTokens.count)
        for (key, entry) in contents.accessTokens {
            body.key(key, derived: entry.key)
            body.count(table.index(entry.homeAccountID))
            body.count(table.index(entry.environment))
            body.count(table.index(entry.clientID))
            body.count(table.index(entry.realm))
            body.count(table.index(entry.target))
            body.string(entry.secret)
            body.count(table.index(entry.tokenType))
            body.time(entry.cachedAt)
            body.time(entry.expiresOn)
            body.optionalTime(entry.extendedExpiresOn)
            body.optionalTime(entry.refreshOn)
            try body.extra(entry.additionalFields)
        }
        body.count(contents.refreshTokens.count)
        for (key, entry) in contents.refreshTokens {
            body.key(key, derived: entry.key)
            body.count(table.index(entry.homeAccountID))
            body.count(table.index(entry.environment))
            body.count(table.index(entry.clientID))
            body.count(table.optionalIndex(entry.familyID))
            body.string(entry.secret)
            body.count(table.optionalIndex(entry.target))
            try body.extra(entry.additionalFields)
        }
        body.count(contents.idTokens.count)
        for (key, entry) in contents.idTokens {
            body.key(key, derived: entry.key)
            body.count(table.index(entry.homeAccountID))
            body.count(table.index(entry.environment))
            body.count(table.index(entry.clientID))
            body.count(table.index(entry.realm))
            body.string(entry.secret)
            try body.extra(entry.additionalFields)
        }
        body.count(contents.accounts.count)
        for (key, entry) in contents.accounts {
            body.key(key, derived: entry.key)
            body.count(table.index(entry.homeAccountID))
            body.count(table.index(entry.environment))
            body.count(table.index(entry.realm))
            body.count(table.index(entry.localAccountID))
            body.count(table.optionalIndex(entry.username))
            body.count(table.index(entry.authorityType))
            body.count(table.optionalIndex(entry.accountSource))
            body.count(table.optionalIndex(entry.name))
            body.count(table.optionalIndex(entry.givenName))
            body.count(table.optionalIndex(entry.familyName))
            try body.extra(entry.additionalFields)
        }
        body.count(contents.appMetadata.count)
        for (key, entry) in contents.appMetadata {
            body.key(key, derived: entry.key)
            body.count(table.index(entry.clientID))
            body.count(table.index(entry.environment))
            body.count(table.optionalIndex(entry.familyID))
            try body.extra(entry.additionalFields)
        }

        var block = BinaryWriter()
        block.count(table.strings.count)
        for string in table.strings { block.string(string) }
        block.bytes += body.bytes
        return block.bytes
    }

    static func decode(_ block: [UInt8]) throws(MSALError) -> TokenCacheContents {
        var reader = BinaryReader(block)
        var strings: [String] = []
        let stringCount = try reader.count()
        strings.reserveCapacity(stringCount)
        for _ in 0 ..< stringCount { strings.append(try reader.string()) }
        func string() throws(MSALError) -> String {
            let index = try reader.count()
            guard index < strings.count else { throw BinaryReader.damaged }
            return strings[index]
        }
        func optionalString() throws(MSALError) -> String? {
            let index = try reader.count()
            guard index > 0 else { return nil }
            guard index <= strings.count else { throw BinaryReader.damaged }
            return strings[index - 1]
        }

        var contents = TokenCacheContents()
        if case .object(let sections) = try reader.json() { contents.unknownSections = sections }
        if case .object(let sections) = try reader.json() {
            for (name, value) in sections {
                guard case .object(let entries) = value else { throw BinaryReader.damaged }
                contents.unreadableEntries[name] = entries
            }
        }

        var count = try reader.count()
        contents.accessTokens.reserveCapacity(count)
        for _ in 0 ..< count {
            let key = try reader.key()
            let entry = try AccessTokenEntry(
                homeAccountID: string(), environment: string(), clientID: string(), realm: string(), target: string(),
                secret: reader.string(), tokenType: string(), cachedAt: reader.time(), expiresOn: reader.time(),
                extendedExpiresOn: reader.optionalTime(), refreshOn: reader.optionalTime(), additionalFields: reader.extra())
            if let key { contents.accessTokens[key] = entry } else { contents.accessTokens.store(entry) }
        }
        count = try reader.count()
        for _ in 0 ..< count {
            let key = try reader.key()
            let entry = try RefreshTokenEntry(
                homeAccountID: string(), environment: string(), clientID: string(), familyID: optionalString(),
                secret: reader.string(), target: optionalString(), additionalFields: reader.extra())
            contents.refreshTokens[key ?? entry.key] = entry
        }
        count = try reader.count()
        contents.idTokens.reserveCapacity(count)
        for _ in 0 ..< count {
            let key = try reader.key()
            let entry = try IDTokenEntry(
                homeAccountID: string(), environment: string(), clientID: string(), realm: string(),
                secret: reader.string(), additionalFields: reader.extra())
            contents.idTokens[key ?? entry.key] = entry
        }
        count = try reader.count()
        contents.accounts.reserveCapacity(count)
        for _ in 0 ..< count {
            let key = try reader.key()
            let entry = try AccountEntry(
                homeAccountID: string(), environment: string(), realm: string(), localAccountID: string(),
                username: optionalString(), authorityType: string(), accountSource: optionalString(), name: optionalString(),
                givenName: optionalString(), familyName: optionalString(), additionalFields: reader.extra())
            contents.accounts[key ?? entry.key] = entry
        }
        count = try reader.count()
        for _ in 0 ..< count {
            let key = try reader.key()
            let entry = try AppMetadataEntry(
                clientID: string(), environment: string(), familyID: optionalString(), additionalFields: reader.extra())
            contents.appMetadata[key ?? entry.key] = entry
        }
        guard reader.isAtEnd else { throw BinaryReader.damaged }
        return contents
    }

    /// Compact JSON text of `value` (sorted keys).
    static func json(_ value: JSONValue) throws(MSALError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        } catch {
            throw .internal(.cacheError, "The token cache could not be encoded (an unmodelled field holds a value JSON cannot represent).")
        }
    }
}

/// Numbers the distinct strings of a block in the order they are first written.
private struct StringTable {
    var strings: [String] = []
    var indexes: [String: Int] = [:]

    mutating func index(_ string: String) -> Int {
        if let index = indexes[string] { return index }
        indexes[string] = strings.count
        strings.append(string)
        return strings.count - 1
    }

    /// 0 for `nil`, else the string's index + 1.
    mutating func optionalIndex(_ string: String?) -> Int {
        string.map { index($0) + 1 } ?? 0
    }
}

/// Appends the layout's values to a byte array.
private struct BinaryWriter {
    var bytes: [UInt8] = []

    /// An unsigned LEB128 varint.
    mutating func count(_ value: Int) {
        var value = UInt64(value)
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func string(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            count(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    /// 0 when `key` is the entry's own key, else 1 and the key.
    mutating func key(_ key: String, derived: String) {
        if key == derived {
            bytes.append(0)
        } else {
            bytes.append(1)
            string(key)
        }
    }

    /// Epoch seconds rounded down (as MSAL JSON writes them), 8 bytes little-endian; a time outside
    /// what 64-bit seconds hold is clamped.
    mutating func time(_ date: Date) {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let value: Int64 = seconds.isNaN ? 0 : seconds >= 9.2e18 ? .max : seconds <= -9.2e18 ? .min : Int64(seconds)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func optionalTime(_ date: Date?) {
        guard let date else {
            bytes.append(0)
            return
        }
        bytes.append(1)
        time(date)
    }

    /// The unmodelled fields as compact JSON, or an empty string when there are none.
    mutating func extra(_ fields: [String: JSONValue]) throws(MSALError) {
        string(fields.isEmpty ? "" : try BinaryCacheDocument.json(.object(fields)))
    }
}

/// Reads the layout's values, checking every length against the bytes left.
private struct BinaryReader {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    static var damaged: MSALError {
        .internal(.cacheError, "The token cache's binary content is damaged (a length or an index points past its end).")
    }

    var isAtEnd: Bool { position == bytes.count }

    /// A varint that counts something in the bytes left (a length, a number of entries, an index):
    /// never more than the bytes there are, so nothing is reserved for a damaged count.
    mutating func count() throws(MSALError) -> Int {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < bytes.count, shift < 63 else { throw Self.damaged }
            let byte = bytes[position]
            position += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { break }
            shift += 7
        }
        guard value <= UInt64(bytes.count) else { throw Self.damaged }
        return Int(value)
    }

    mutating func bytes(count: Int) throws(MSALError) -> [UInt8] {
        guard count <= bytes.count - position else { throw Self.damaged }
        defer { position += count }
        return Array(bytes[position ..< position + count])
    }

    mutating func string() throws(MSALError) -> String {
        let count = try count()
        guard count <= bytes.count - position else { throw Self.damaged }
        defer { position += count }
        return String(decoding: bytes[position ..< position + count], as: UTF8.self)
    }

    mutating func key() throws(MSALError) -> String? {
        guard position < bytes.count else { throw Self.damaged }
        let flag = bytes[position]
        position += 1
        switch flag {
        case 0: return nil
        case 1: return try string()
        default: throw Self.damaged
        }
    }

    mutating func time() throws(MSALError) -> Date {
        guard bytes.count - position >= 8 else { throw Self.damaged }
        var value: UInt64 = 0
        for offset in 0 ..< 8 { value |= UInt64(bytes[position + offset]) << (8 * UInt64(offset)) }
        position += 8
        return Date(timeIntervalSince1970: Double(Int64(bitPattern: value)))
    }

    mutating func optionalTime() throws(MSALError) -> Date? {
        guard position < bytes.count else { throw Self.damaged }
        let flag = bytes[position]
        position += 1
        switch flag {
        case 0: return nil
        case 1: return try time()
        default: throw Self.damaged
        }
    }

    /// A JSON string field: `nil` when empty.
    mutating func json() throws(MSALError) -> JSONValue? {
        let text = try string()
        guard !text.isEmpty else { return nil }
        guard let value = JSONValue(parsing: Data(text.utf8)) else { throw Self.damaged }
        return value
    }

    mutating func extra() throws(MSALError) -> [String: JSONValue] {
        guard let value = try json() else { return [:] }
        guard case .object(let fields) = value else { throw Self.damaged }
        return fields
    }
}
