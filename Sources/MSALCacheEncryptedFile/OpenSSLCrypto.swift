internal import COpenSSL
import Foundation
import MSALCore

/// The OpenSSL error queue as text for a message, and cleared. Never contains key material.
func openSSLErrorText() -> String {
    let code = ERR_get_error()
    ERR_clear_error()
    guard code != 0 else { return "no OpenSSL error code" }
    var buffer = [CChar](repeating: 0, count: 256)
    ERR_error_string_n(code, &buffer, buffer.count)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Random bytes from OpenSSL's CSPRNG (`RAND_bytes`); never a weaker fallback.
func randomBytes(_ count: Int) throws(MSALError) -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: count)
    let status = buffer.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
    guard status == 1 else {
        throw .internal(.unexpected, "OpenSSL RAND_bytes could not produce random bytes (\(openSSLErrorText())).")
    }
    return buffer
}

/// AES-256-GCM (NIST SP 800-38D) through OpenSSL's EVP interface: a 32-byte key, a 12-byte nonce,
/// additional authenticated data and a 16-byte tag.
enum AESGCM {
    static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16

    /// Encrypts `plaintext` and authenticates it together with `aad`.
    /// - Returns: the ciphertext (as long as the plaintext) and the 16-byte tag.
    static func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], aad: [UInt8]) throws(MSALError) -> (ciphertext: [UInt8], tag: [UInt8]) {
        try checkSizes(key: key, nonce: nonce)
        guard let context = EVP_CIPHER_CTX_new() else {
            throw .internal(.unexpected, "OpenSSL could not allocate a cipher context (\(openSSLErrorText())).")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: tagLength)
        var produced: Int32 = 0
        var finalLength: Int32 = 0
        let ok = EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceLength), nil) == 1
            && EVP_EncryptInit_ex(context, nil, nil, key, nonce) == 1
            && update(context, encrypt: true, aad: aad)
            && (plaintext.isEmpty || ciphertext.withUnsafeMutableBufferPointer { out in
                plaintext.withUnsafeBufferPointer { input in
                    EVP_EncryptUpdate(context, out.baseAddress, &produced, input.baseAddress, Int32(input.count)) == 1
                }
            })
            && ciphertext.withUnsafeMutableBufferPointer { out in
                EVP_EncryptFinal_ex(context, out.baseAddress! + Int(produced), &finalLength) == 1
            }
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), &tag) == 1
        guard ok else {
            throw .internal(.unexpected, "OpenSSL AES-256-GCM encryption failed (\(openSSLErrorText())).")
        }
        return (Array(ciphertext.prefix(Int(produced + finalLength))), tag)
    }

    /// Decrypts `ciphertext` and checks `tag` over it and `aad`.
    /// - Returns: the plaintext, only when the tag verifies.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the tag does not verify (wrong key,
    ///   altered data); no plaintext is ever returned then.
    static func open(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], aad: [UInt8], tag: [UInt8]) throws(MSALError) -> [UInt8] {
        try checkSizes(key: key, nonce: nonce)
        guard tag.count == tagLength else {
            throw .internal(.invalidParameter, "AES-256-GCM needs a \(tagLength)-byte tag, not \(tag.count) bytes.")
        }
        guard let context = EVP_CIPHER_CTX_new() else {
            throw .internal(.unexpected, "OpenSSL could not allocate a cipher context (\(openSSLErrorText())).")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var produced: Int32 = 0
        var finalLength: Int32 = 0
        var expectedTag = tag
        let ready = EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceLength), nil) == 1
            && EVP_DecryptInit_ex(context, nil, nil, key, nonce) == 1
            && update(context, encrypt: false, aad: aad)
            && (ciphertext.isEmpty || plaintext.withUnsafeMutableBufferPointer { out in
                ciphertext.withUnsafeBufferPointer { input in
                    EVP_DecryptUpdate(context, out.baseAddress, &produced, input.baseAddress, Int32(input.count)) == 1
                }
            })
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &expectedTag) == 1
        guard ready else {
            throw .internal(.unexpected, "OpenSSL AES-256-GCM decryption failed (\(openSSLErrorText())).")
        }
        let verified = plaintext.withUnsafeMutableBufferPointer { out in
            EVP_DecryptFinal_ex(context, out.baseAddress! + Int(produced), &finalLength) == 1
        }
        guard verified else {
            ERR_clear_error()
            // Wipe what was decrypted before the tag check failed: never hand it out.
            for index in plaintext.indices { plaintext[index] = 0 }
            throw .internal(.cacheError, "The data failed authentication: the key is wrong or the data was altered.")
        }
        return Array(plaintext.prefix(Int(produced + finalLength)))
    }

    private static func update(_ context: OpaquePointer, encrypt: Bool, aad: [UInt8]) -> Bool {
        guard !aad.isEmpty else { return true }
        var ignored: Int32 = 0
        return aad.withUnsafeBufferPointer { input in
            encrypt
                ? EVP_EncryptUpdate(context, nil, &ignored, input.baseAddress, Int32(input.count)) == 1
                : EVP_DecryptUpdate(context, nil, &ignored, input.baseAddress, Int32(input.count)) == 1
        }
    }

    private static func checkSizes(key: [UInt8], nonce: [UInt8]) throws(MSALError) {
        guard key.count == keyLength else {
            throw .internal(.invalidParameter, "AES-256-GCM needs a \(keyLength)-byte key, not \(key.count) bytes.")
        }
        guard nonce.count == nonceLength else {
            throw .internal(.invalidParameter, "AES-256-GCM needs a \(nonceLength)-byte nonce, not \(nonce.count) bytes.")
        }
    }
}

/// scrypt (RFC 7914) through OpenSSL's `EVP_PBE_scrypt`.
enum Scrypt {
    /// Derives `length` bytes from `password` and `salt` (either may be empty: OpenSSL reads a null
    /// pointer as the empty string).
    static func derive(password: [UInt8], salt: [UInt8], n: UInt64, r: UInt32, p: UInt32, maxMemory: UInt64, length: Int) throws(MSALError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: length)
        let status = password.withUnsafeBufferPointer { pass in
            salt.withUnsafeBufferPointer { saltBytes in
                output.withUnsafeMutableBufferPointer { out in
                    pass.withMemoryRebound(to: CChar.self) { passChars in
                        EVP_PBE_scrypt(passChars.baseAddress, pass.count,
                                       saltBytes.baseAddress, saltBytes.count,
                                       n, UInt64(r), UInt64(p), maxMemory,
                                       out.baseAddress, out.count)
                    }
                }
            }
        }
        guard status == 1 else {
            throw .internal(.unexpected, "OpenSSL scrypt failed for N=\(n), r=\(r), p=\(p) (\(openSSLErrorText())).")
        }
        return output
    }
}
