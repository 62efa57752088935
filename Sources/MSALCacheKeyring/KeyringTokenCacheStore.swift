public import Foundation
public import MSALCache
public import MSALCore
internal import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A token cache store in the Secret Service keyring (GNOME Keyring, KeePassXC, KWallet's Secret
/// Service): one keyring item per entry in the default collection, laid out as MSAL for iOS/macOS
/// lays out its keychain items (see ``KeyringItemLayout``).
///
/// The Secret Service has no transactions, so the guarantees of ``TokenCacheStore`` are built here:
///
/// - **Serialized writers.** Every change holds an exclusive `flock` on the access group's lock file
///   (`keyring.<group>.lock` in ``lockDirectory``), so writers in this and other processes run one
///   after another. Every process that shares an access group must use the same lock directory; the
///   default (`$XDG_RUNTIME_DIR/swift-msal`, else `~/.cache/swift-msal`) is the same for all
///   processes of a user's session.
/// - **All or nothing, also when the process dies.** Under the lock a change first writes a
///   journal item holding the secrets of every item it is about to replace or remove (an undo log),
///   then its items (entries whose stored JSON is unchanged are not rewritten), then removes the journal. Whoever next takes the lock (or a reader that sees the
///   journal) restores those items, so the store reopens to the state before an interrupted change.
///   A change that fails with an error is undone the same way before the error is thrown.
/// - **Readers never see half a change.** The lock file holds a counter that a writer makes odd
///   before its first keyring call and even after its last (a sequence lock). ``readAll()`` reads the
///   counter, the keyring, and the counter again, and keeps the result only when both are the same
///   even value; otherwise it retries, and finally reads while holding the lock.
/// - **Change detection.** ``changeStamp()`` is that counter: one small file read, no D-Bus call.
/// - **Bulk reads.** ``readAll()`` makes four Secret Service calls whatever the number of entries:
///   `ReadAlias`, the default collection's `Locked` property, one `SearchItems` and one `GetSecrets`.
/// - **No prompts, no hangs.** The store never asks the service to unlock anything: a locked default
///   collection is an error. Every call is cancelled after ``serviceTimeout`` seconds.
/// - **Thread safety.** Calls into libsecret are serialized in the process; the store may be used
///   from any thread.
/// - **Access groups.** Items carry their group in the `access_group` attribute; stores of different
///   groups never see each other's entries. New items go to the default collection; items of the
///   group found in another unlocked collection (e.g. after the default keyring was switched) are
///   read, replaced and removed like the others.
///
/// Errors: ``MSALError`` `.internal(.cacheUnavailable)` when the keyring cannot be used on this
/// machine as it is (no D-Bus session bus, no Secret Service provider, no default collection, or a
/// locked one; the message says what to install or unlock, or to choose the encrypted-file or SQLite
/// store); `.internal(.cacheError)` for other failures. No message contains a secret.
///
/// Sources: MSAL for iOS/macOS keychain layout (`MSIDKeychainTokenCache`, `MSIDDefaultCredentialCacheKey`);
/// the Secret Service API (freedesktop.org) as libsecret implements it; msal-extensions'
/// `LibsecretPersistence` and `CrossPlatLock`.
public final class KeyringTokenCacheStore: TokenCacheStore {
    /// The access group whose items this store reads and writes.
    public let accessGroup: String
    /// The directory of the lock files (absolute or relative to the working directory).
    public let lockDirectory: String
    /// How long, in seconds, one Secret Service call may take before it is cancelled.
    public let serviceTimeout: TimeInterval

    /// Extra attributes of every item and search: empty, except in tests that keep stores of one
    /// access group apart (see ``init(accessGroup:lockDirectory:testNamespace:lockTimeout:serviceTimeout:logger:)``).
    private let attributes: [String: String]
    private let lockFile: KeyringLockFile
    private let logger: Logger
    /// Called at the points of a change where ``CrashPoint`` could stop it (tests only: a child
    /// process blocks there until its parent kills it).
    let writeHook = Mutex<(@Sendable (CrashPoint) -> Void)?>(nil)
    private let client = SecretServiceClient.shared

    /// How many times ``readAll()`` reads without the lock before it takes the lock.
    private static let optimisticReads = 4

    /// Opens the keyring store of `accessGroup`: connects to the Secret Service, checks that the
    /// default collection exists and is unlocked, creates the lock file (0600; its directory 0700)
    /// and finishes a change that a dead process interrupted.
    /// - Parameters:
    ///   - accessGroup: the partition of the keyring this store uses; default
    ///     ``TokenCacheAccessGroup/default`` (`com.microsoft.adalcache`).
    ///   - lockDirectory: where the lock files live; `nil` for the default
    ///     (`$XDG_RUNTIME_DIR/swift-msal`, else `$XDG_CACHE_HOME/swift-msal`, else `~/.cache/swift-msal`).
    ///   - lockTimeout: how long, in seconds, a change waits for another writer (default 10).
    ///   - serviceTimeout: how long, in seconds, one Secret Service call may take before it is
    ///     cancelled (default 10; rounded up to whole seconds, at least 1).
    ///   - logger: receives a warning when an interrupted change is undone; never a secret.
    /// - Throws: ``MSALError`` `.internal(.cacheUnavailable)` when the keyring cannot be used here
    ///   (see the type's description), `.internal(.invalidParameter)` for an invalid access group,
    ///   `.internal(.cacheError)` when the lock file cannot be created or the service fails.
    public convenience init(
        accessGroup: String = TokenCacheAccessGroup.default,
        lockDirectory: String? = nil,
        lockTimeout: TimeInterval = 10,
        serviceTimeout: TimeInterval = 10,
        logger: Logger = .none
    ) throws(MSALError) {
        try self.init(
            accessGroup: accessGroup, lockDirectory: lockDirectory, testNamespace: nil, lockTimeout: lockTimeout,
            serviceTimeout: serviceTimeout, logger: logger)
    }

    /// The initializer behind the public one, plus `testNamespace` (tests only): when set, every
    /// item carries the attribute `swift-msal-test-namespace` with that value and every search
    /// matches it, and the lock file is the namespace's own, so that tests can run stores of one
    /// access group (the default one included) side by side in one keyring without sharing entries.
    init(
        accessGroup: String, lockDirectory: String?, testNamespace: String?, lockTimeout: TimeInterval,
        serviceTimeout: TimeInterval, logger: Logger
    ) throws(MSALError) {
        self.accessGroup = try TokenCacheAccessGroup.validate(accessGroup)
        attributes = testNamespace.map { ["swift-msal-test-namespace": $0] } ?? [:]
        let directory = lockDirectory ?? KeyringLockFile.defaultDirectory(environment: ProcessInfo.processInfo.environment)
        guard !directory.isEmpty else {
            throw .internal(.invalidParameter, "The keyring token cache's lock directory is empty; leave it out to use the default.")
        }
        self.lockDirectory = directory
        self.serviceTimeout = serviceTimeout
        self.logger = logger
        lockFile = KeyringLockFile(directory: directory, accessGroup: accessGroup, attributes: self.attributes, timeout: lockTimeout)
        _ = try lockFile.withExclusiveLock { (holder) throws(MSALError) in
            try recover(holder, always: true, doing: "opening the token cache in the keyring")
        }
    }

    // MARK: TokenCacheStore

    /// Reads every entry of this access group as of one committed state.
    /// - Returns: the contents keyed by stored key; an item whose entry this version cannot read goes
    ///   to ``TokenCacheContents/unreadableEntries``.
    /// - Throws: ``MSALError`` `.internal(.cacheUnavailable)` when the keyring cannot be used (e.g. it
    ///   was locked meanwhile), `.internal(.cacheError)` when reading fails.
    public func readAll() throws(MSALError) -> TokenCacheContents {
        for attempt in 0..<Self.optimisticReads {
            let before = try lockFile.readCounter()
            if before & 1 == 0 {
                let snapshot: Snapshot
                do {
                    snapshot = try readSnapshot()
                } catch {
                    if try lockFile.readCounter() != before { continue }  // a writer got in the way
                    throw error
                }
                if try lockFile.readCounter() == before {
                    if snapshot.journal == nil { return snapshot.contents }
                    break  // an interrupted change: undo it under the lock
                }
            }
            usleep(UInt32(200 << attempt) + UInt32.random(in: 0...200))
        }
        return try lockFile.withExclusiveLock { (holder) throws(MSALError) -> TokenCacheContents in
            try recover(holder, always: true)
            return try readSnapshot().contents
        }
    }

    /// Applies the change atomically (see the type's guarantees).
    /// - Throws: ``MSALError`` `.internal(.cacheUnavailable)` when the keyring cannot be used,
    ///   `.internal(.cacheError)` when the change could not be stored (then nothing of it is), e.g.
    ///   another writer held the lock beyond the lock timeout.
    public func apply(_ change: TokenCacheChange) throws(MSALError) {
        _ = try applyReportingStamps(change)
    }

    /// The change counter from the lock file: one small file read, no D-Bus call. It is odd while a
    /// change is being written.
    /// - Returns: the counter; 0 when the lock file is missing (e.g. its directory was wiped).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the lock file cannot be read.
    public func changeStamp() throws(MSALError) -> UInt64 {
        try lockFile.readCounter()
    }

    /// Applies the change under the lock and reports the counter before and after it. An empty change
    /// writes nothing and reports the same stamp twice.
    /// - Returns: the change stamps before and after the change.
    /// - Throws: as ``apply(_:)``.
    public func applyReportingStamps(_ change: TokenCacheChange) throws(MSALError) -> AppliedChangeStamps {
        try lockFile.withExclusiveLock { (holder) throws(MSALError) -> AppliedChangeStamps in
            let collection = try recover(holder)
            let before = try holder.counter()
            if change.isEmpty { return AppliedChangeStamps(before: before, after: before) }  // no keyring call
            _ = try write(change, into: collection, holder: holder, before: before, crash: nil)
            return AppliedChangeStamps(before: before, after: before &+ 2)
        }
    }

    // MARK: Reading

    private struct Snapshot: Sendable {
        var contents: TokenCacheContents
        var journal: [UInt8]?
        /// How many Secret Service calls the read took.
        var calls: Int
    }

    /// Reads the group's items once, as ``readAll()`` does when no writer is active (tests only).
    /// - Returns: the contents and the number of Secret Service calls the read took.
    func readCountingCalls() throws(MSALError) -> (contents: TokenCacheContents, calls: Int) {
        let snapshot = try readSnapshot()
        return (snapshot.contents, snapshot.calls)
    }

    /// Reads the group's items with one search and one bulk secret transfer.
    private func readSnapshot() throws(MSALError) -> Snapshot {
        let attributes = self.attributes.merging([
            KeyringItemLayout.schemaAttribute: KeyringItemLayout.tokenCacheSchema,
            KeyringItemLayout.Attribute.accessGroup: accessGroup,
        ]) { $1 }
        let (secrets, calls) = try session(doing: "reading the token cache") { session throws(KeyringProblem) -> ([String: [UInt8]], Int) in
            let collection = try session.defaultCollection()
            let found = try session.search(attributes)
            if found.locked.contains(where: { $0.hasPrefix(collection + "/") }) { throw .locked }
            let secrets = try session.secrets(found.unlocked)
            return (secrets, session.callCount)
        }
        var snapshot = Snapshot(contents: TokenCacheContents(), journal: nil, calls: calls)
        // Sorted paths: if a foreign tool left two items with one key, the choice is stable.
        for path in secrets.keys.sorted() {
            guard let record = ItemRecord(decoding: secrets[path]!) else {
                logger.warning("A keyring item of the token cache schema has a secret that is not a swift-msal record; it was skipped.")
                continue
            }
            if record.itemKey == .journal {
                snapshot.journal = secrets[path]
            } else if let entry = record.cacheEntry {
                snapshot.contents.insert(entry, storedKey: record.itemKey.key)
            } else {
                snapshot.contents.unreadableEntries[record.itemKey.kind, default: [:]][record.itemKey.key] = record.entry
            }
        }
        return snapshot
    }

    // MARK: Writing

    /// Where a simulated crash stops a change (tests only): the process "dies" there, leaving the
    /// lock file's counter odd and whatever was written in the keyring; or where a simulated
    /// Secret Service failure makes the change undo itself and throw.
    enum CrashPoint: Sendable, Hashable {
        /// After making the counter odd, before the journal.
        case beforeJournal
        /// After writing the journal, before the first item.
        case afterJournal
        /// After this many of the keys the change modifies were written.
        case afterKeys(Int)
        /// After every item, before the journal is removed.
        case beforeJournalRemoval
        /// Not a crash: a Secret Service failure after this many keys; the change is undone and the
        /// failure thrown.
        case failingAfterKeys(Int)
    }

    /// Applies `change` like ``apply(_:)`` but stops at `point` as if the process had been killed
    /// there: no undo, no counter update, the lock released (tests only).
    func applyInterrupted(_ change: TokenCacheChange, at point: CrashPoint) throws(MSALError) {
        try lockFile.withExclusiveLock { (holder) throws(MSALError) in
            let collection = try recover(holder)
            _ = try write(change, into: collection, holder: holder, before: try holder.counter(), crash: point)
        }
    }

    /// Writes `change` under the lock into the default collection (at `knownCollection` when the
    /// caller just asked): journal, items, journal removal; the counter goes from `before` (even) to
    /// odd to `before + 2`.
    /// - Returns: whether a simulated crash stopped it.
    private func write(
        _ change: TokenCacheChange, into knownCollection: String?, holder: KeyringLockFile.Holder, before: UInt64, crash: CrashPoint?
    ) throws(MSALError) -> Bool {
        // The final state of every key the change touches: removals first, then upserts, the last one
        // of a key winning, as TokenCacheContents.apply does.
        var order: [ItemKey] = []
        var desired: [ItemKey: ItemRecord?] = [:]
        for removal in change.removals {
            let key = ItemKey(kind: removal.kind.rawValue, key: removal.key)
            if desired.updateValue(ItemRecord?.none, forKey: key) == nil { order.append(key) }
        }
        for entry in change.upserts {
            let record = ItemRecord(entry)
            if desired.updateValue(record, forKey: record.itemKey) == nil { order.append(record.itemKey) }
        }
        // Everything that can fail without the keyring fails before it is touched.
        var newItems: [ItemKey: (attributes: [String: String], secret: [UInt8])] = [:]
        for key in order {
            if let record = desired[key]! {
                newItems[key] = (record.attributes(accessGroup: accessGroup, extra: attributes), try record.encoded())
            }
        }
        let group = accessGroup
        let extra = attributes
        let current = try session(doing: "reading the token cache entries a change replaces") { session throws(KeyringProblem) -> Current in
            var collection = knownCollection ?? ""
            if knownCollection == nil { collection = try session.defaultCollection() }
            var paths: [ItemKey: [String]] = [:]
            for key in order {
                let found = try session.search(key.searchAttributes(accessGroup: group, extra: extra))
                if !found.locked.isEmpty { throw .locked }
                paths[key] = found.unlocked
            }
            let secrets = try session.secrets(paths.values.flatMap { $0 })
            return Current(collection: collection, paths: paths, secrets: secrets)
        }
        // Only keys whose items change are written: gnome-keyring rewrites its whole keyring file on
        // every item it creates or deletes, and a token response re-saves entries that did not change
        // (the account, the app metadata).
        let changed = order.filter { key in
            let paths = current.paths[key]!
            guard let item = newItems[key] else { return !paths.isEmpty }
            return !(paths.count == 1 && current.secrets[paths[0]] == item.secret)
        }
        if changed.isEmpty {
            try holder.setCounter(before &+ 2)  // a commit all the same: the stamp moves
            return false
        }
        let journal = JournalRecord(images: changed.map { key in
            JournalRecord.Image(itemKey: key, secrets: current.paths[key]!.compactMap { current.secrets[$0] })
        })
        let journalSecret = try journal.encoded()
        // One key held by at most one item changes in one call the service makes atomic (CreateItem
        // with Replace, or Delete): no journal needed, which saves two of the three rewrites of the
        // keyring file that gnome-keyring does per change.
        let needsJournal = !(changed.count == 1 && current.paths[changed[0]]!.count <= 1)

        try holder.setCounter(before &+ 1)
        if crash == .beforeJournal { return true }
        let hook = writeHook.withLock { $0 }
        let crashed: Bool
        var touched = false  // whether the keyring may have been changed (from the journal on)
        do {
            let label = KeyringItemLayout.label(kind: "change journal", accessGroup: group)
            crashed = try session(doing: "storing a change in the keyring") { session throws(KeyringProblem) -> Bool in
                // Checked again right before writing: creating an item in a collection that was
                // locked meanwhile would make the service prompt.
                guard try session.defaultCollection() == current.collection else { throw .failed("the default collection changed during the change") }
                touched = true
                let journalPath = needsJournal
                    ? try session.createItem(
                        in: current.collection, label: label, attributes: ItemKey.journal.searchAttributes(accessGroup: group, extra: extra),
                        secret: journalSecret, contentType: "application/json")
                    : nil
                if crash == .afterJournal { return true }
                hook?(.afterJournal)
                for (index, key) in changed.enumerated() {
                    var kept: String?
                    if let item = newItems[key] {
                        kept = try session.createItem(
                            in: current.collection, label: KeyringItemLayout.label(kind: key.kind, accessGroup: group),
                            attributes: item.attributes, secret: item.secret, contentType: "application/json")
                    }
                    for path in current.paths[key]! where path != kept { try session.delete(path) }
                    if crash == .afterKeys(index + 1) { return true }
                    hook?(.afterKeys(index + 1))
                    if crash == .failingAfterKeys(index + 1) { throw .failed("a simulated failure after \(index + 1) keys") }
                }
                if crash == .beforeJournalRemoval { return true }
                if let journalPath { try session.delete(journalPath) }
                return false
            }
        } catch {
            if touched {
                undo(journal, holder: holder, before: before)
            } else {
                try? holder.setCounter(before &+ 2)  // nothing was written
            }
            throw error
        }
        if crashed { return true }
        try holder.setCounter(before &+ 2)
        return false
    }

    private struct Current: Sendable {
        var collection: String
        var paths: [ItemKey: [String]]
        var secrets: [String: [UInt8]]
    }

    /// Undoes a change that failed part-way: restores the journal's items, removes the journal, and
    /// makes the counter even. When that fails too, the journal and the odd counter stay for the next
    /// holder of the lock.
    private func undo(_ journal: JournalRecord, holder: KeyringLockFile.Holder, before: UInt64) {
        do {
            try restore(journal, removingJournalAt: nil)
            try holder.setCounter(before &+ 2)
        } catch {
            logger.error("A failed token cache change could not be undone in the keyring (\(error.message)); the next access will undo it.")
        }
    }

    /// Finishes a change that a dead process (or a failed undo) left behind. Call with the lock held.
    ///
    /// Such a change always leaves the counter odd, so with an even counter the keyring is searched
    /// for a journal only when `always` is set (opening a store, a reader that saw a journal) or the
    /// lock file is new (its directory wiped while a journal stayed in the keyring).
    /// - Returns: the default collection's path when the keyring was asked, else `nil`.
    @discardableResult
    private func recover(
        _ holder: KeyringLockFile.Holder, always: Bool = false, doing: String = "checking the token cache for an interrupted change"
    ) throws(MSALError) -> String? {
        let fresh = try !holder.hasCounter()
        let counter = try holder.counter()
        if counter & 1 == 0 && !fresh && !always { return nil }
        let group = accessGroup
        let extra = attributes
        let (collection, journals) = try session(doing: doing) {
            session throws(KeyringProblem) -> (String, [String: [UInt8]]) in
            let collection = try session.defaultCollection()
            let found = try session.search(ItemKey.journal.searchAttributes(accessGroup: group, extra: extra))
            if !found.locked.isEmpty { throw .locked }
            return (collection, try session.secrets(found.unlocked))
        }
        if journals.isEmpty {
            if counter & 1 != 0 { try holder.setCounter(counter &+ 1) }
            return collection
        }
        for (path, secret) in journals.sorted(by: { $0.key < $1.key }) {
            try restore(try JournalRecord(decoding: secret), removingJournalAt: path)
        }
        try holder.setCounter((counter | 1) &+ 1)
        logger.warning("The keyring token cache found a change that was interrupted (a process died or failed mid-way) and undid it.")
        return collection
    }

    /// Puts back the items the journal recorded (removing whatever holds those keys now), then
    /// removes the journal item at `journalPath`, or every journal item of the group when `nil`.
    /// Idempotent, so an interrupted restore can simply run again.
    private func restore(_ journal: JournalRecord, removingJournalAt journalPath: String?) throws(MSALError) {
        let group = accessGroup
        let extra = attributes
        try session(doing: "undoing an interrupted token cache change") { session throws(KeyringProblem) in
            let collection = try session.defaultCollection()
            for image in journal.images {
                let found = try session.search(image.itemKey.searchAttributes(accessGroup: group, extra: extra))
                if !found.locked.isEmpty { throw .locked }
                for path in found.unlocked { try session.delete(path) }
                for secret in image.secrets {
                    let attributes = ItemRecord(decoding: secret)?.attributes(accessGroup: group, extra: extra)
                        ?? image.itemKey.searchAttributes(accessGroup: group, extra: extra)
                    _ = try session.createItem(
                        in: collection, label: KeyringItemLayout.label(kind: image.itemKey.kind, accessGroup: group),
                        attributes: attributes, secret: secret, contentType: "application/json")
                }
            }
            var journals: [String]
            if let journalPath {
                journals = [journalPath]
            } else {
                journals = try session.search(ItemKey.journal.searchAttributes(accessGroup: group, extra: extra)).unlocked
            }
            for path in journals { try session.delete(path) }
        }
    }

    /// Runs `body` with a Secret Service session; its problem becomes an ``MSALError`` saying what
    /// the store was `doing`.
    private func session<T: Sendable>(doing: String, _ body: (SecretServiceClient.Session) throws(KeyringProblem) -> T) throws(MSALError) -> T {
        do {
            return try client.withSession(timeout: serviceTimeout, body)
        } catch {
            throw error.error(doing: doing)
        }
    }
}

extension KeyringTokenCacheStore: ADALKeyedItemStore {
    /// The keyed items of this access group: one search and one bulk secret transfer (items of the
    /// schema ``KeyringItemLayout/adalKeyedItemSchema``).
    /// - Returns: the items sorted by service then account. An item whose secret is not the expected
    ///   JSON object is skipped with a warning in the log.
    /// - Throws: ``MSALError`` `.internal(.cacheUnavailable)` when the keyring cannot be used,
    ///   `.internal(.cacheError)` when reading fails.
    public func adalKeyedItems() throws(MSALError) -> [ADALKeyedItem] {
        let search = keyedItemAttributes(service: nil, account: nil)
        let secrets = try session(doing: "reading the ADAL keyed items") { session throws(KeyringProblem) -> [String: [UInt8]] in
            let collection = try session.defaultCollection()
            let found = try session.search(search)
            if found.locked.contains(where: { $0.hasPrefix(collection + "/") }) { throw .locked }
            return try session.secrets(found.unlocked)
        }
        var items: [ADALKeyedItem] = []
        for secret in secrets.values {
            guard let object = try? JSONSerialization.jsonObject(with: Data(secret)) as? [String: Any],
                  let service = object["service"] as? String, let account = object["account"] as? String,
                  let value = object["value"] as? String
            else {
                logger.warning("A keyring item of the ADAL keyed item schema has a secret that is not a swift-msal record; it was skipped.")
                continue
            }
            items.append(ADALKeyedItem(service: service, account: account, value: Data(base64Encoded: value) ?? Data()))
        }
        return items.sorted { ($0.service, $0.account) < ($1.service, $1.account) }
    }

    /// Stores the item under the store's lock: one `CreateItem` replacing the item with the same
    /// attributes (atomic in the service), then removes any other item of that key.
    /// - Throws: as ``apply(_:)``.
    public func setADALKeyedItem(_ item: ADALKeyedItem) throws(MSALError) {
        let record: [String: String] = ["service": item.service, "account": item.account, "value": item.value.base64EncodedString()]
        let secret: [UInt8]
        do {
            secret = [UInt8](try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]))
        } catch {
            throw .internal(.cacheError, "An ADAL keyed item could not be encoded for the keyring.")
        }
        let attributes = keyedItemAttributes(service: item.service, account: item.account)
        let label = KeyringItemLayout.label(kind: "ADAL keyed item", accessGroup: accessGroup)
        try changeKeyedItem(doing: "storing an ADAL keyed item in the keyring") { session, collection throws(KeyringProblem) in
            let existing = try session.search(attributes)
            if !existing.locked.isEmpty { throw .locked }
            let kept = try session.createItem(
                in: collection, label: label, attributes: attributes, secret: secret, contentType: "application/json")
            for path in existing.unlocked where path != kept { try session.delete(path) }
        }
    }

    /// Removes the item under the store's lock.
    /// - Throws: as ``apply(_:)``.
    public func removeADALKeyedItem(service: String, account: String) throws(MSALError) {
        let attributes = keyedItemAttributes(service: service, account: account)
        try changeKeyedItem(doing: "removing an ADAL keyed item from the keyring") { session, _ throws(KeyringProblem) in
            let existing = try session.search(attributes)
            if !existing.locked.isEmpty { throw .locked }
            for path in existing.unlocked { try session.delete(path) }
        }
    }

    /// The attributes of a keyed item (every keyed item of the group when `service` is `nil`).
    private func keyedItemAttributes(service: String?, account: String?) -> [String: String] {
        var attributes = self.attributes.merging([
            KeyringItemLayout.schemaAttribute: KeyringItemLayout.adalKeyedItemSchema,
            KeyringItemLayout.Attribute.accessGroup: accessGroup,
        ]) { $1 }
        if let service, let account {
            attributes[KeyringItemLayout.Attribute.service] = service
            attributes[KeyringItemLayout.Attribute.account] = account
            attributes[KeyringItemLayout.Attribute.generic] = ADALKeyedItem.libraryTag
        }
        return attributes
    }

    /// Runs one keyed-item change under the lock, with the counter odd while it runs so that readers'
    /// change stamps move.
    private func changeKeyedItem(
        doing: String, _ body: (SecretServiceClient.Session, String) throws(KeyringProblem) -> Void
    ) throws(MSALError) {
        try lockFile.withExclusiveLock { (holder) throws(MSALError) in
            let known = try recover(holder)
            let before = try holder.counter()
            try holder.setCounter(before &+ 1)
            do throws(MSALError) {
                try session(doing: doing) { session throws(KeyringProblem) in
                    var collection = known ?? ""
                    if known == nil { collection = try session.defaultCollection() }
                    try body(session, collection)
                }
            } catch {
                try? holder.setCounter(before &+ 2)
                throw error
            }
            try holder.setCounter(before &+ 2)
        }
    }
}
