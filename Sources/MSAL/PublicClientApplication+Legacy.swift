public import Foundation
public import MSALCache
public import MSALCore
import MSALNetwork

// Migration from ADAL: legacy cache lookups and the silent upgrade (Docs/Migration.md).
//
// MSAL for iOS/macOS's path ("Migrate applications to MSAL for iOS and macOS", *Migrating the
// account cache*): `accountForUsername:` reads MSAL's and ADAL's caches; the first silent request
// with the account redeems ADAL's refresh token at the v2.0 endpoint for the scopes the app asks
// for (an ADAL refresh token is a multi-resource refresh token, good for any resource of the
// user), caches the MSAL tokens, and the result carries the MSAL account identifier. The legacy
// cache is never written.

extension PublicClientApplication {
    /// Redeems one legacy entry's refresh token at the v2.0 token endpoint of the entry's own
    /// authority and caches the MSAL tokens: the building block of `msal migrate-adal`, which
    /// migrates a legacy cache entry by entry. Apps migrate through ``account(forUsername:)`` and
    /// ``acquireTokenSilent(with:)`` instead.
    ///
    /// The legacy cache is not modified. Nothing is read from the MSAL cache first: the refresh token
    /// is always redeemed.
    ///
    /// - Parameters:
    ///   - entry: an entry from a ``LegacyTokenCache`` (``LegacyTokenCache/read()``).
    ///   - scopes: the scopes to ask for; `nil` asks for the entry's v1 resource as
    ///     `<resource>/.default` (``ScopeSet/defaultScope(forResource:)``, what Entra ID grants a
    ///     v1 resource's static permissions under), or only for the reserved OIDC scopes when the
    ///     entry has no resource.
    ///   - correlationID: sent as `client-request-id`; a new UUID when `nil`.
    /// - Returns: the result; its ``AuthenticationResult/account`` has the MSAL home account ID.
    /// - Throws: ``MSALError``: `.internal(.invalidParameter)` when the entry was issued to another
    ///   client ID and is not a family refresh token (a refresh token redeems only for its own client
    ///   or, FOCI, its family); `.internal(.invalidAuthority)`
    ///   when its authority is not an Entra ID authority (AD FS entries are not migrated);
    ///   `.interactionRequired` when the provider rejects the refresh token (revoked, expired, the
    ///   user must do MFA: the user signs in interactively); `.internal(.invalidScope)`;
    ///   `.internal(.failedAuthorityValidation)`, `.internal(.networkError)`, `.serverError` and
    ///   `.serverDeclinedScopes` as for ``acquireTokenSilent(with:)``; `.internal(.cacheError)`.
    public func upgrade(legacyEntry entry: LegacyTokenEntry, scopes: [String]? = nil, correlationID: UUID? = nil) async throws(MSALError) -> AuthenticationResult {
        let correlation = (correlationID ?? UUID()).uuidString.lowercased()
        do throws(MSALError) {
            guard isUsable(entry) else {
                throw MSALError.internal(
                    .invalidParameter,
                    "\(entry.source) #\(entry.position) was issued to client \(entry.clientID), not to this application (\(configuration.clientID)); a refresh token redeems only for its own client.")
            }
            guard let authority = entry.entraAuthority else {
                throw MSALError.internal(
                    .invalidAuthority,
                    "\(entry.source) #\(entry.position) is for an authority that is not Microsoft Entra ID (\(entry.authority)); only Entra ID entries are migrated, the user signs in again.")
            }
            let requested = try ScopeSet.validatedRequest(scopes ?? entry.resource.map { [ScopeSet.defaultScope(forResource: $0)] } ?? [])
            return try await redeemLegacy(
                entry, authority: authority, scopes: requested, extraParameters: [:], correlationID: correlation,
                throttleIdentifier: LegacyUser.throttleIdentifier(entry))
        } catch {
            throw error.filling(correlationID: correlation)
        }
    }

    // MARK: - Reading the legacy caches

    /// The users of the legacy caches: every usable entry of this client at an Entra authority,
    /// grouped by username and cloud. Caches that cannot be read and entries left out are logged
    /// (reasons only: no token, and the user ID as PII), never an error.
    func legacyUsers() -> [LegacyUser] {
        var order: [String] = []
        var groups: [String: [LegacyTokenEntry]] = [:]
        for cache in legacyCaches {
            let contents: LegacyTokenCacheContents
            do {
                contents = try cache.read()
            } catch {
                logger.info("legacy cache not used: \(error.message)")
                continue
            }
            for skipped in contents.skipped {
                if case .malformed = skipped.reason {
                    logger.warning("\(skipped.source) entry #\(skipped.position) skipped: \(skipped.message)")
                } else {
                    logger.debug("\(skipped.source) entry #\(skipped.position) skipped: \(skipped.message)")
                }
            }
            for entry in contents.entries {
                guard isUsable(entry) else {
                    logger.debug("\(entry.source) entry #\(entry.position) skipped: issued to another client (\(entry.clientID))")
                    continue
                }
                guard let authority = entry.entraAuthority else {
                    logger.debug("\(entry.source) entry #\(entry.position) skipped: not an Entra ID authority")
                    continue
                }
                let key = LegacyUser.cloud(of: authority.environment) + "|" + entry.userID.lowercased()
                if groups[key] == nil { order.append(key) }
                groups[key, default: []].append(entry)
            }
        }
        return order.compactMap { key in groups[key].map(LegacyUser.init(entries:)) }
    }

    /// Whether this application may redeem a legacy entry's refresh token: it was issued to this
    /// client ID, or it is a family refresh token (FOCI), which any client of the family redeems
    /// (a client outside the family gets `invalid_grant` / `client_mismatch`, and the next entry is
    /// tried).
    func isUsable(_ entry: LegacyTokenEntry) -> Bool {
        entry.clientID.lowercased() == configuration.clientID.lowercased() || entry.familyID != nil
    }

    /// The legacy user a silent request's account stands for, when the MSAL cache does not have the
    /// account: by identifier (the legacy identifier or a kept home account ID), else by username,
    /// in the account's cloud. `nil` sends the request down the ordinary path.
    func legacyUser(forSilent account: Account) throws(MSALError) -> LegacyUser? {
        // An MSAL account of the cache (every silent call of a migrated app): one kept lookup, before
        // any legacy cache is read.
        if try self.account(homeAccountID: account.identifier, environment: account.environment) != nil { return nil }
        let identifier = account.identifier.lowercased()
        if try allAccounts().contains(where: { $0.identifier.lowercased() == identifier }) { return nil }
        let cloud = LegacyUser.cloud(of: account.environment)
        let users = legacyUsers().filter { $0.cloud == cloud }
        if let byIdentifier = users.first(where: { $0.identifier.lowercased() == identifier }) { return byIdentifier }
        guard let username = account.username?.lowercased() else { return nil }
        return users.first { $0.userID.lowercased() == username }
    }

    // MARK: - The silent upgrade

    /// ``acquireTokenSilent(with:)`` for an account found only in a legacy cache: redeems the
    /// legacy refresh token for the requested scopes at the v2.0 endpoint and caches the result.
    func legacySilent(
        _ parameters: SilentTokenParameters, user: LegacyUser, scopes: ScopeSet, correlationID: String
    ) async throws(MSALError) -> AuthenticationResult {
        guard !user.hasObjectIDConflict else {
            throw .internal(.ambiguousAccount, "The legacy ADAL caches hold two different users with this username; sign in interactively.")
        }
        // Upgraded already (the app kept the legacy account object): the MSAL account serves it.
        if let upgraded = try allAccounts().first(where: { user.isSameAccount(as: $0) }) {
            var forwarded = parameters
            forwarded.account = upgraded
            return try await silent(forwarded, correlation: .given(correlationID))
        }
        let requestAuthority = parameters.authority ?? configuration.authority
        let claims = try Self.claimsParameter(requested: parameters.claims, capabilities: configuration.clientCapabilities)
        var extraParameters = parameters.extraQueryParameters
        if let claims { extraParameters["claims"] = claims }
        let extra = extraParameters
        let key = RefreshCoordinator.Key(
            kind: "legacy", clientID: configuration.clientID, authority: requestAuthority.url.absoluteString.lowercased(),
            account: user.cloud + "|" + user.userID.lowercased(), scopes: scopes.normalized, forceRefresh: false,
            extraParameters: extra)
        let operation: @Sendable () async -> Result<AuthenticationResult, MSALError> = { [self] in
            do throws(MSALError) {
                return .success(try await upgradeLegacy(user, requestAuthority: requestAuthority, scopes: scopes, extraParameters: extra, correlationID: correlationID))
            } catch {
                return .failure(error)
            }
        }
        return try await refreshes.run(key: key, operation)
    }

    /// Tries the user's legacy refresh tokens (each distinct one once, the request's tenant first,
    /// then the most recently issued) until one is accepted.
    private func upgradeLegacy(
        _ user: LegacyUser, requestAuthority: Authority, scopes: ScopeSet, extraParameters: [String: String], correlationID: String
    ) async throws(MSALError) -> AuthenticationResult {
        logger.info("upgrading the legacy account of \(pii: user.userID) from the ADAL cache, correlation \(correlationID)")
        var lastError: MSALError?
        for entry in user.candidates(for: requestAuthority) {
            guard let own = entry.entraAuthority else { continue }
            let authority = LegacyUser.target(own: own, request: requestAuthority)
            do {
                return try await redeemLegacy(
                    entry, authority: authority, scopes: scopes, extraParameters: extraParameters, correlationID: correlationID,
                    throttleIdentifier: LegacyUser.throttleIdentifier(entry))
            } catch {
                // A failure of this entry (its token rejected, its tenant gone or not trusted):
                // another entry may hold a token that works. Anything else (the provider is down,
                // the app's registration is wrong, the cache cannot be written) stops here.
                guard error.code == .interactionRequired || Self.entrySpecific.contains(error.internalCode) else { throw error }
                logger.info("\(entry.source) entry #\(entry.position) was not redeemed (\(error.codeString)); trying the next one")
                lastError = error
            }
        }
        guard let lastError else {
            throw MSALError(
                .interactionRequired, message: "The legacy ADAL cache has no refresh token for this account and client; sign in interactively.",
                correlationID: correlationID)
        }
        if lastError.code == .interactionRequired { throw lastError }
        // No entry was accepted and the last one failed for its authority: the user signs in again.
        throw MSALError(
            .interactionRequired,
            message: "No legacy (ADAL) refresh token of this account was accepted (the last: \(lastError.codeString): \(lastError.message)); sign in interactively.",
            correlationID: correlationID)
    }

    /// Internal codes that concern one legacy entry only (its authority's tenant no longer exists, or
    /// its host is not trusted): the upgrade goes on with the user's next entry.
    static let entrySpecific: Set<MSALError.InternalCode?> = [.invalidAuthority, .failedAuthorityValidation]

    /// Redeems one legacy refresh token at `authority`'s v2.0 token endpoint (RFC 6749 §6) and caches
    /// the response: the same validation and cache write as any token response.
    private func redeemLegacy(
        _ entry: LegacyTokenEntry, authority: Authority, scopes: ScopeSet, extraParameters: [String: String], correlationID: String,
        throttleIdentifier: String
    ) async throws(MSALError) -> AuthenticationResult {
        logger.info("redeeming the ADAL refresh token of \(entry.source) #\(entry.position) at \(authority.environment), correlation \(correlationID)")
        // Validates an unknown Entra host before any refresh token is sent to it.
        _ = try await environments(for: authority, correlationID: correlationID)
        let openID = try await discovery.configuration(for: authority, correlationID: correlationID)
        let client = self.client
        let clientID = configuration.clientID
        let parameters = protocolParameters(for: authority).merging(extraParameters) { _, app in app }
        let key = ThrottleKey(clientID: clientID, authority: authority, scopes: scopes, homeAccountId: throttleIdentifier)
        let refreshToken = entry.refreshToken
        let response: TokenResponse
        do {
            response = try await throttler.perform(key, grantType: "refresh_token") { () async throws(MSALError) -> TokenResponse in
                try await client.redeemRefreshToken(
                    tokenEndpoint: openID.tokenEndpoint, clientID: clientID, refreshToken: refreshToken,
                    scopes: scopes.union(ScopeSet.reservedOIDCScopes), extraParameters: parameters, correlationID: correlationID)
            }
        } catch {
            var mapped = Self.refreshFailure(error, correlationID: correlationID)
            if mapped.code == .interactionRequired {
                mapped.message = "The identity provider did not accept the legacy (ADAL) refresh token of \(entry.source) #\(entry.position): \(mapped.message) The legacy cache was not changed; sign in interactively."
            }
            throw mapped
        }
        var knownRealm: String?
        if case .tenantID(let id)? = authority.tenant { knownRealm = id }
        let result = try await handle(
            response,
            context: ResponseContext(
                authority: authority, openID: openID, requestedScopes: scopes, correlationID: correlationID,
                expectedHomeAccountID: entry.homeAccountID, knownRealm: knownRealm, accountSource: nil))
        logger.info("the legacy account of \(pii: entry.userID) is now the MSAL account \(pii: result.account.identifier)")
        return result
    }
}

/// One user of the legacy caches: the usable entries of one username in one cloud, for this app.
struct LegacyUser {
    /// ADAL's user ID, as the first entry wrote it.
    let userID: String
    /// The cloud (``cloud(of:)``) of the entries' authorities.
    let cloud: String
    /// The host (and port) of the first entry's authority: the account's environment.
    let environment: String
    /// The entries, most recently issued first (by `expiresOn`; entries without one last).
    let entries: [LegacyTokenEntry]
    /// The MSAL home account ID, when a legacy cache kept the client info.
    let homeAccountID: String?
    /// Two entries in one tenant name different object IDs: two different users had this username
    /// (one deleted and created again), so it does not say which account is meant.
    let hasObjectIDConflict: Bool

    init(entries unsorted: [LegacyTokenEntry]) {
        let entries = unsorted.enumerated().sorted { lhs, rhs in
            switch (lhs.element.expiresOn, rhs.element.expiresOn) {
            case let (l?, r?) where l != r: return l > r
            case (.some, nil): return true
            case (nil, .some): return false
            default: return lhs.offset < rhs.offset
            }
        }.map(\.element)
        self.entries = entries
        let first = unsorted[0]
        userID = first.userID
        let authority = first.entraAuthority
        environment = authority?.environment ?? ""
        cloud = LegacyUser.cloud(of: environment)
        homeAccountID = entries.lazy.compactMap(\.homeAccountID).first
        var objectIDs: [String: Set<String>] = [:]
        for entry in entries {
            if let tenant = entry.tenant, let objectID = entry.objectID { objectIDs[tenant, default: []].insert(objectID.lowercased()) }
        }
        hasObjectIDConflict = objectIDs.values.contains { $0.count > 1 }
    }

    /// The cloud an environment belongs to: the preferred network host of a well-known Entra cloud
    /// (so `login.windows.net` and `login.microsoftonline.com` are one), else the environment itself.
    static func cloud(of environment: String) -> String {
        let lower = environment.lowercased()
        return InstanceMetadata.known(host: lower)?.preferredNetwork ?? lower
    }

    /// The prefix of the identifiers of accounts found only in a legacy cache.
    static let identifierPrefix = "adal-"

    /// The account identifier of a legacy user: the home account ID when the legacy cache kept it,
    /// else `adal-` and the base64url of the lowercased user ID (no dot, so never mistaken for
    /// `<uid>.<utid>`). Opaque to apps.
    static func identifier(userID: String, homeAccountID: String?) -> String {
        homeAccountID ?? identifierPrefix + Base64URL.encode(Data(userID.lowercased().utf8))
    }

    /// Whether an identifier is one ``identifier(userID:homeAccountID:)`` made up (not an MSAL home
    /// account ID).
    static func isLegacyIdentifier(_ identifier: String) -> Bool {
        identifier.hasPrefix(identifierPrefix)
    }

    var identifier: String { Self.identifier(userID: userID, homeAccountID: homeAccountID) }

    /// The account part of a legacy entry's throttling key: one per entry, so a rejected entry does
    /// not keep the user's other entries (which may hold other refresh tokens) from being tried.
    static func throttleIdentifier(_ entry: LegacyTokenEntry) -> String {
        identifier(userID: entry.userID, homeAccountID: entry.homeAccountID) + "|" + entry.source + "#" + String(entry.position)
    }

    /// The account ``PublicClientApplication/account(forUsername:)`` returns: a tenant profile per
    /// tenant whose object ID the entries name.
    var account: Account {
        var profiles: [String: TenantProfile] = [:]
        let homeTenant = homeAccountID.flatMap { Account.homeAccountParts(of: $0)?.tenantID.lowercased() }
        for entry in entries {
            guard let tenant = entry.tenant, let objectID = entry.objectID, profiles[tenant] == nil else { continue }
            profiles[tenant] = TenantProfile(
                identifier: objectID.lowercased(), tenantID: tenant, environment: environment, isHomeTenant: tenant == homeTenant, claims: nil)
        }
        return Account(
            identifier: identifier, username: userID, environment: environment,
            tenantProfiles: profiles.values.sorted { $0.tenantID < $1.tenantID })
    }

    /// Whether an MSAL account is this user: same username and cloud, the same home account ID when
    /// the legacy cache kept one, and no tenant where the object IDs differ.
    func isSameAccount(as account: Account) -> Bool {
        guard account.username?.lowercased() == userID.lowercased(), LegacyUser.cloud(of: account.environment) == cloud else { return false }
        if let homeAccountID, homeAccountID.lowercased() != account.identifier.lowercased() { return false }
        for entry in entries {
            guard let tenant = entry.tenant, let objectID = entry.objectID,
                  let profile = account.tenantProfiles.first(where: { $0.tenantID.lowercased() == tenant })
            else { continue }
            if profile.identifier.lowercased() != objectID.lowercased() { return false }
        }
        return true
    }

    /// The entries to try for a request, each distinct refresh token once: entries of the
    /// request's tenant first; then entries of the user's own organization before guest entries
    /// (ADAL kept `identityProvider`, the `idp` claim, only for guests), so that a `common` or
    /// `organizations` request lands in the home tenant as MSAL's silent requests do; within each,
    /// the most recently issued first (``entries`` order).
    func candidates(for request: Authority) -> [LegacyTokenEntry] {
        let requestTenant = request.tenant?.isSingleTenant == true ? request.tenant?.segment : nil
        func rank(_ entry: LegacyTokenEntry) -> Int {
            if let requestTenant, entry.tenant == requestTenant { return 0 }
            return entry.identityProvider == nil ? 1 : 2
        }
        let ordered = entries.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
        var seen: Set<String> = []
        return ordered.filter { seen.insert($0.refreshToken).inserted }
    }

    /// Where to redeem an entry for a request: the request's authority when it names one tenant of
    /// the same cloud; for `common` or `organizations` in the same cloud, the entry's tenant at the
    /// request's host; for another cloud, the entry's own authority (its refresh token is of that
    /// cloud).
    static func target(own: Authority, request: Authority) -> Authority {
        guard request.type == .aad, cloud(of: request.environment) == cloud(of: own.environment) else { return own }
        if request.tenant?.isSingleTenant == true { return request }
        if let tenant = own.tenant, tenant.isSingleTenant { return request.withTenant(tenant.segment) }
        return request
    }
}
