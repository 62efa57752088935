public import MSALCore

/// The cost parameters of scrypt (RFC 7914 §2): CPU/memory cost `n` (a power of two above 1),
/// block size `r` and parallelization `p`.
///
/// The defaults (`N = 2^15, r = 8, p = 1`) are the interactive-login setting of RFC 7914 §2 and
/// OWASP's minimum: about 32 MiB and a few tenths of a second per derivation.
public struct ScryptParameters: Sendable, Hashable, CustomStringConvertible {
    /// CPU/memory cost: a power of two greater than 1.
    public var n: UInt64
    /// Block size.
    public var r: UInt32
    /// Parallelization.
    public var p: UInt32

    /// The most memory a derivation may use (`128 · r · N` bytes): 1 GiB. A file naming larger
    /// parameters is refused rather than allowed to exhaust memory.
    public static let maxMemoryBytes: UInt64 = 1 << 30

    /// Creates parameters; ``EncryptedCacheKey/derive(passphrase:salt:parameters:)`` checks them.
    public init(n: UInt64 = 1 << 15, r: UInt32 = 8, p: UInt32 = 1) {
        self.n = n
        self.r = r
        self.p = p
    }

    public var description: String { "scrypt(N=\(n), r=\(r), p=\(p))" }

    /// The memory OpenSSL must be allowed for these parameters, or an error when they are invalid
    /// or too costly.
    func validatedMemoryLimit() throws(MSALError) -> UInt64 {
        guard n > 1, n & (n - 1) == 0 else {
            throw .internal(.invalidParameter, "scrypt N must be a power of two greater than 1, not \(n).")
        }
        guard r >= 1, p >= 1 else {
            throw .internal(.invalidParameter, "scrypt r and p must be at least 1 (\(self)).")
        }
        // RFC 7914 §2: p ≤ (2^32 − 1) · hLen / MFLen; OpenSSL also requires p · r < 2^30.
        guard UInt64(p) * UInt64(r) < 1 << 30 else {
            throw .internal(.invalidParameter, "scrypt p · r must be below 2^30 (\(self)).")
        }
        let (blockBytes, overflow1) = UInt64(128).multipliedReportingOverflow(by: UInt64(r))
        let (memory, overflow2) = blockBytes.multipliedReportingOverflow(by: n)
        guard !overflow1, !overflow2, memory <= Self.maxMemoryBytes else {
            throw .internal(.invalidParameter, "scrypt \(self) needs more than \(Self.maxMemoryBytes >> 20) MiB of memory; refusing.")
        }
        // V is 128·r·N bytes; B and XY add 128·r·(p + 2). Leave room for both.
        return memory + 128 * UInt64(r) * (UInt64(p) + 2) + (1 << 20)
    }
}

/// A 256-bit key for the encrypted token cache file.
///
/// Its ``description``, ``debugDescription`` and mirror never show the key bytes.
public struct EncryptedCacheKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key length in bytes (AES-256).
    public static let byteCount = 32

    /// The key bytes; only this module reads them.
    let bytes: [UInt8]

    /// Wraps an existing key (e.g. read from a key file or a keyring).
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` unless `rawKey` is exactly 32 bytes.
    public init(rawKey: [UInt8]) throws(MSALError) {
        guard rawKey.count == Self.byteCount else {
            throw .internal(.invalidParameter, "An encrypted cache key must be exactly \(Self.byteCount) bytes, not \(rawKey.count).")
        }
        bytes = rawKey
    }

    /// Derives a key from a passphrase with scrypt (RFC 7914) through OpenSSL's `EVP_PBE_scrypt`.
    ///
    /// The passphrase is used as its UTF-8 bytes, unnormalized. The same passphrase, salt and
    /// parameters always give the same key.
    /// - Parameters:
    ///   - salt: the salt; the file format uses 16 random bytes (``KDFInfo/freshScrypt(parameters:)``).
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when the parameters are invalid or need
    ///   more than ``ScryptParameters/maxMemoryBytes``; `.internal(.unexpected)` when OpenSSL fails.
    public static func derive(passphrase: String, salt: [UInt8], parameters: ScryptParameters) throws(MSALError) -> EncryptedCacheKey {
        let maxMemory = try parameters.validatedMemoryLimit()
        let derived = try Scrypt.derive(password: Array(passphrase.utf8), salt: salt, n: parameters.n, r: parameters.r,
                                        p: parameters.p, maxMemory: maxMemory, length: byteCount)
        return try EncryptedCacheKey(rawKey: derived)
    }

    /// A new random key from OpenSSL's CSPRNG (`RAND_bytes`), e.g. for a new key file.
    /// - Throws: ``MSALError`` `.internal(.unexpected)` when OpenSSL cannot produce random bytes.
    public static func random() throws(MSALError) -> EncryptedCacheKey {
        try EncryptedCacheKey(rawKey: randomBytes(byteCount))
    }

    /// The 32 key bytes, for keeping the key in a secret store (a keyring item, a secret manager).
    /// Never log or print them.
    /// - Returns: a copy of the raw key.
    public func exportRawKey() -> [UInt8] {
        bytes
    }

    /// Compares in time independent of where the keys differ.
    public static func == (lhs: EncryptedCacheKey, rhs: EncryptedCacheKey) -> Bool {
        guard lhs.bytes.count == rhs.bytes.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.bytes.indices { difference |= lhs.bytes[index] ^ rhs.bytes[index] }
        return difference == 0
    }

    /// `EncryptedCacheKey(256-bit, redacted)`: never the key.
    public var description: String { "EncryptedCacheKey(256-bit, redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
