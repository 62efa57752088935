public import Foundation
public import MSALCache
public import MSALCore

/// One raw secret kept in the Secret Service keyring, such as the 32-byte key of the encrypted-file
/// token cache: an item of schema ``KeyringItemLayout/secretSchema`` in the default collection,
/// found by its `access_group` and `name` attributes, whose secret is the bytes in base64
/// (content type `text/plain`).
///
/// This type generates nothing: the caller creates the bytes (e.g. a key from OpenSSL's random
/// generator) and passes them to ``store(_:name:accessGroup:label:serviceTimeout:)`` or
/// ``loadOrStore(_:name:accessGroup:label:lockDirectory:lockTimeout:serviceTimeout:)``.
///
/// Like ``KeyringTokenCacheStore`` it never prompts (a locked default collection is an error) and
/// cancels every Secret Service call after `serviceTimeout` seconds.
///
/// Errors: ``MSALError`` `.internal(.cacheUnavailable)` when the keyring cannot be used on this
/// machine (no D-Bus session bus, no Secret Service provider, no default collection, or a locked
/// one; the message says what to install or unlock, or to choose another backend);
/// `.internal(.invalidParameter)` for a bad name, group, label or size; `.internal(.cacheError)`
/// otherwise. No message contains the secret.
///
/// Source: msal-extensions' `LibsecretPersistence` (one secret per schema and attributes in the
/// default collection).
public enum KeyringSecret {
    /// The most bytes one secret may hold.
    public static let maximumLength = 4096

    /// Reads the secret `name` of `accessGroup`.
    /// - Parameters:
    ///   - name: the secret's name, e.g. `msal_token_cache.bin key` (1 to 255 UTF-8 bytes, no control
    ///     characters).
    ///   - accessGroup: the group it belongs to; default ``TokenCacheAccessGroup/default``.
    ///   - serviceTimeout: how long, in seconds, one Secret Service call may take (default 10).
    /// - Returns: its bytes, or `nil` when there is no such secret.
    /// - Throws: ``MSALError`` as the type describes; `.internal(.cacheError)` also when the item
    ///   exists but does not hold base64 of 1 to ``maximumLength`` bytes.
    public static func load(
        name: String, accessGroup: String = TokenCacheAccessGroup.default, serviceTimeout: TimeInterval = 10
    ) throws(MSALError) -> [UInt8]? {
        let attributes = try self.attributes(name: name, accessGroup: accessGroup)
        let secrets = try session(doing: "reading a secret from the keyring", serviceTimeout) { session throws(KeyringProblem) -> [[UInt8]] in
            let collection = try session.defaultCollection()
            let found = try session.search(attributes)
            if found.locked.contains(where: { $0.hasPrefix(collection + "/") }) { throw .locked }
            let secrets = try session.secrets(found.unlocked)
            return found.unlocked.compactMap { secrets[$0] }
        }
        guard let secret = secrets.first else { return nil }
        guard let data = Data(base64Encoded: Data(secret)), (1...maximumLength).contains(data.count) else {
            throw .internal(
                .cacheError,
                "The keyring item of the secret '\(name)' (access group \(accessGroup)) does not hold a swift-msal secret. Remove it (secret-tool clear xdg:schema \(KeyringItemLayout.secretSchema) name '\(name)') and store the secret again.")
        }
        return [UInt8](data)
    }

    /// Stores `bytes` as the secret `name` of `accessGroup`, replacing what was stored under that name.
    /// - Parameters:
    ///   - bytes: 1 to ``maximumLength`` bytes.
    ///   - name: the secret's name (1 to 255 UTF-8 bytes, no control characters).
    ///   - accessGroup: the group it belongs to; default ``TokenCacheAccessGroup/default``.
    ///   - label: what keyring browsers show; never put personal data or the secret in it. Default
    ///     `swift-msal secret '<name>' (<access group>)`.
    ///   - serviceTimeout: how long, in seconds, one Secret Service call may take (default 10).
    /// - Throws: ``MSALError`` as the type describes.
    public static func store(
        _ bytes: [UInt8], name: String, accessGroup: String = TokenCacheAccessGroup.default, label: String? = nil,
        serviceTimeout: TimeInterval = 10
    ) throws(MSALError) {
        let attributes = try self.attributes(name: name, accessGroup: accessGroup)
        guard (1...maximumLength).contains(bytes.count) else {
            throw .internal(.invalidParameter, "A keyring secret must hold 1 to \(maximumLength) bytes; this one holds \(bytes.count).")
        }
        let label = try validatedLabel(label, name: name, accessGroup: accessGroup)
        let secret = [UInt8](Data(bytes).base64EncodedString().utf8)
        try session(doing: "storing a secret in the keyring", serviceTimeout) { session throws(KeyringProblem) in
            let collection = try session.defaultCollection()
            let found = try session.search(attributes)
            if !found.locked.isEmpty { throw .locked }
            let path = try session.createItem(in: collection, label: label, attributes: attributes, secret: secret, contentType: "text/plain")
            for stale in found.unlocked where stale != path { try session.delete(stale) }
        }
    }

    /// Returns the secret `name` of `accessGroup` if it exists, else stores `candidate` and returns it,
    /// under the access group's lock file so that processes racing to create the secret all end up
    /// with the same bytes.
    /// - Parameters:
    ///   - candidate: the bytes to store when there is no secret yet (1 to ``maximumLength``).
    ///   - name: the secret's name.
    ///   - accessGroup: the group it belongs to; default ``TokenCacheAccessGroup/default``.
    ///   - label: as ``store(_:name:accessGroup:label:serviceTimeout:)``.
    ///   - lockDirectory: where the lock file lives; `nil` for ``KeyringTokenCacheStore``'s default.
    ///   - lockTimeout: how long, in seconds, to wait for another process holding the lock (default 10).
    ///   - serviceTimeout: how long, in seconds, one Secret Service call may take (default 10).
    /// - Returns: the stored secret: the existing one, or `candidate`.
    /// - Throws: ``MSALError`` as the type describes, or `.internal(.cacheError)` when the lock stays
    ///   held beyond `lockTimeout`.
    public static func loadOrStore(
        _ candidate: [UInt8], name: String, accessGroup: String = TokenCacheAccessGroup.default, label: String? = nil,
        lockDirectory: String? = nil, lockTimeout: TimeInterval = 10, serviceTimeout: TimeInterval = 10
    ) throws(MSALError) -> [UInt8] {
        _ = try attributes(name: name, accessGroup: accessGroup)
        let directory = lockDirectory ?? KeyringLockFile.defaultDirectory(environment: ProcessInfo.processInfo.environment)
        let lock = KeyringLockFile(directory: directory, accessGroup: accessGroup, timeout: lockTimeout)
        return try lock.withExclusiveLock { (_) throws(MSALError) -> [UInt8] in
            if let existing = try load(name: name, accessGroup: accessGroup, serviceTimeout: serviceTimeout) { return existing }
            try store(candidate, name: name, accessGroup: accessGroup, label: label, serviceTimeout: serviceTimeout)
            return candidate
        }
    }

    /// Removes the secret `name` of `accessGroup`.
    /// - Returns: whether there was one.
    /// - Throws: ``MSALError`` as the type describes.
    @discardableResult
    public static func remove(
        name: String, accessGroup: String = TokenCacheAccessGroup.default, serviceTimeout: TimeInterval = 10
    ) throws(MSALError) -> Bool {
        let attributes = try self.attributes(name: name, accessGroup: accessGroup)
        return try session(doing: "removing a secret from the keyring", serviceTimeout) { session throws(KeyringProblem) -> Bool in
            _ = try session.defaultCollection()
            let found = try session.search(attributes)
            if !found.locked.isEmpty { throw .locked }
            for path in found.unlocked { try session.delete(path) }
            return !found.unlocked.isEmpty
        }
    }

    // MARK: Helpers

    /// The item attributes of a secret, after checking name and group.
    private static func attributes(name: String, accessGroup: String) throws(MSALError) -> [String: String] {
        try TokenCacheAccessGroup.validate(accessGroup)
        guard !name.isEmpty, name.utf8.count <= 255,
              !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .internal(.invalidParameter, "A keyring secret's name must be 1 to 255 bytes without control characters, such as 'msal_token_cache.bin key'.")
        }
        return [
            KeyringItemLayout.schemaAttribute: KeyringItemLayout.secretSchema,
            KeyringItemLayout.Attribute.accessGroup: accessGroup,
            KeyringItemLayout.Attribute.name: name,
        ]
    }

    private static func validatedLabel(_ label: String?, name: String, accessGroup: String) throws(MSALError) -> String {
        guard let label else { return "swift-msal secret '\(name)' (\(accessGroup))" }
        guard !label.isEmpty, label.utf8.count <= 1024,
              !label.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .internal(.invalidParameter, "A keyring secret's label must be 1 to 1024 bytes without control characters.")
        }
        return label
    }

    private static func session<T: Sendable>(
        doing: String, _ timeout: TimeInterval, _ body: (SecretServiceClient.Session) throws(KeyringProblem) -> T
    ) throws(MSALError) -> T {
        do {
            return try SecretServiceClient.shared.withSession(timeout: timeout, body)
        } catch {
            throw error.error(doing: doing)
        }
    }
}
