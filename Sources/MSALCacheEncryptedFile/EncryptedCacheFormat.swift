public import Foundation
public import MSALCore

/// How the key of an encrypted cache file is obtained; stored, authenticated, in the file's header.
public enum KDFInfo: Sendable, Hashable {
    /// A raw 256-bit key (a key file or a keyring secret). KDF id 0; parameters and salt are zero.
    case rawKey
    /// A key derived from a passphrase with scrypt, the parameters and a 16-byte salt. KDF id 1.
    case scrypt(ScryptParameters, salt: [UInt8])

    /// The salt length of ``scrypt(_:salt:)``.
    public static let saltLength = 16

    /// scrypt with `parameters` and a fresh 16-byte random salt (`RAND_bytes`), for a new file.
    /// - Throws: ``MSALError`` `.internal(.unexpected)` when OpenSSL cannot produce random bytes.
    public static func freshScrypt(parameters: ScryptParameters = ScryptParameters()) throws(MSALError) -> KDFInfo {
        .scrypt(parameters, salt: try randomBytes(saltLength))
    }

    /// For ``scrypt(_:salt:)``, the key for `passphrase` (``EncryptedCacheKey/derive(passphrase:salt:parameters:)``).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` for ``rawKey``, which has no passphrase,
    ///   or as ``EncryptedCacheKey/derive(passphrase:salt:parameters:)`` does.
    public func deriveKey(passphrase: String) throws(MSALError) -> EncryptedCacheKey {
        guard case let .scrypt(parameters, salt) = self else {
            throw .internal(.cacheError, "The encrypted cache file is protected by a key file or keyring key, not a passphrase.")
        }
        return try EncryptedCacheKey.derive(passphrase: passphrase, salt: salt, parameters: parameters)
    }
}

/// The encrypted token cache file format: a pure codec from plaintext bytes to file bytes and back,
/// with AES-256-GCM (OpenSSL EVP) and an authenticated, versioned header.
///
/// The format version says what the plaintext is: `1`, MSAL's unified JSON
/// (``AccessGroupPartitionedJSON``); `2`, the binary layout of ``BinaryCacheDocument``. Both are
/// read; version 2 is written.
///
/// Byte layout (integers big-endian); the first 54 bytes, up to and including the nonce, are the
/// header and are authenticated as GCM's additional data, so no header byte can be altered unnoticed:
///
/// | Offset | Size | Field |
/// |-------:|-----:|-------|
/// | 0      | 8    | magic `MSALENC1` (ASCII) |
/// | 8      | 1    | format version, `1` or `2` (see above) |
/// | 9      | 1    | KDF id: `0` raw key (key file, keyring), `1` scrypt |
/// | 10     | 8    | scrypt N (`0` for KDF 0) |
/// | 18     | 4    | scrypt r (`0` for KDF 0) |
/// | 22     | 4    | scrypt p (`0` for KDF 0) |
/// | 26     | 16   | scrypt salt (zeros for KDF 0) |
/// | 42     | 12   | GCM nonce, fresh random bytes on every ``seal(_:key:kdf:)`` |
/// | 54     | n    | AES-256-GCM ciphertext (as long as the plaintext) |
/// | 54 + n | 16   | GCM tag |
///
/// A file is therefore at least 70 bytes long (an empty plaintext).
public enum EncryptedCacheFormat {
    /// `MSALENC1`.
    public static let magic: [UInt8] = Array("MSALENC1".utf8)
    /// The format version this code writes: `2`, a ``BinaryCacheDocument`` plaintext.
    public static let version: UInt8 = 2
    /// The format versions this code reads: `1` (MSAL JSON plaintext) and `2`.
    public static let readableVersions: ClosedRange<UInt8> = 1 ... 2
    /// The header length: magic, version, KDF id, parameters, salt, nonce.
    public static let headerLength = 54
    /// The shortest valid file: a header and a tag (empty plaintext).
    public static let minimumLength = headerLength + AESGCM.tagLength

    static let kdfRawKey: UInt8 = 0
    static let kdfScrypt: UInt8 = 1
    static let nonceOffset = 42

    /// Encrypts `plaintext` under `key` with a fresh random nonce.
    /// - Parameters:
    ///   - kdf: how `key` was obtained, recorded in the header so ``open(_:key:)`` can obtain it again.
    ///   - version: the format version recorded in the header, which says what `plaintext` is
    ///     (``readableVersions``); ``version`` unless told otherwise.
    /// - Returns: the file bytes; two seals of the same plaintext differ (the nonce does).
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when `kdf` has a salt that is not 16
    ///   bytes or invalid scrypt parameters, or `version` is not one of ``readableVersions``;
    ///   `.internal(.unexpected)` when OpenSSL fails.
    public static func seal(_ plaintext: Data, key: EncryptedCacheKey, kdf: KDFInfo, version: UInt8 = version) throws(MSALError) -> Data {
        guard readableVersions.contains(version) else {
            throw .internal(.invalidParameter, "Encrypted cache format version \(version) does not exist; versions \(readableVersions.lowerBound)–\(readableVersions.upperBound) do.")
        }
        var header = magic
        header.append(version)
        switch kdf {
        case .rawKey:
            header.append(kdfRawKey)
            header += [UInt8](repeating: 0, count: 8 + 4 + 4 + KDFInfo.saltLength)
        case let .scrypt(parameters, salt):
            _ = try parameters.validatedMemoryLimit()
            guard salt.count == KDFInfo.saltLength else {
                throw .internal(.invalidParameter, "The scrypt salt of an encrypted cache file must be \(KDFInfo.saltLength) bytes, not \(salt.count).")
            }
            header.append(kdfScrypt)
            header += bigEndian(parameters.n) + bigEndian(parameters.r) + bigEndian(parameters.p) + salt
        }
        let nonce = try randomBytes(AESGCM.nonceLength)
        header += nonce
        assert(header.count == headerLength)
        let sealed = try AESGCM.seal(key: key.bytes, nonce: nonce, plaintext: Array(plaintext), aad: header)
        return Data(header + sealed.ciphertext + sealed.tag)
    }

    /// The format version a file's header names, read without the key.
    /// - Returns: the version byte, or `nil` when `file` does not start with the magic and a version.
    public static func formatVersion(of file: Data) -> UInt8? {
        guard file.count > magic.count, file.starts(with: magic) else { return nil }
        return file[file.startIndex + magic.count]
    }

    /// Whether `file` is an encrypted cache of a format version this code does not read (a newer
    /// swift-msal wrote it): opening it fails however right the key is.
    public static func hasUnreadableVersion(_ file: Data) -> Bool {
        formatVersion(of: file).map { !readableVersions.contains($0) } ?? false
    }

    /// Checks and decrypts an encrypted cache file, of any version in ``readableVersions``.
    /// - Returns: the plaintext, only when the tag verifies; never unauthenticated bytes.
    /// - Throws: as ``openVersioned(_:key:)``.
    public static func open(_ file: Data, key: (KDFInfo) throws(MSALError) -> EncryptedCacheKey) throws(MSALError) -> Data {
        try openVersioned(file, key: key).plaintext
    }

    /// Checks and decrypts an encrypted cache file.
    /// - Parameters:
    ///   - key: given the file's KDF (a raw key, or scrypt with its parameters and salt), returns the
    ///     key; it may throw, e.g. when no passphrase is available. Called only for a well-formed header.
    /// - Returns: the plaintext, only when the tag verifies, never unauthenticated bytes; and the
    ///   file's format version, which says what the plaintext is.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` with a message saying which: the data is not
    ///   an encrypted cache (no `MSALENC1` magic), its format version is not supported, the file is
    ///   truncated (shorter than a header and a tag), the header is malformed (unknown KDF id, bad
    ///   scrypt parameters), or authentication failed (wrong key, or the file was altered or damaged);
    ///   and any error `key` throws.
    public static func openVersioned(
        _ file: Data, key: (KDFInfo) throws(MSALError) -> EncryptedCacheKey
    ) throws(MSALError) -> (plaintext: Data, version: UInt8) {
        let bytes = [UInt8](file)
        guard bytes.count >= magic.count else {
            if bytes.elementsEqual(magic.prefix(bytes.count)) {
                throw .internal(.cacheError, "The encrypted cache file is truncated: \(bytes.count) bytes, less than the \(minimumLength) of an empty cache. Delete it to start over.")
            }
            throw notEncrypted
        }
        guard bytes.prefix(magic.count).elementsEqual(magic) else { throw notEncrypted }
        guard let fileVersion = formatVersion(of: file) else { throw truncated(bytes.count) }
        guard readableVersions.contains(fileVersion) else {
            throw .internal(.cacheError, "The encrypted cache file has format version \(fileVersion); this swift-msal reads versions \(readableVersions.lowerBound)–\(readableVersions.upperBound) only. Upgrade swift-msal, or delete the file to start over.")
        }
        guard bytes.count >= minimumLength else { throw truncated(bytes.count) }
        let kdf = try parseKDF(bytes)
        let header = Array(bytes[0 ..< headerLength])
        let nonce = Array(bytes[nonceOffset ..< headerLength])
        let ciphertext = Array(bytes[headerLength ..< bytes.count - AESGCM.tagLength])
        let tag = Array(bytes[(bytes.count - AESGCM.tagLength)...])
        let fileKey = try key(kdf)
        do {
            return (Data(try AESGCM.open(key: fileKey.bytes, nonce: nonce, ciphertext: ciphertext, aad: header, tag: tag)), fileVersion)
        } catch where error.internalCode == .cacheError {
            throw .internal(.cacheError, "The encrypted cache file could not be decrypted: the key or passphrase is wrong, or the file was altered or damaged. Nothing was read from it.")
        }
    }

    private static var notEncrypted: MSALError {
        .internal(.cacheError, "The file is not an encrypted swift-msal token cache (it does not start with MSALENC1).")
    }

    private static func truncated(_ count: Int) -> MSALError {
        .internal(.cacheError, "The encrypted cache file is truncated: \(count) bytes, less than the \(minimumLength) of an empty cache. Delete it to start over.")
    }

    private static func parseKDF(_ bytes: [UInt8]) throws(MSALError) -> KDFInfo {
        let id = bytes[9]
        let n = readBigEndian(bytes, at: 10, as: UInt64.self)
        let r = readBigEndian(bytes, at: 18, as: UInt32.self)
        let p = readBigEndian(bytes, at: 22, as: UInt32.self)
        let salt = Array(bytes[26 ..< nonceOffset])
        switch id {
        case kdfRawKey:
            guard n == 0, r == 0, p == 0, salt.allSatisfy({ $0 == 0 }) else {
                throw .internal(.cacheError, "The encrypted cache file's header is malformed: a raw-key file with scrypt parameters. The file was altered or damaged.")
            }
            return .rawKey
        case kdfScrypt:
            let parameters = ScryptParameters(n: n, r: r, p: p)
            do {
                _ = try parameters.validatedMemoryLimit()
            } catch {
                throw .internal(.cacheError, "The encrypted cache file's header is malformed: \(error.message) The file was altered or damaged.")
            }
            return .scrypt(parameters, salt: salt)
        default:
            throw .internal(.cacheError, "The encrypted cache file uses key derivation \(id), which this swift-msal does not support. Upgrade swift-msal, or delete the file to start over.")
        }
    }

    private static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        (0 ..< T.bitWidth / 8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }

    private static func readBigEndian<T: FixedWidthInteger>(_ bytes: [UInt8], at offset: Int, as _: T.Type) -> T {
        bytes[offset ..< offset + T.bitWidth / 8].reduce(T.zero) { ($0 << 8) | T($1) }
    }
}
