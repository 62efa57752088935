import Foundation
import MSALCache
import MSALCore

/// The entries the process tests write and expect: pure functions of their arguments, so the
/// writer processes and the checking test compute the same values independently.
///
/// Every secret is a made-up marker (`TEST-MARKER-…`), never a real token.
enum Fixtures {
    static let environment = "login.process-test.example"
    static let realm = "process-test-tenant"
    static let clientID = "process-test-client"
    /// A fixed instant, so dates round-trip exactly (stores keep whole epoch seconds).
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    /// The field every crash-test entry carries its generation in (kept by every store as an
    /// unknown field).
    static let generationField = "x_process_test_generation"

    // MARK: Multi-process writes

    /// Entry `index` of worker `worker` in the multi-process test: the kinds cycle through access
    /// token, refresh token, ID token, account and app metadata, each under a key no other
    /// (worker, index) uses.
    static func workerEntry(worker: Int, index: Int) -> CacheEntry {
        let tag = "w\(worker)-i\(index)"
        let home = "\(tag).process-test"
        let fields: [String: JSONValue] = ["x_process_test_writer": .string(tag)]
        switch index % 5 {
        case 0:
            return .accessToken(AccessTokenEntry(
                homeAccountID: home, environment: environment, clientID: clientID, realm: realm,
                target: "proc.read proc.\(tag)", secret: "TEST-MARKER-AT-\(tag)",
                cachedAt: t0.addingTimeInterval(Double(index)), expiresOn: t0.addingTimeInterval(Double(3600 + index)),
                extendedExpiresOn: t0.addingTimeInterval(Double(7200 + index)), additionalFields: fields))
        case 1:
            return .refreshToken(RefreshTokenEntry(
                homeAccountID: home, environment: environment, clientID: clientID, familyID: worker % 2 == 0 ? "1" : nil,
                secret: "TEST-MARKER-RT-\(tag)", target: "proc.read proc.\(tag)", additionalFields: fields))
        case 2:
            return .idToken(IDTokenEntry(
                homeAccountID: home, environment: environment, clientID: clientID, realm: realm,
                secret: "TEST-MARKER-ID-\(tag)", additionalFields: fields))
        case 3:
            return .account(AccountEntry(
                homeAccountID: home, environment: environment, realm: realm, localAccountID: "local-\(tag)",
                username: "\(tag)@process-test.example", accountSource: "device_code", name: "Worker \(worker) entry \(index)",
                additionalFields: fields))
        default:
            return .appMetadata(AppMetadataEntry(
                clientID: "client-\(tag)", environment: environment, familyID: worker % 2 == 0 ? "1" : nil, additionalFields: fields))
        }
    }

    // MARK: Crash-test generations

    /// The shape of one generation: `units` sets of five entries, with secrets padded to
    /// `secretBytes` so a change is large enough for kills to land inside writes.
    struct GenerationShape: Sendable, Hashable {
        var units: Int
        var secretBytes: Int
    }

    /// Every entry of generation `generation` (none for generation 0, the empty store). Per unit:
    /// an access token, an ID token and an account under keys of this generation only (the next
    /// change removes them), and a refresh token and app metadata under keys every generation
    /// shares (the next change replaces them). Every entry carries ``generationField``.
    static func entries(generation: Int, shape: GenerationShape) -> [CacheEntry] {
        guard generation > 0 else { return [] }
        let fields: [String: JSONValue] = [generationField: .string(String(generation))]
        var entries: [CacheEntry] = []
        for unit in 0..<shape.units {
            let tag = "u\(unit)-g\(generation)"
            let home = "\(tag).process-test"
            let stable = "u\(unit).process-test"
            let when = t0.addingTimeInterval(Double(generation))
            entries.append(.accessToken(AccessTokenEntry(
                homeAccountID: home, environment: environment, clientID: clientID, realm: realm,
                target: "proc.read proc.g\(generation)", secret: marker("AT", tag, shape.secretBytes),
                cachedAt: when, expiresOn: when.addingTimeInterval(3600), refreshOn: when.addingTimeInterval(1800),
                additionalFields: fields)))
            entries.append(.idToken(IDTokenEntry(
                homeAccountID: home, environment: environment, clientID: clientID, realm: realm,
                secret: marker("ID", tag, shape.secretBytes), additionalFields: fields)))
            entries.append(.account(AccountEntry(
                homeAccountID: home, environment: environment, realm: realm, localAccountID: "local-\(tag)",
                username: "\(tag)@process-test.example", name: "Generation \(generation)", additionalFields: fields)))
            entries.append(.refreshToken(RefreshTokenEntry(
                homeAccountID: stable, environment: environment, clientID: clientID,
                secret: marker("RT", tag, shape.secretBytes), target: "proc.read", additionalFields: fields)))
            entries.append(.appMetadata(AppMetadataEntry(
                clientID: "client-u\(unit)", environment: environment, familyID: "1", additionalFields: fields)))
        }
        return entries
    }

    /// The change that turns generation `generation - 1` into `generation`: removes the previous
    /// generation's own keys, then upserts every entry of `generation`.
    static func change(toGeneration generation: Int, shape: GenerationShape) -> TokenCacheChange {
        let removals = entries(generation: generation - 1, shape: shape)
            .filter { $0.kind != .refreshToken && $0.kind != .appMetadata }
            .map { CacheEntryRemoval(kind: $0.kind, key: $0.key) }
        return TokenCacheChange(upserts: entries(generation: generation, shape: shape), removals: removals)
    }

    /// What a crash test finds in a store.
    enum GenerationState: Equatable, Sendable {
        /// Every entry of exactly one generation (0: the store is empty), and nothing else.
        case complete(Int)
        /// Anything else, described (keys and generations, never secrets).
        case broken(String)
    }

    /// Classifies `contents`: the generation it holds completely, or what is wrong with it.
    static func generationState(of contents: TokenCacheContents, shape: GenerationShape) -> GenerationState {
        guard contents.unreadableEntries.isEmpty, contents.unknownSections.isEmpty else {
            return .broken("unreadable entries \(contents.unreadableEntries.keys.sorted()), unknown sections \(contents.unknownSections.keys.sorted())")
        }
        var generations: [Int: Int] = [:]
        var untagged = 0
        for kind in CacheEntryKind.allCases {
            for (_, entry) in contents.entries(of: kind) {
                if let generation = generation(of: entry) { generations[generation, default: 0] += 1 } else { untagged += 1 }
            }
        }
        if untagged > 0 { return .broken("\(untagged) entries without a generation") }
        if generations.isEmpty { return .complete(0) }
        guard generations.count == 1, let generation = generations.keys.first else {
            return .broken("entries of several generations (generation: count): \(generations.sorted { $0.key < $1.key })")
        }
        let expected = entries(generation: generation, shape: shape)
        guard contents.count == expected.count else {
            return .broken("generation \(generation) has \(contents.count) entries, expected \(expected.count)")
        }
        for entry in expected where contents.entry(kind: entry.kind, key: entry.key) != entry {
            let found = contents.entry(kind: entry.kind, key: entry.key)
            return .broken("generation \(generation): \(entry.kind.rawValue) '\(entry.key)' is \(found == nil ? "missing" : "different from what was written")")
        }
        return .complete(generation)
    }

    /// The generation an entry carries, if any.
    static func generation(of entry: CacheEntry) -> Int? {
        let fields: [String: JSONValue] = switch entry {
        case .accessToken(let entry): entry.additionalFields
        case .refreshToken(let entry): entry.additionalFields
        case .idToken(let entry): entry.additionalFields
        case .account(let entry): entry.additionalFields
        case .appMetadata(let entry): entry.additionalFields
        }
        return fields[generationField]?.stringValue.flatMap { Int($0) }
    }

    /// `TEST-MARKER-<kind>-<tag>-` padded to `length` characters with a slice of ``padding`` that
    /// starts where a hash of the tag says, so two generations' secrets differ all along.
    static func marker(_ kind: String, _ tag: String, _ length: Int) -> String {
        let text = "TEST-MARKER-\(kind)-\(tag)-"
        let missing = length - text.utf8.count
        guard missing > 0 else { return text }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let start = Int(hash % UInt64(padding.count / 2))
        let count = min(missing, padding.count - start)
        return text + String(decoding: padding[start..<start + count], as: UTF8.self)
    }

    /// 64 KiB of letters and digits from a fixed linear congruential sequence, sliced by ``marker``
    /// (computed once: building every secret character by character is slow in debug builds).
    static let padding: [UInt8] = {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return (0..<65_536).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return alphabet[Int((state >> 33) % UInt64(alphabet.count))]
        }
    }()
}
