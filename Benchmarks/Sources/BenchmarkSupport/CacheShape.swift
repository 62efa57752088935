public import Foundation
public import MSALCore
public import MSALCache
public import MSALTestSupport

/// The contents of a benchmark cache: `n` access tokens spread over accounts × tenants × scope sets
/// (by default 4 tenants and 10 scope sets per account, as the issue's MSAL Python figures were
/// measured), each account with its tenant profiles (an `Account` and an `IdToken` entry per
/// tenant), one refresh token, and one `AppMetadata` entry for the app. Deterministic for a seed.
///
/// Token `i` belongs to account `i / (tenants × scopeSets)`; within its account, to tenant
/// `j % tenants` and scope set `j / tenants` with `j = i % (tenants × scopeSets)`, so even n = 10 uses
/// all four tenants. Scope set `k` is `https://res<k>.example/Files.Read`, `…/Mail.Read` and
/// `…/User.Read` (disjoint sets, as real resources are); a subset lookup asks for one of the three.
///
/// Every string of every entry is its own allocation (as a cache read from disk or filled by token
/// responses has), so memory figures do not profit from shared strings.
public struct CacheShape: Sendable {
    /// The app's client ID.
    public static let clientID = "5f0c2b1e-9d4a-4c3b-8e7f-1a2b3c4d5e6f"
    /// The cloud: Entra's public cloud, whose aliases swift-msal knows without a request.
    public static let environment = "login.microsoftonline.com"
    /// The seed every run uses unless told otherwise.
    public static let defaultSeed: UInt64 = 0x6D73_616C_2D62_656E  // "msal-ben"

    /// Access tokens in the cache.
    public let n: Int
    public let tenantsPerAccount: Int
    public let scopeSetsPerTenant: Int
    /// Characters of each access and refresh token's secret (base64url).
    public let secretLength: Int
    /// Tenant IDs; tenant 0 is every account's home tenant, the others are guest tenants.
    public let tenants: [String]
    /// One object ID per account (its `uid` in the home tenant).
    public let accountObjectIDs: [String]
    public let seed: UInt64

    /// The shape of `n` tokens.
    public init(n: Int, tenantsPerAccount: Int = 4, scopeSetsPerTenant: Int = 10, secretLength: Int = 64, seed: UInt64 = CacheShape.defaultSeed) {
        self.n = n
        self.tenantsPerAccount = tenantsPerAccount
        self.scopeSetsPerTenant = scopeSetsPerTenant
        self.secretLength = secretLength
        self.seed = seed
        var random = SplitMix64(seed: seed)
        tenants = (0..<tenantsPerAccount).map { _ in Self.guid(&random) }
        let perAccount = tenantsPerAccount * scopeSetsPerTenant
        let accounts = max(1, (n + perAccount - 1) / perAccount)
        accountObjectIDs = (0..<accounts).map { _ in Self.guid(&random) }
    }

    /// The number of accounts.
    public var accountCount: Int { accountObjectIDs.count }

    /// Where token `i` sits.
    public func position(ofToken index: Int) -> (account: Int, tenant: Int, scopeSet: Int) {
        let perAccount = tenantsPerAccount * scopeSetsPerTenant
        let j = index % perAccount
        return (index / perAccount, j % tenantsPerAccount, j / tenantsPerAccount)
    }

    /// The home account ID of an account: `<uid>.<home tenant>`.
    public func homeAccountID(_ account: Int) -> String { "\(accountObjectIDs[account]).\(tenants[0])" }

    /// The username of an account.
    public func username(_ account: Int) -> String { "user\(account)@contoso.example" }

    /// The object ID of an account in a tenant: its `uid` at home, another stable GUID in guest tenants.
    public func objectID(account: Int, tenant: Int) -> String {
        guard tenant > 0 else { return accountObjectIDs[account] }
        var random = SplitMix64(seed: seed ^ UInt64(account &* 7919 &+ tenant &* 104_729))
        return Self.guid(&random)
    }

    /// The scopes of scope set `k`, sorted (so the MSAL JSON key is the one MSAL Python builds).
    public static func scopes(ofSet k: Int) -> [String] {
        ["https://res\(k).example/Files.Read", "https://res\(k).example/Mail.Read", "https://res\(k).example/User.Read"]
    }

    /// A scope of resource `k` that no cached token holds: a lookup for it misses.
    public static func missingScope(ofSet k: Int) -> String { "https://res\(k).example/Admin.All" }

    /// The issuer of a tenant's tokens.
    public static func issuer(tenant: String) -> String { "https://\(environment)/\(tenant)/v2.0" }

    /// The whole cache. Access tokens expire at `expiresOn`; ID tokens at `now + 1 day`.
    public func contents(now: Date, expiresOn: Date) -> TokenCacheContents {
        contents(accounts: 0..<accountCount, now: now, expiresOn: expiresOn)
    }

    /// The entries of the accounts in `accounts` (their access tokens, refresh token, ID tokens and
    /// account entries; the app's `AppMetadata` entry with account 0), exactly as ``contents(now:expiresOn:)``
    /// has them: the secrets come from the same positions of the seeded sequence, so a cache built
    /// batch by batch equals the one built at once.
    public func contents(accounts: Range<Int>, now: Date, expiresOn: Date) -> TokenCacheContents {
        var contents = TokenCacheContents()
        let clientID = Self.clientID
        let environment = Self.environment
        let perAccount = tenantsPerAccount * scopeSetsPerTenant
        let tokens = min(accounts.lowerBound * perAccount, n)..<min(accounts.upperBound * perAccount, n)
        contents.accessTokens.reserveCapacity(tokens.count)
        // Access token i draws the secret characters i × secretLength ..< (i + 1) × secretLength of the
        // sequence; the refresh tokens follow all n access tokens.
        var random = randomSequence(from: tokens.lowerBound * secretLength)
        for index in tokens {
            let (account, tenant, scopeSet) = position(ofToken: index)
            let entry = AccessTokenEntry(
                homeAccountID: fresh(homeAccountID(account)), environment: fresh(environment), clientID: fresh(clientID),
                realm: fresh(tenants[tenant]), target: Self.scopes(ofSet: scopeSet).joined(separator: " "),
                secret: Self.secret(length: secretLength, &random), cachedAt: now, expiresOn: expiresOn,
                extendedExpiresOn: expiresOn)
            contents.accessTokens[entry.key] = entry
        }
        random = randomSequence(from: (n + accounts.lowerBound) * secretLength)
        for account in accounts {
            let home = homeAccountID(account)
            let refreshToken = RefreshTokenEntry(
                homeAccountID: fresh(home), environment: fresh(environment), clientID: fresh(clientID),
                secret: Self.secret(length: secretLength, &random))
            contents.refreshTokens[refreshToken.key] = refreshToken
            for tenant in 0..<tenantsPerAccount {
                let idToken = IDTokenEntry(
                    homeAccountID: fresh(home), environment: fresh(environment), clientID: fresh(clientID),
                    realm: fresh(tenants[tenant]), secret: idTokenJWT(account: account, tenant: tenant, issuedAt: now))
                contents.idTokens[idToken.key] = idToken
                let entry = AccountEntry(
                    homeAccountID: fresh(home), environment: fresh(environment), realm: fresh(tenants[tenant]),
                    localAccountID: objectID(account: account, tenant: tenant), username: username(account),
                    authorityType: AccountEntry.entraAuthorityType, accountSource: "device_code", name: "User \(account)")
                contents.accounts[entry.key] = entry
            }
        }
        if accounts.contains(0) {
            let metadata = AppMetadataEntry(clientID: clientID, environment: environment)
            contents.appMetadata[metadata.key] = metadata
        }
        return contents
    }

    /// The secrets' random sequence after its first `draws` numbers (SplitMix64 adds a constant to its
    /// state per draw, so skipping is one multiplication).
    private func randomSequence(from draws: Int) -> SplitMix64 {
        SplitMix64(seed: (seed &+ 1) &+ UInt64(draws) &* 0x9E37_79B9_7F4A_7C15)
    }

    /// An unsigned ID token (`alg` `none`) for an account in a tenant, with the claims Entra sends.
    public func idTokenJWT(account: Int, tenant: Int, issuedAt: Date, lifetime: TimeInterval = 86_400) -> String {
        let iat = Int(issuedAt.timeIntervalSince1970)
        let claims: [String: JSONValue] = [
            "aud": .string(Self.clientID),
            "iss": .string(Self.issuer(tenant: tenants[tenant])),
            "iat": .number(Double(iat)), "nbf": .number(Double(iat)), "exp": .number(Double(iat + Int(lifetime))),
            "name": .string("User \(account)"),
            "oid": .string(objectID(account: account, tenant: tenant)),
            "preferred_username": .string(username(account)),
            "sub": .string("sub-\(objectID(account: account, tenant: tenant))"),
            "tid": .string(tenants[tenant]),
            "ver": .string("2.0"),
        ]
        return Self.unsignedJWT(claims)
    }

    /// `<header>.<payload>.` with header `{"alg":"none","typ":"JWT"}` (RFC 7519 §6.1).
    public static func unsignedJWT(_ claims: [String: JSONValue]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = Base64URL.encode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let payload = Base64URL.encode((try? encoder.encode(claims)) ?? Data("{}".utf8))
        return "\(header).\(payload)."
    }

    /// A random base64url string of `length` characters.
    public static func secret(length: Int, _ random: inout SplitMix64) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var bytes = [UInt8](repeating: 0, count: length)
        for index in 0..<length { bytes[index] = alphabet[Int(random.next() & 63)] }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A lowercase GUID string from the generator.
    public static func guid(_ random: inout SplitMix64) -> String {
        let hex = String(format: "%016llx%016llx", random.next(), random.next())
        let h = Array(hex)
        return "\(String(h[0..<8]))-\(String(h[8..<12]))-4\(String(h[13..<16]))-a\(String(h[17..<20]))-\(String(h[20..<32]))"
    }

    /// A copy of `string` in its own allocation.
    func fresh(_ string: String) -> String { String(decoding: Array(string.utf8), as: UTF8.self) }
}

/// One lookup of a benchmark: an account, a tenant and a scope set of a cached token.
public struct Lookup: Sendable {
    public var account: Int
    public var tenant: Int
    public var scopeSet: Int
    /// Which of the set's three scopes a subset lookup asks for.
    public var subsetScope: Int

    /// `count` lookups of random cached tokens (seeded).
    public static func random(_ count: Int, shape: CacheShape, seed: UInt64) -> [Lookup] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            let token = Int(random.next() % UInt64(shape.n))
            let (account, tenant, scopeSet) = shape.position(ofToken: token)
            return Lookup(account: account, tenant: tenant, scopeSet: scopeSet, subsetScope: Int(random.next() % 3))
        }
    }

    /// The scopes of an exact lookup: the whole set.
    public var exactScopes: [String] { CacheShape.scopes(ofSet: scopeSet) }
    /// The scopes of a subset lookup: one scope of the set.
    public var subsetScopes: [String] { [CacheShape.scopes(ofSet: scopeSet)[subsetScope]] }
    /// The scopes of a missing lookup: a scope of the resource no token holds.
    public var missingScopes: [String] { [CacheShape.missingScope(ofSet: scopeSet)] }
}
