import Foundation
@testable import MSALCacheEncryptedFile
import MSALCore
import Testing

func hex(_ string: String) -> [UInt8] {
    let digits = Array(string.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0 ... $0 + 1]), radix: 16)! }
}

/// Cheap scrypt parameters so the tests stay fast.
let fastScrypt = ScryptParameters(n: 1 << 4, r: 1, p: 1)

/// The `MSALError` `open` throws, or nil when it returns.
func openError(_ file: Data, key: EncryptedCacheKey) -> MSALError? {
    do {
        _ = try EncryptedCacheFormat.open(file) { _ throws(MSALError) in key }
        return nil
    } catch {
        return error
    }
}

@Suite("EncryptedCacheFormat")
struct EncryptedCacheFormatTests {
    let plaintext = Data(#"{"AccessToken":{},"RefreshToken":{"k":{"secret":"RT"}}}"#.utf8)

    @Test("seal then open returns the plaintext, for a raw key and for scrypt")
    func roundTrip() throws {
        let key = try EncryptedCacheKey.random()
        let file = try EncryptedCacheFormat.seal(plaintext, key: key, kdf: .rawKey)
        #expect(file.count == EncryptedCacheFormat.minimumLength + plaintext.count)
        #expect(Array(file.prefix(8)) == Array("MSALENC1".utf8))
        #expect(file[8] == 2 && file[9] == 0)  // format version 2 is written unless told otherwise
        let version1 = try EncryptedCacheFormat.seal(plaintext, key: key, kdf: .rawKey, version: 1)
        #expect(version1[8] == 1)
        #expect(try EncryptedCacheFormat.openVersioned(version1) { _ throws(MSALError) in key } == (plaintext, 1))
        #expect(try EncryptedCacheFormat.openVersioned(file) { _ throws(MSALError) in key } == (plaintext, 2))
        var seen: KDFInfo?
        let opened = try EncryptedCacheFormat.open(file) { kdf throws(MSALError) in
            seen = kdf
            return key
        }
        #expect(opened == plaintext)
        #expect(seen == .rawKey)

        let kdf = try KDFInfo.freshScrypt(parameters: fastScrypt)
        let derived = try kdf.deriveKey(passphrase: "correct horse")
        let scryptFile = try EncryptedCacheFormat.seal(plaintext, key: derived, kdf: kdf)
        #expect(scryptFile[9] == 1)
        let openedScrypt = try EncryptedCacheFormat.open(scryptFile) { found throws(MSALError) in
            seen = found
            return try found.deriveKey(passphrase: "correct horse")
        }
        #expect(openedScrypt == plaintext)
        #expect(seen == kdf)
        #expect(openError(scryptFile, key: try kdf.deriveKey(passphrase: "wrong horse"))?.internalCode == .cacheError)
    }

    @Test("An empty plaintext round-trips")
    func emptyPlaintext() throws {
        let key = try EncryptedCacheKey.random()
        let file = try EncryptedCacheFormat.seal(Data(), key: key, kdf: .rawKey)
        #expect(file.count == EncryptedCacheFormat.minimumLength)
        #expect(try EncryptedCacheFormat.open(file) { _ throws(MSALError) in key }.isEmpty)
    }

    @Test("Two seals of the same plaintext differ (fresh nonce)")
    func freshNonce() throws {
        let key = try EncryptedCacheKey.random()
        let first = try EncryptedCacheFormat.seal(plaintext, key: key, kdf: .rawKey)
        let second = try EncryptedCacheFormat.seal(plaintext, key: key, kdf: .rawKey)
        #expect(first != second)
        #expect(first[42 ..< 54] != second[42 ..< 54])
    }

    @Test("A wrong key is an authentication error, never garbage")
    func wrongKey() throws {
        let file = try EncryptedCacheFormat.seal(plaintext, key: try EncryptedCacheKey.random(), kdf: .rawKey)
        let error = try #require(openError(file, key: try EncryptedCacheKey.random()))
        #expect(error == .internal(.cacheError, ""))
        #expect(error.message.contains("key or passphrase is wrong"))
    }

    @Test("Flipping any single byte (header, nonce, ciphertext, tag) is an error")
    func everyByteFlip() throws {
        let key = try EncryptedCacheKey.random()
        for kdf in [KDFInfo.rawKey, try KDFInfo.freshScrypt(parameters: fastScrypt)] {
            let file = try EncryptedCacheFormat.seal(plaintext, key: key, kdf: kdf)
            for index in file.indices {
                for mask: UInt8 in [0x01, 0x80] {
                    var altered = file
                    altered[index] ^= mask
                    let error = openError(altered, key: key)
                    #expect(error?.internalCode == .cacheError, "byte \(index) mask \(mask) was accepted")
                }
            }
        }
    }

    @Test("A truncated file is an error at every length")
    func truncation() throws {
        let key = try EncryptedCacheKey.random()
        let file = try EncryptedCacheFormat.seal(plaintext, key: key, kdf: .rawKey)
        for length in [0, 1, 7, 8, 9, 10, 41, 53, 54, 69, EncryptedCacheFormat.minimumLength, file.count - 16, file.count - 1] {
            let error = openError(file.prefix(length), key: key)
            #expect(error?.internalCode == .cacheError, "length \(length) was accepted")
        }
        for length in [0, 5, 8, 9, 53, 69] {
            #expect(openError(file.prefix(length), key: key)?.message.contains("truncated") == true, "length \(length)")
        }
        // Past the header, a cut is caught by the tag.
        #expect(openError(file.prefix(file.count - 1), key: key)?.message.contains("altered or damaged") == true)
    }

    @Test("Data without the magic is not an encrypted cache")
    func badMagic() throws {
        let key = try EncryptedCacheKey.random()
        for data in [Data(#"{"AccessToken":{}}"#.utf8), Data("MSALENC2".utf8) + Data(count: 80), Data([0x00])] {
            let error = try #require(openError(data, key: key))
            #expect(error.internalCode == .cacheError)
            #expect(error.message.contains("not an encrypted swift-msal token cache"))
        }
    }

    @Test("Another format version is refused by name")
    func unsupportedVersion() throws {
        let key = try EncryptedCacheKey.random()
        var file = try EncryptedCacheFormat.seal(plaintext, key: key, kdf: .rawKey)
        #expect(EncryptedCacheFormat.formatVersion(of: file) == 2 && !EncryptedCacheFormat.hasUnreadableVersion(file))
        #expect(EncryptedCacheFormat.formatVersion(of: file.prefix(8)) == nil && EncryptedCacheFormat.formatVersion(of: Data("{}".utf8)) == nil)
        for version: UInt8 in [0, 3, 255] {
            file[8] = version
            #expect(EncryptedCacheFormat.formatVersion(of: file) == version && EncryptedCacheFormat.hasUnreadableVersion(file))
            #expect(openError(file, key: key)?.message.contains("format version \(version)") == true)
            #expect(openError(file.prefix(9), key: key)?.message.contains("format version \(version)") == true)
        }
        #expect(throws: MSALError.self) { try EncryptedCacheFormat.seal(plaintext, key: key, kdf: .rawKey, version: 3) }
    }

    @Test("An unknown KDF or absurd scrypt parameters are refused before deriving")
    func malformedHeader() throws {
        let key = try EncryptedCacheKey.random()
        var file = try EncryptedCacheFormat.seal(plaintext, key: key, kdf: .rawKey)
        file[9] = 7
        #expect(openError(file, key: key)?.message.contains("key derivation 7") == true)
        var huge = try EncryptedCacheFormat.seal(plaintext, key: key, kdf: try .freshScrypt(parameters: fastScrypt))
        huge[10] = 0x01  // N = 2^56 + 16
        var called = false
        #expect(throws: MSALError.internal(.cacheError, "")) {
            try EncryptedCacheFormat.open(huge) { _ throws(MSALError) in called = true; return key }
        }
        #expect(!called)
    }

    @Test("The key closure's error is passed on")
    func keyClosureError() throws {
        let file = try EncryptedCacheFormat.seal(plaintext, key: try .random(), kdf: .rawKey)
        #expect(throws: MSALError.internal(.invalidParameter, "")) {
            try EncryptedCacheFormat.open(file) { _ throws(MSALError) in throw .internal(.invalidParameter, "no key") }
        }
    }

    @Test("seal refuses a salt that is not 16 bytes")
    func badSalt() throws {
        #expect(throws: MSALError.internal(.invalidParameter, "")) {
            try EncryptedCacheFormat.seal(Data(), key: try .random(), kdf: .scrypt(fastScrypt, salt: [1, 2, 3]))
        }
    }
}

@Suite("EncryptedCacheKey")
struct EncryptedCacheKeyTests {
    @Test("A raw key must be exactly 32 bytes")
    func rawKeyLength() throws {
        _ = try EncryptedCacheKey(rawKey: [UInt8](repeating: 7, count: 32))
        for count in [0, 16, 31, 33, 64] {
            #expect(throws: MSALError.internal(.invalidParameter, "")) {
                try EncryptedCacheKey(rawKey: [UInt8](repeating: 7, count: count))
            }
        }
    }

    @Test("The description, debug description and dump never show the key")
    func redacted() throws {
        let key = try EncryptedCacheKey(rawKey: [UInt8](repeating: 0xAB, count: 32))
        var dumped = ""
        dump(key, to: &dumped)
        for text in [key.description, key.debugDescription, String(reflecting: key), "\(key)", dumped] {
            #expect(!text.lowercased().contains("ab"), "\(text)")
            #expect(!text.contains("171"), "\(text)")
        }
    }

    @Test("scrypt derivation is deterministic for a salt and differs for another salt or passphrase")
    func deterministic() throws {
        let salt = [UInt8](repeating: 1, count: 16)
        let a = try EncryptedCacheKey.derive(passphrase: "pass", salt: salt, parameters: fastScrypt)
        let b = try EncryptedCacheKey.derive(passphrase: "pass", salt: salt, parameters: fastScrypt)
        let otherSalt = try EncryptedCacheKey.derive(passphrase: "pass", salt: [UInt8](repeating: 2, count: 16), parameters: fastScrypt)
        let otherPass = try EncryptedCacheKey.derive(passphrase: "pasS", salt: salt, parameters: fastScrypt)
        #expect(a == b)
        #expect(a != otherSalt)
        #expect(a != otherPass)
        #expect(try EncryptedCacheKey.random() != EncryptedCacheKey.random())
    }

    @Test("The default parameters (N=2^15, r=8, p=1) work within the memory limit")
    func defaultParameters() throws {
        let parameters = ScryptParameters()
        #expect(parameters.n == 32768 && parameters.r == 8 && parameters.p == 1)
        _ = try EncryptedCacheKey.derive(passphrase: "pass", salt: [UInt8](repeating: 1, count: 16), parameters: parameters)
    }

    @Test("Invalid scrypt parameters are refused")
    func invalidParameters() {
        for parameters in [ScryptParameters(n: 0), ScryptParameters(n: 1), ScryptParameters(n: 1000),
                           ScryptParameters(r: 0), ScryptParameters(p: 0), ScryptParameters(n: 1 << 40),
                           ScryptParameters(n: 1 << 20, r: 16)] {
            #expect(throws: MSALError.internal(.invalidParameter, ""), "\(parameters)") {
                try EncryptedCacheKey.derive(passphrase: "x", salt: [], parameters: parameters)
            }
        }
    }

    @Test("scrypt known answers (RFC 7914 §12)")
    func scryptKnownAnswer() throws {
        let first = hex("""
            77 d6 57 62 38 65 7b 20 3b 19 ca 42 c1 8a 04 97 f1 6b 48 44 e3 07 4a e8 df df fa 3f ed e2 14 42
            fc d0 06 9d ed 09 48 f8 32 6a 75 3a 0f c8 1f 17 e8 d3 e0 fb 2e 0d 36 28 cf 35 e2 0c 38 d1 89 06
            """)
        #expect(try Scrypt.derive(password: [], salt: [], n: 16, r: 1, p: 1, maxMemory: 1 << 24, length: 64) == first)
        let key = try EncryptedCacheKey.derive(passphrase: "", salt: [], parameters: ScryptParameters(n: 16, r: 1, p: 1))
        #expect(key.bytes == Array(first.prefix(32)))

        let second = hex("""
            fd ba be 1c 9d 34 72 00 78 56 e7 19 0d 01 e9 fe 7c 6a d7 cb c8 23 78 30 e7 73 76 63 4b 37 31 62
            2e af 30 d9 2e 22 a3 88 6f f1 09 27 9d 98 30 da c7 27 af b9 4a 83 ee 6d 83 60 cb df a2 cc 06 40
            """)
        #expect(try Scrypt.derive(password: Array("password".utf8), salt: Array("NaCl".utf8), n: 1024, r: 8, p: 16,
                                  maxMemory: 1 << 26, length: 64) == second)
    }
}

@Suite("AESGCM")
struct AESGCMTests {
    @Test("AES-256-GCM known answer: GCM spec test case 16 (256-bit key, 96-bit IV, AAD)")
    func knownAnswer() throws {
        let key = hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let iv = hex("cafebabefacedbaddecaf888")
        let plaintext = hex("""
            d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72
            1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39
            """)
        let aad = hex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let ciphertext = hex("""
            522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa
            8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662
            """)
        let tag = hex("76fc6ece0f4e1768cddf8853bb2d551b")
        let sealed = try AESGCM.seal(key: key, nonce: iv, plaintext: plaintext, aad: aad)
        #expect(sealed.ciphertext == ciphertext)
        #expect(sealed.tag == tag)
        #expect(try AESGCM.open(key: key, nonce: iv, ciphertext: ciphertext, aad: aad, tag: tag) == plaintext)
        var badTag = tag
        badTag[0] ^= 1
        #expect(throws: MSALError.internal(.cacheError, "")) {
            try AESGCM.open(key: key, nonce: iv, ciphertext: ciphertext, aad: aad, tag: badTag)
        }
        #expect(throws: MSALError.internal(.cacheError, "")) {
            try AESGCM.open(key: key, nonce: iv, ciphertext: ciphertext, aad: Array(aad.dropLast()), tag: tag)
        }
    }

    @Test("AES-256-GCM known answers: GCM spec test cases 13 and 14 (zero key and IV)")
    func zeroKeyKnownAnswers() throws {
        let key = [UInt8](repeating: 0, count: 32)
        let iv = [UInt8](repeating: 0, count: 12)
        let empty = try AESGCM.seal(key: key, nonce: iv, plaintext: [], aad: [])
        #expect(empty.ciphertext.isEmpty)
        #expect(empty.tag == hex("530f8afbc74536b9a963b4f1c4cb738b"))
        let block = try AESGCM.seal(key: key, nonce: iv, plaintext: [UInt8](repeating: 0, count: 16), aad: [])
        #expect(block.ciphertext == hex("cea7403d4d606b6e074ec5d3baf39d18"))
        #expect(block.tag == hex("d0d1c8a799996bf0265b98b5d48ab919"))
    }

    @Test("Wrong key or nonce sizes are refused")
    func sizes() {
        #expect(throws: MSALError.internal(.invalidParameter, "")) {
            try AESGCM.seal(key: [UInt8](repeating: 0, count: 16), nonce: [UInt8](repeating: 0, count: 12), plaintext: [], aad: [])
        }
        #expect(throws: MSALError.internal(.invalidParameter, "")) {
            try AESGCM.seal(key: [UInt8](repeating: 0, count: 32), nonce: [UInt8](repeating: 0, count: 16), plaintext: [], aad: [])
        }
    }
}
