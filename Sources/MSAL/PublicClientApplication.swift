import Foundation
public import MSALCore
public import MSALCache
import MSALNetwork
import MSALWebAuth
internal import Synchronization

/// The entry point of swift-msal for apps that cannot keep a secret: command-line tools, desktop
/// apps, and servers acting for a signed-in user.
///
/// One instance serves many clouds and tenants: the configuration's authority is only the default,
/// and each request may name another. Tokens go to the configured ``TokenCacheStore``; get tokens
/// with ``acquireTokenSilent(with:)`` first, and sign in (``acquireToken(with:deviceCodeHandler:)``)
/// only when it throws ``MSALError/Code/interactionRequired``.
///
/// Source: MSAL for iOS/macOS `MSALPublicClientApplication`.
public final class PublicClientApplication: Sendable {
    /// The configuration the application was created with.
    public let configuration: PublicClientApplicationConfiguration

    let cache: TokenCache
    let discovery: OpenIDConfigurationCache
    let client: OAuth2Client
    let refreshes = RefreshCoordinator()
    let throttler: Throttler
    let instanceDiscovery: InstanceDiscovery
    let redirectURI: RedirectURI
    let pendingAuthorizations = PendingAuthorizations()
    /// Whether an interactive sign-in is running (one at a time, as MSAL for iOS/macOS).
    let interactiveSession = Mutex(false)
    /// Set by ``cancelCurrentInteractiveSession()`` for the running interactive sign-in.
    let interactiveSessionCanceled = Mutex(false)
    /// The running interactive sign-in's loopback listener, so it can be canceled.
    let interactiveListener = Mutex<LoopbackRedirectListener?>(nil)
    /// ``environments(for:correlationID:)`` of the well-known clouds' hosts (a fixed table), by host.
    let knownCloudEnvironments = KeptValues<String, [String]>(limit: 1_024)
    /// The host last found in ``knownCloudEnvironments`` and its environments: an app that uses
    /// one cloud finds them with one comparison (the authority's host is usually the same string).
    let lastKnownCloud = Mutex<(host: String, environments: [String])?>(nil)
    /// Decoded ID tokens by their JWT: an account is assembled again after every change of the
    /// cache (a refresh of one tenant), and its other profiles' ID tokens have not changed. Kept for
    /// every instance in the process (a JWT's claims are the same for all), so an instance opened on a cache
    /// another instance already read (a server that makes one per request, a second client ID)
    /// does not decode every tenant profile's ID token again. At most 16,384 kept: the four tenant
    /// profiles of each of the 4,096 accounts a cache keeps assembled. They outlive the instance
    /// that decoded them (the cache holds the same tokens); ``remove(account:)`` in any instance
    /// drops them all, so no removed account's ID token stays in memory.
    static let sharedIDTokenClaims = KeptValues<JWTKey, IDTokenClaims>(limit: 16_384)
    /// Decoded `client_info` values by their encoded form, for every instance in the process: an
    /// account's refreshes bring the same one each time. At most 4,096 kept; dropped, as
    /// ``sharedIDTokenClaims`` are, by ``remove(account:)``.
    static let sharedClientInfos = KeptValues<String, ClientInfo>(limit: 4_096)
    /// The scopes a token response's `scope` grants, less the reserved OIDC scopes, and their
    /// space-joined `target`, by the exact `scope` string: a provider answers an app's refreshes
    /// with the same string again and again. At most 1,024 kept.
    let grantedScopes = KeptValues<ExactStrings, GrantedScopes>(limit: 1_024)
    /// ``ScopeSet/validatedRequest(_:)`` of the scope arrays silent requests pass, by array, with
    /// the numbers the cache's index gave them (see ``RequestScopes``).
    let requestScopes = KeptValues<ExactStrings, RequestedScopes>(limit: 1_024)
    /// The last scope arrays asked for, each in the slot its storage's address picks, with their
    /// ``RequestScopes``: an app that keeps its scope arrays (constants) finds them here with one
    /// comparison that the arrays' shared storage decides at once, instead of hashing every scope.
    let recentRequestScopes = Mutex<[(scopes: [String], requested: RequestedScopes)?]>(Array(repeating: nil, count: 256))
    /// Answers of silent requests served from the cache, for requests that repeat while it has not changed.
    let silentHits = SilentHitMemo()
    /// This instance's number, unique in the process: the ``AccountOrigin/application`` of the
    /// accounts it assembles.
    let instanceNumber = PublicClientApplication.instanceNumbers.add(1, ordering: .relaxed).newValue
    private static let instanceNumbers = Atomic<UInt64>(0)

    /// The token cache store the application opened from ``PublicClientApplicationConfiguration/cacheBackend``
    /// (for ``TokenCacheBackend/platformDefault``: the keyring or the encrypted file, whichever it chose).
    public let cacheStore: any TokenCacheStore
    /// The legacy caches read for the migration from ADAL: ``PublicClientApplicationConfiguration/legacyCaches``
    /// and, with ``PublicClientApplicationConfiguration/readsADALKeyedItems``, the keyed items of ``cacheStore``.
    let legacyCaches: [any LegacyTokenCache]

    /// Creates an application and opens its token cache store.
    /// - Throws: ``MSALError`` `.internal(.invalidParameter)` when the client ID is empty or has
    ///   whitespace, or the access group is invalid; `.internal(.invalidRedirectURI)` when the
    ///   redirect URI breaks a rule of ``RedirectURI`` (the message says which); what
    ///   ``TokenCacheBackend/makeStore(accessGroup:logger:)`` throws when the cache cannot be opened
    ///   (`.internal(.cacheUnavailable)` for a keyring that cannot be used or an exhausted default
    ///   chain, `.internal(.cacheError)` for a file that cannot be opened);
    ///   `.internal(.invalidParameter)` when ``PublicClientApplicationConfiguration/readsADALKeyedItems``
    ///   is set and the store keeps no ADAL keyed items.
    public init(configuration: PublicClientApplicationConfiguration) throws(MSALError) {
        let clientID = configuration.clientID
        guard !clientID.isEmpty, !clientID.contains(where: { $0.isWhitespace }) else {
            throw .internal(.invalidParameter, "The client ID must be a non-empty string without whitespace.")
        }
        self.redirectURI = try RedirectURI(configuration.redirectURI, applicationID: configuration.applicationID)
        self.configuration = configuration
        self.cacheStore = try configuration.cacheBackend.makeStore(accessGroup: configuration.accessGroup, logger: configuration.logger)
        self.cache = TokenCache(store: cacheStore, logger: configuration.logger)
        var legacyCaches = configuration.legacyCaches
        if configuration.readsADALKeyedItems {
            guard let keyedStore = cacheStore as? any ADALKeyedItemStore else {
                throw .internal(
                    .invalidParameter,
                    "readsADALKeyedItems needs a cache store that keeps ADAL keyed items (ADALKeyedItemStore); the configured store does not.")
            }
            legacyCaches.append(ADALKeyedTokenCache(store: keyedStore))
        }
        self.legacyCaches = legacyCaches
        self.discovery = OpenIDConfigurationCache(transport: configuration.transport, logger: configuration.logger)
        let retrying = RetryingTransport(
            configuration.transport, policy: configuration.retryPolicy, logger: configuration.logger, sleep: configuration.sleep)
        self.client = OAuth2Client(transport: retrying, logger: configuration.logger, clock: configuration.clock)
        self.throttler = Throttler(clock: configuration.clock)
        self.instanceDiscovery = InstanceDiscovery(
            transport: configuration.transport, trustedHost: configuration.instanceDiscoveryHost,
            validateAuthority: configuration.validateAuthority, logger: configuration.logger)
    }

    var logger: Logger { configuration.logger }

    // MARK: - Device code

    /// Signs a user in with the device authorization grant (RFC 8628), for machines without a browser.
    ///
    /// Requests a device code, calls `deviceCodeHandler` with what the user must do (user code,
    /// verification URI, expiry, message) before polling starts, then polls the token endpoint at
    /// the provider's interval (`slow_down` adds 5 s, RFC 8628 §3.5). The tokens are cached.
    ///
    /// - Returns: the result, with ``AuthenticationResult/tokenSource`` `.identityProvider`.
    /// - Throws: ``MSALError``: `.internal(.invalidScope)` for a reserved or empty scope;
    ///   `.internal(.invalidAuthority)`; `.internal(.networkError)` when the provider is down;
    ///   `.userCanceled` when the user denies the request or the task is canceled (or the handler
    ///   throws); `.internal(.deviceCodeExpired)` when the code expires first; `.serverError` for
    ///   other provider errors; `.serverDeclinedScopes` when fewer scopes were granted (the token is
    ///   cached all the same); `.internal(.cacheError)` (or `.cacheUnavailable`) when the cache cannot
    ///   be read, before any request: the user is not asked to sign in for tokens that could not be kept.
    public func acquireToken(
        with parameters: DeviceCodeParameters,
        deviceCodeHandler: @escaping @Sendable (DeviceCodeInfo) async throws -> Void
    ) async throws(MSALError) -> AuthenticationResult {
        let correlationID = (parameters.correlationID ?? UUID()).uuidString.lowercased()
        do {
            return try await deviceCodeSignIn(parameters, correlationID: correlationID, deviceCodeHandler: deviceCodeHandler)
        } catch {
            throw error.filling(correlationID: correlationID)
        }
    }

    private func deviceCodeSignIn(
        _ parameters: DeviceCodeParameters,
        correlationID: String,
        deviceCodeHandler: @escaping @Sendable (DeviceCodeInfo) async throws -> Void
    ) async throws(MSALError) -> AuthenticationResult {
        let scopes = try ScopeSet.validatedRequest(parameters.scopes)
        // The tokens go to the cache: one that cannot be read (damaged, wrong key) fails now, before
        // the user signs in for tokens that could not be kept.
        _ = try cache.revision()
        let authority = parameters.authority ?? configuration.authority
        logger.info("device code sign-in at \(authority.environment), correlation \(correlationID)")
        _ = try await environments(for: authority, correlationID: correlationID)
        let openID = try await discovery.configuration(for: authority, correlationID: correlationID)
        guard let deviceEndpoint = openID.deviceAuthorizationEndpoint else {
            throw .internal(.invalidParameter, "The provider at \(authority) does not support the device authorization grant (no device_authorization_endpoint).")
        }
        let clock = configuration.clock
        let flow = DeviceCodeFlow(client: client, clock: clock, sleep: configuration.sleep, logger: logger)
        let response = try await flow.run(
            deviceAuthorizationEndpoint: deviceEndpoint,
            tokenEndpoint: openID.tokenEndpoint,
            clientID: configuration.clientID,
            scopes: scopes.union(ScopeSet.reservedOIDCScopes),
            extraParameters: protocolParameters(for: authority).merging(parameters.extraQueryParameters) { _, app in app },
            correlationID: correlationID
        ) { authorization in
            let info = DeviceCodeInfo(
                userCode: authorization.userCode,
                verificationURI: authorization.verificationURI,
                verificationURIComplete: authorization.verificationURIComplete,
                expiresIn: authorization.expiresIn,
                expiresOn: clock.now().addingTimeInterval(authorization.expiresIn),
                interval: authorization.interval,
                message: authorization.message
                    ?? "To sign in, use a web browser to open the page \(authorization.verificationURI.absoluteString) and enter the code \(authorization.userCode) to authenticate."
            )
            do {
                try await deviceCodeHandler(info)
            } catch let error as MSALError {
                throw error
            } catch {
                throw MSALError(.userCanceled, message: "The device code handler stopped the sign-in: \(error).", correlationID: correlationID)
            }
        }
        return try await handle(
            response,
            context: ResponseContext(
                authority: authority, openID: openID, requestedScopes: scopes, correlationID: correlationID,
                expectedHomeAccountID: nil, knownRealm: nil, accountSource: "device_code"))
    }

    // MARK: - Silent

    /// Gets a token without user interaction: from the cache while the access token outlives
    /// ``PublicClientApplicationConfiguration/tokenExpirationBuffer``, else by redeeming the refresh
    /// token (RFC 6749 §6). Concurrent calls for the same account and scopes share one refresh.
    ///
    /// A refresh response without a new refresh token or ID token keeps the cached ones.
    ///
    /// An account found only in a legacy cache (``account(forUsername:)`` with
    /// ``PublicClientApplicationConfiguration/legacyCaches``) is upgraded: its ADAL refresh token is
    /// redeemed at the v2.0 endpoint for these scopes, the result is cached as MSAL entries, and
    /// ``AuthenticationResult/account`` carries the MSAL home account ID; the legacy cache is not
    /// changed (MSAL for iOS/macOS's migration path; Docs/Migration.md).
    ///
    /// Starts on the caller's executor (`nonisolated(nonsending)`, SE-0461): a cache hit that waits
    /// for nothing is answered there without suspending, so a call from the main actor is answered
    /// on the main actor, with no hop to the global concurrent executor and back. It checks the
    /// store's change stamp there and calls the configuration's logger, clock and store there (a
    /// handler that waits for the main queue would wait for itself). Everything else runs on the
    /// global concurrent executor: a refresh (the request, the response and the cache write); a hit
    /// while another task's write holds the cache's lock (for as long as its store takes), or after
    /// another process changed the store (which is then read again); and every hit when legacy
    /// caches are configured, the authority names its tenant by domain, or its cloud is one only
    /// instance discovery knows. A write that starts at the very moment of a hit's check is waited
    /// for where the hit runs. The caller resumes on its own executor either way.
    ///
    /// - Returns: the result; ``AuthenticationResult/tokenSource`` says whether it came from the cache.
    /// - Throws: ``MSALError``: `.interactionRequired` when the account has no refresh token in the
    ///   cache or the provider rejects it (with the server's `error`, `suberror`, HTTP status and
    ///   correlation ID), and when the provider rejects every legacy refresh token of a legacy
    ///   account; `.internal(.ambiguousAccount)` when the legacy caches hold two users with the
    ///   account's username; `.internal(.invalidScope)`; `.internal(.networkError)` or `.serverError`
    ///   when the provider is down or fails; `.serverDeclinedScopes`; `.internal(.cacheError)`.
    nonisolated(nonsending) public func acquireTokenSilent(with parameters: SilentTokenParameters) async throws(MSALError) -> AuthenticationResult {
        // Written out only when read: a hit's caller seldom reads it.
        let correlation = parameters.correlationID.map { RequestCorrelationID.given($0.uuidString.lowercased()) }
            ?? CorrelationIDGenerator.shared.nextID()
        do {
            let requested = try requestScopes(for: parameters.scopes)
            var probe: SilentHitMemo.Probe?
            if silentHits.isInUse() {
                probe = SilentHitMemo.Probe(SilentHitMemo.Key(
                    scopes: parameters.scopes, scopesHash: requested.arrayHash, accountIdentifier: parameters.account.identifier,
                    accountIdentifierHash: parameters.account.identifierHashValue, authority: parameters.authority ?? configuration.authority))
            }
            // On the caller's executor only what waits for nothing: not another task's write (it
            // holds the cache's lock for as long as its store takes), not a reload of a store that
            // another process changed. Those are waited for on the global executor (`silent`).
            guard let revision = cache.revisionWithoutWaiting() else {
                return try await silent(parameters, scopes: requested.scopes, correlation: correlation, probe: probe)
            }
            if let probe, var kept = keptHit(parameters, probe, revision: revision) {
                kept.correlation = correlation
                return kept
            }
            // A cache hit needs no `await`: answered here when the lookup needs no request.
            if let lookup = try silentLookup(parameters, scopes: requested.scopes, correlation: correlation, probe: probe, revision: revision) {
                if let served = try servedFromCache(lookup, parameters, correlation: correlation, probe: probe) { return served }
                return try await silent(parameters, scopes: requested.scopes, correlation: correlation, probe: probe, lookup: lookup)
            }
            return try await silent(parameters, scopes: requested.scopes, correlation: correlation, probe: probe)
        } catch {
            throw error.filling(correlationID: correlation.string)
        }
    }

    /// The answer ``silent(_:correlationID:probe:)`` gave to the same request (scopes as given, account
    /// identifier, authority) at the cache's current revision, when its access token is still to be
    /// served now; `nil` otherwise.
    /// - Parameter current: the cache's revision, just read by ``TokenCache/revisionWithoutWaiting()``.
    private func keptHit(_ parameters: SilentTokenParameters, _ probe: SilentHitMemo.Probe, revision current: UInt64) -> AuthenticationResult? {
        guard !parameters.forceRefresh, parameters.claims == nil,
              let (hit, revision) = silentHits.hit(for: probe), current == revision else { return nil }
        guard hitDecision(expiresOn: hit.expiresOn, refreshOn: hit.refreshOn, forceRefresh: false) == .useCached else { return nil }
        logger.debug("silent request served from the cache for \(pii: parameters.account.identifier)")
        return hit.result
    }

    /// Whether a cache hit for this request may be kept by ``silentHits``: its target tenant must
    /// follow from the authority and the account's identifier alone (not from a discovery document
    /// or the caller's tenant profiles), and its account must come from the cache.
    private static func keepsHit(authority: Authority, account: Account) -> Bool {
        switch (authority.type, authority.tenant) {
        case (.aad, .tenantID?): true
        case (.aad, .domain?): false
        case (.aad, _), (.b2c, _): account.homeAccountID != nil
        case (.adfs, _), (.oidc, _): true
        }
    }

    /// Runs on the global concurrent executor (`@concurrent`), whatever the caller's: everything a
    /// silent call does beyond a hit that ``silentLookup(_:scopes:correlation:probe:revision:)`` answers.
    /// - Parameter probe: the request's place in ``silentHits``, where a cache hit is offered; `nil`
    ///   offers nothing (the table is bypassed, or the call comes from the silent upgrade).
    @concurrent func silent(
        _ parameters: SilentTokenParameters, scopes given: RequestScopes? = nil, correlation: RequestCorrelationID,
        probe: SilentHitMemo.Probe? = nil, lookup done: SilentLookup? = nil
    ) async throws(MSALError) -> AuthenticationResult {
        let request: RequestScopes
        if let given {
            request = given
        } else {
            request = try requestScopes(for: parameters.scopes).scopes
        }
        let scopes = request.set
        let lookup: SilentLookup
        if let done {
            lookup = done
        } else {
            // Read before any lookup, so an answer is never kept for a newer state than it saw (the
            // lookups check the store; an answer kept under an older revision is never found).
            let revision = probe == nil ? 0 : cache.lastSeenRevision()
            if !legacyCaches.isEmpty, let legacy = try legacyUser(forSilent: parameters.account) {
                // Found only in a legacy (ADAL) cache: the silent upgrade.
                return try await legacySilent(parameters, user: legacy, scopes: scopes, correlationID: correlation.string)
            }
            // The tenant or the cloud's aliases may need a request here (a tenant domain, a cloud
            // only instance discovery knows); `silentLookup` answered the other cases without one.
            let requestAuthority = parameters.authority ?? configuration.authority
            let target = try await silentTarget(for: requestAuthority, account: parameters.account, correlationID: correlation.string)
            let environments = try await self.environments(for: target.authority, correlationID: correlation.string)
            lookup = try silentLookup(
                parameters, scopes: request, revision: revision,
                keepsHit: probe != nil && Self.keepsHit(authority: requestAuthority, account: parameters.account),
                target: target, environments: environments)
            if let served = try servedFromCache(lookup, parameters, correlation: correlation, probe: probe) { return served }
        }
        let account = parameters.account
        let (authority, realm, environments) = (lookup.authority, lookup.realm, lookup.environments)
        let cached = lookup.found?.entry
        let decision = SilentDecision.decide(
            expiresOn: cached?.expiresOn, refreshOn: cached?.refreshOn, now: configuration.clock.now(),
            expirationBuffer: configuration.tokenExpirationBuffer,
            forceRefresh: parameters.forceRefresh || parameters.claims != nil)
        let claims = try Self.claimsParameter(requested: parameters.claims, capabilities: configuration.clientCapabilities)
        var requestParameters = parameters.extraQueryParameters
        if let claims { requestParameters["claims"] = claims }
        let extraParameters = requestParameters

        // Every input that changes the request is in the key, so calls that differ never share a result.
        let key = RefreshCoordinator.Key(
            kind: "silent", clientID: configuration.clientID, authority: authority.url.absoluteString.lowercasedIfNeeded(),
            account: account.identifier.lowercasedIfNeeded(), scopes: scopes.normalized, forceRefresh: parameters.forceRefresh,
            extraParameters: extraParameters)
        let correlationID = correlation.string
        let mayUseNewerToken = !parameters.forceRefresh && parameters.claims == nil
        let operation: @Sendable () async -> Result<AuthenticationResult, MSALError> = { [self] in
            // Another caller's refresh may have finished between this call's lookup and now (it
            // no longer holds the key): a token newer than the one this call saw, good to serve,
            // is the answer, and no second refresh goes out.
            if mayUseNewerToken,
               let newer = try? cachedAccessToken(account: account, environments: environments, realm: realm, scopes: request),
               newer.secret != cached?.secret,
               SilentDecision.decide(
                   expiresOn: newer.expiresOn, refreshOn: newer.refreshOn, now: configuration.clock.now(),
                   expirationBuffer: configuration.tokenExpirationBuffer, forceRefresh: false) == .useCached,
               let result = try? cachedResult(newer, account: account, authority: authority, correlationID: correlationID) {
                return .success(result)
            }
            return await refreshResult(
                account: account, authority: authority, realm: realm, scopes: scopes,
                extraParameters: extraParameters, correlationID: correlationID)
        }
        let refreshed: Result<AuthenticationResult, MSALError>
        do {
            refreshed = .success(try await refreshes.run(key: key, operation))
        } catch {
            refreshed = .failure(error)
        }
        switch refreshed {
        case .success(let result):
            return result
        case .failure(let error):
            if decision == .refreshOrUseCached, let cached {
                // MSAL: a failed proactive refresh, for whatever reason, leaves the valid token usable.
                logger.warning("proactive refresh failed (\(error.codeString)); serving the cached token")
                return try cachedResult(cached, account: account, authority: authority, correlationID: correlationID)
            }
            if configuration.extendedLifetimeEnabled, Self.isOutage(error), let cached,
               let extended = cached.extendedExpiresOn, extended > configuration.clock.now() {
                logger.warning("the provider is unavailable (\(error.codeString)); serving the cached token within its extended lifetime")
                return try cachedResult(cached, account: account, authority: authority, correlationID: correlationID, isExtendedLifetimeToken: true)
            }
            throw error
        }
    }

    /// What a silent request finds before it decides whether to refresh: the authority and realm it
    /// targets, the cloud's aliases, and the cached token with the revision it was found at.
    struct SilentLookup {
        /// The cache revision read before the lookups (0 when no answer is to be kept).
        let revision: UInt64
        /// Whether a cache hit may be kept by ``silentHits`` (``keepsHit(authority:account:)`` of the
        /// authority the request names); `false` when nothing is offered (no probe).
        let keepsHit: Bool
        let authority: Authority
        let realm: String
        let environments: [String]
        let found: (entry: AccessTokenEntry, revision: UInt64)?
    }

    /// The lookup of a silent request when it needs no request and no `await`: the authority's
    /// tenant and the cloud's aliases are known (``silentTargetWithoutDiscovery(for:account:correlationID:)``,
    /// ``knownEnvironments(for:)``) and no legacy cache is configured. A cache hit is then answered
    /// without entering an async function of its own.
    /// - Parameter current: the cache's revision, just read by ``TokenCache/revisionWithoutWaiting()``
    ///   (the lookups then do not check the store again).
    /// - Returns: the lookup, or `nil` when ``silent(_:scopes:correlation:probe:lookup:)`` must do it.
    /// - Throws: what those and ``cachedAccessTokenAndRevision(account:environments:realm:scopes:)`` throw.
    func silentLookup(
        _ parameters: SilentTokenParameters, scopes request: RequestScopes, correlation: RequestCorrelationID, probe: SilentHitMemo.Probe?,
        revision current: UInt64
    ) throws(MSALError) -> SilentLookup? {
        guard legacyCaches.isEmpty else { return nil }
        // Read before any lookup (see `silent`).
        let revision = probe == nil ? 0 : current
        let requestAuthority = parameters.authority ?? configuration.authority
        guard let target = try silentTargetWithoutDiscovery(
                  for: requestAuthority, account: parameters.account, correlationID: correlation.string),
              let environments = knownEnvironments(for: target.authority) else { return nil }
        return try silentLookup(
            parameters, scopes: request, revision: revision,
            keepsHit: probe != nil && Self.keepsHit(authority: requestAuthority, account: parameters.account),
            target: target, environments: environments, checkingStore: false)
    }

    /// The lookup once the request's target and the cloud's aliases are known: the cached token
    /// under the first alias that has one.
    /// - Throws: what ``cachedAccessTokenAndRevision(account:environments:realm:scopes:)`` throws.
    private func silentLookup(
        _ parameters: SilentTokenParameters, scopes request: RequestScopes, revision: UInt64, keepsHit: Bool,
        target: (authority: Authority, realm: String), environments: [String], checkingStore: Bool = true
    ) throws(MSALError) -> SilentLookup {
        let found = try cachedAccessTokenAndRevision(
            account: parameters.account, environments: environments, realm: target.realm, scopes: request, checkingStore: checkingStore)
        return SilentLookup(
            revision: revision, keepsHit: keepsHit, authority: target.authority, realm: target.realm,
            environments: environments, found: found)
    }

    /// The answer of a silent request from its lookup when the cached token is to be served now
    /// (``SilentDecision``), offered to ``silentHits`` when it may be kept; `nil` when the request
    /// must refresh (no token, expired or due, a forced refresh or a claims request).
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the account cannot be read.
    func servedFromCache(
        _ lookup: SilentLookup, _ parameters: SilentTokenParameters, correlation: RequestCorrelationID, probe: SilentHitMemo.Probe?
    ) throws(MSALError) -> AuthenticationResult? {
        guard let found = lookup.found else { return nil }
        let cached = found.entry
        let decision = hitDecision(
            expiresOn: cached.expiresOn, refreshOn: cached.refreshOn, forceRefresh: parameters.forceRefresh || parameters.claims != nil)
        guard decision == .useCached else { return nil }
        let account = parameters.account
        logger.debug("silent request served from the cache for \(pii: account.identifier)")
        let (result, accountIsCached) = try cachedResultAndSource(
            cached, account: account, authority: lookup.authority, correlation: correlation, revision: found.revision)
        if let probe, accountIsCached, lookup.keepsHit {
            silentHits.keep(
                SilentHitMemo.Hit(result: result, expiresOn: cached.expiresOn, refreshOn: cached.refreshOn),
                for: probe, revision: lookup.revision)
        }
        return result
    }

    /// ``SilentDecision/decide(expiresOn:refreshOn:now:expirationBuffer:forceRefresh:)`` for a
    /// token found in the cache, with the clock's cheap reading (``WallClock/approximateNow()``, a
    /// few milliseconds behind at most), decided again with ``WallClock/now()`` when the token's
    /// expiry less the buffer, or its refresh instant, is within a second of that reading: only a
    /// reading that is behind could serve a token `now()` would refresh, and only at such an instant.
    /// - Returns: the decision `now()` gives.
    func hitDecision(expiresOn: Date, refreshOn: Date?, forceRefresh: Bool) -> SilentDecision {
        let buffer = configuration.tokenExpirationBuffer
        let approximate = configuration.clock.approximateNow()
        let decision = SilentDecision.decide(
            expiresOn: expiresOn, refreshOn: refreshOn, now: approximate, expirationBuffer: buffer, forceRefresh: forceRefresh)
        guard decision != .refresh else { return decision }
        let nearExpiry = expiresOn.timeIntervalSince(approximate) - buffer <= Self.approximateClockMargin
        let nearRefresh = refreshOn.map { $0.timeIntervalSince(approximate) <= Self.approximateClockMargin } ?? false
        guard nearExpiry || nearRefresh else { return decision }
        return SilentDecision.decide(
            expiresOn: expiresOn, refreshOn: refreshOn, now: configuration.clock.now(), expirationBuffer: buffer, forceRefresh: forceRefresh)
    }

    /// How close to a token's expiry (less the buffer) or refresh instant ``hitDecision(expiresOn:refreshOn:forceRefresh:)``
    /// reads the exact clock: 1 s, against a coarse clock at most a few timer ticks (4 ms each) behind.
    static let approximateClockMargin: TimeInterval = 1

    /// ``refresh(account:authority:realm:scopes:extraParameters:correlationID:)`` as a `Result`,
    /// the shape ``RefreshCoordinator`` shares between waiting callers.
    private func refreshResult(
        account: Account, authority: Authority, realm: String, scopes: ScopeSet,
        extraParameters: [String: String], correlationID: String
    ) async -> Result<AuthenticationResult, MSALError> {
        do {
            return .success(try await refresh(
                account: account, authority: authority, realm: realm, scopes: scopes,
                extraParameters: extraParameters, correlationID: correlationID))
        } catch {
            return .failure(error)
        }
    }

    /// Redeems the account's refresh token and caches what comes back.
    private func refresh(
        account: Account, authority: Authority, realm: String, scopes: ScopeSet,
        extraParameters: [String: String], correlationID: String
    ) async throws(MSALError) -> AuthenticationResult {
        let environment = authority.environment
        var candidates: [RefreshTokenEntry] = []
        for alias in try await environments(for: authority, correlationID: correlationID) where candidates.isEmpty {
            candidates = try refreshTokenCandidates(homeAccountID: account.identifier, environment: alias)
        }
        guard !candidates.isEmpty else {
            throw MSALError(
                .interactionRequired,
                message: "No refresh token is cached for this account and client; sign in interactively.",
                correlationID: correlationID)
        }
        let openID = try await discovery.configuration(for: authority, correlationID: correlationID)
        let key = ThrottleKey(clientID: configuration.clientID, authority: authority, scopes: scopes, homeAccountId: account.identifier)
        let client = self.client
        let clientID = configuration.clientID
        let parameters = protocolParameters(for: authority).merging(extraParameters) { _, app in app }
        var response: TokenResponse?
        var lastError: MSALError?
        for (index, refreshToken) in candidates.enumerated() {
            logger.info("redeeming the \(refreshToken.familyID == nil ? "app's" : "family") refresh token at \(environment), correlation \(correlationID)")
            do {
                // Throttled keys (429/503 Retry-After, 5xx, a refresh token just rejected) fail here
                // without a request; failures are recorded for the next call.
                response = try await throttler.perform(key, grantType: "refresh_token") { () async throws(MSALError) -> TokenResponse in
                    try await client.redeemRefreshToken(
                        tokenEndpoint: openID.tokenEndpoint, clientID: clientID,
                        refreshToken: refreshToken.secret, scopes: scopes.union(ScopeSet.reservedOIDCScopes),
                        extraParameters: parameters, correlationID: correlationID)
                }
                break
            } catch {
                lastError = error
                if error.oauthError == "invalid_grant", error.subError == "bad_token" {
                    // The provider says this refresh token is unusable: forget it (as MSAL for iOS/macOS does).
                    try? cache.remove([CacheEntryRemoval(kind: .refreshToken, key: refreshToken.key)])
                }
                guard refreshToken.familyID != nil, index < candidates.count - 1 || error.subError == "client_mismatch" else { break }
                if error.subError == "client_mismatch" {
                    // The app is not (or no longer) in the family: remember it, as MSAL does, and
                    // use its own refresh token from now on.
                    try? cache.save(accessToken: nil, refreshToken: nil, idToken: nil, account: nil,
                                    appMetadata: AppMetadataEntry(clientID: clientID, environment: environment, familyID: ""))
                }
                // A family refresh token failed: the app's own refresh token is the fallback.
                await throttler.clear(homeAccountId: account.identifier)
            }
        }
        guard let response else {
            throw Self.refreshFailure(lastError ?? MSALError.internal(.unexpected, "No refresh was attempted."), correlationID: correlationID)
        }
        return try await handle(
            response,
            context: ResponseContext(
                authority: authority, openID: openID, requestedScopes: scopes, correlationID: correlationID,
                expectedHomeAccountID: account.identifier, knownRealm: realm, accountSource: nil))
    }

    /// `scopes` validated (``ScopeSet/validatedRequest(_:)``) as a ``RequestScopes``, kept per array:
    /// found in ``recentRequestScopes`` when the same array (or an equal one in its slot) came
    /// recently, else in ``requestScopes``, else validated and kept.
    /// - Throws: what ``ScopeSet/validatedRequest(_:)`` throws; nothing is kept then.
    func requestScopes(for scopes: [String]) throws(MSALError) -> RequestedScopes {
        // The address's bits mixed (Fibonacci hashing: arrays allocated one after another are a
        // fixed stride apart, which the low bits alone would map to a few slots), top 8 bits kept.
        let address = UInt(bitPattern: scopes.withUnsafeBufferPointer { $0.baseAddress })
        let slot = Int(truncatingIfNeeded: (UInt64(address) &* 0x9E37_79B9_7F4A_7C15) >> 56)
        // The same array (the common case: an app passes one array again and again) is recognized
        // under the lock by its storage, without copying the slot out; another array is compared
        // after the lock, byte for byte: an array only canonically equivalent to a valid one (a
        // Kelvin sign for a `K`) must be validated, and refused, on its own.
        let kept = recentRequestScopes.withLock { slots -> (sameArray: RequestedScopes?, other: (scopes: [String], requested: RequestedScopes)?) in
            guard let recent = slots[slot] else { return (nil, nil) }
            if recent.scopes.withUnsafeBufferPointer({ $0.baseAddress }) == scopes.withUnsafeBufferPointer({ $0.baseAddress }),
               recent.scopes.count == scopes.count {
                return (recent.requested, nil)
            }
            return (nil, recent)
        }
        if let requested = kept.sameArray { return requested }
        if let recent = kept.other, recent.scopes.hasSameUTF8(as: scopes) { return recent.requested }
        let requested = try requestScopes.value(for: ExactStrings(scopes)) { () throws(MSALError) -> RequestedScopes in
            RequestedScopes(scopes: RequestScopes(try ScopeSet.validatedRequest(scopes)), arrayHash: scopes.hashValue)
        }
        recentRequestScopes.withLock { $0[slot] = (scopes, requested) }
        return requested
    }

    /// The cache environments of an authority: its own host first, then the other aliases of its
    /// cloud (Entra instance metadata: built in for the well-known clouds, else instance discovery,
    /// which also validates the host). Other authority kinds and loopback hosts have only their own.
    /// - Throws: `.internal(.failedAuthorityValidation)` for an Entra host Entra does not know.
    func environments(for authority: Authority, correlationID: @autoclosure () -> String) async throws(MSALError) -> [String] {
        if let known = knownEnvironments(for: authority) { return known }
        let environment = authority.environment
        let metadata = try await instanceDiscovery.metadata(for: authority, correlationID: correlationID())
        return [environment] + metadata.aliases.filter { $0.lowercased() != environment.lowercased() }
    }

    /// ``environments(for:correlationID:)`` when no request is needed (a synchronous call, as a
    /// cache hit wants): other kinds than Entra ID and loopback hosts, and the well-known clouds.
    /// - Returns: the environments, or `nil` when only instance discovery can tell.
    func knownEnvironments(for authority: Authority) -> [String]? {
        guard authority.type == .aad, !authority.isLoopback else { return [authority.environment] }
        // The last cloud asked for, compared in place (the common case: one cloud for every call).
        if let environments = lastKnownCloud.withLock({ $0 != nil && authority.hasEnvironment($0!.host) ? $0!.environments : nil }) {
            return environments
        }
        let environment = authority.environment
        if let known = knownCloudEnvironments.value(for: environment) {
            lastKnownCloud.withLock { $0 = (environment, known) }
            return known
        }
        guard let known = InstanceMetadata.known(host: environment) else { return nil }
        let environments = [environment] + known.aliases.filter { $0.lowercased() != environment.lowercased() }
        knownCloudEnvironments.keep(environments, for: environment)
        return environments
    }

    /// The cached access token for the account, tenant and scopes, under the first of the cloud's
    /// `environments` (aliases) that has one; expiry is not checked.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    private func cachedAccessToken(
        account: Account, environments: [String], realm: String, scopes: RequestScopes
    ) throws(MSALError) -> AccessTokenEntry? {
        try cachedAccessTokenAndRevision(account: account, environments: environments, realm: realm, scopes: scopes)?.entry
    }

    /// ``cachedAccessToken(account:environments:realm:scopes:)`` with the cache revision it was found at.
    /// - Parameter checkingStore: `false` skips the store's change stamp (the caller just checked it).
    private func cachedAccessTokenAndRevision(
        account: Account, environments: [String], realm: String, scopes: RequestScopes, checkingStore: Bool = true
    ) throws(MSALError) -> (entry: AccessTokenEntry, revision: UInt64)? {
        for alias in environments {
            // An account this application assembled keeps its access tokens as the cache held
            // them then: while the cache has not changed, they are read directly.
            if let partitions = account.tokenPartitions as? AccountTokenPartitions, account.hasEnvironment(equalToIgnoringCase: alias) {
                switch try cache.accessTokenAndRevision(
                    in: partitions, realm: realm, clientID: configuration.clientID, scopes: scopes, checkingStore: checkingStore) {
                case .found(let entry, let revision): return (entry, revision)
                case .notFound: continue
                case .stale: break
                }
            }
            if let found = try cache.accessTokenAndRevision(
                homeAccountID: account.identifier, environment: alias, realm: realm, clientID: configuration.clientID, scopes: scopes,
                checkingStore: checkingStore) {
                return found
            }
        }
        return nil
    }

    /// The refresh tokens to try for an account, in order: the family refresh token (FOCI, family
    /// `1`) first when the app is in the family or its membership is unknown (no app metadata yet),
    /// then the app's own. Source: MSAL for iOS/macOS `MSIDDefaultTokenCacheAccessor` family lookup.
    func refreshTokenCandidates(homeAccountID: String, environment: String) throws(MSALError) -> [RefreshTokenEntry] {
        try cache.refreshTokenCandidates(homeAccountID: homeAccountID, environment: environment, clientID: configuration.clientID)
    }

    /// A refresh the provider refused is `interactionRequired`: any OAuth error in a 4xx answer but
    /// `invalid_scope`, `invalid_client` and `unauthorized_client` (which stay `serverError`: the
    /// app's registration is at fault), with the `protection_policy_required` suberror as
    /// `serverProtectionPoliciesRequired`; or a 400/401 whose body is empty or not JSON (Glewlwyd
    /// answers a revoked refresh token with HTTP 400 and an empty body).
    /// OAuth errors about the app's registration rather than the user, with their internal codes.
    static let registrationErrors: [String: MSALError.InternalCode] = [
        "invalid_scope": .invalidScope, "invalid_client": .invalidClient, "unauthorized_client": .unauthorizedClient,
    ]

    static func refreshFailure(_ error: MSALError, correlationID: String) -> MSALError {
        // Entra's error model (MSAL for iOS/macOS, MSAL.NET): a refresh answered with an OAuth error
        // in a 4xx means the user must act, except for errors of the app's own registration.
        if let oauthError = error.oauthError, let status = error.httpStatusCode, (400..<500).contains(status), status != 429 {
            var mapped = error
            if error.subError == "protection_policy_required" {
                mapped.code = .serverProtectionPoliciesRequired
            } else if let internalCode = registrationErrors[oauthError] {
                mapped.internalCode = internalCode
                return mapped.filling(correlationID: correlationID)
            } else {
                mapped.code = .interactionRequired
            }
            mapped.internalCode = nil
            return mapped.filling(correlationID: correlationID)
        }
        if error.code == .serverError, error.internalCode == .invalidResponse,
           let status = error.httpStatusCode, status == 400 || status == 401 {
            var mapped = error
            mapped.code = .interactionRequired
            mapped.internalCode = nil
            mapped.message = "The identity provider rejected the refresh token (\(error.message)); sign in interactively."
            if mapped.correlationID == nil { mapped.correlationID = correlationID }
            return mapped
        }
        return error
    }

    /// The authority and realm a silent request for `account` uses. On Entra ID, `common`,
    /// `organizations` and `consumers` become the account's home tenant; a tenant domain is mapped
    /// to its tenant ID through the tenant's discovery document.
    private func silentTarget(
        for authority: Authority, account: Account, correlationID: @autoclosure () -> String
    ) async throws(MSALError) -> (authority: Authority, realm: String) {
        if let target = try silentTargetWithoutDiscovery(for: authority, account: account, correlationID: correlationID()) { return target }
        // A tenant domain (the only case left).
        let openID = try await discovery.configuration(for: authority, correlationID: correlationID())
        guard let tenant = Self.tenantSegment(ofIssuer: openID.issuer) else {
            throw MSALError(.serverError, internalCode: .invalidResponse, message: "The discovery document's issuer does not name a tenant.", correlationID: correlationID())
        }
        return (authority.withTenant(tenant), tenant)
    }

    /// ``silentTarget(for:account:correlationID:)`` when no request is needed (a synchronous call,
    /// as a cache hit wants): every authority but an Entra ID tenant domain.
    /// - Returns: the authority and realm, or `nil` for a tenant domain (its discovery document names its tenant).
    /// - Throws: `.interactionRequired` when the account has no home tenant and one is needed.
    private func silentTargetWithoutDiscovery(
        for authority: Authority, account: Account, correlationID: @autoclosure () -> String
    ) throws(MSALError) -> (authority: Authority, realm: String)? {
        switch (authority.type, authority.tenant) {
        case (.aad, .tenantID(let id)?):
            return (authority, id)
        case (.aad, .domain?):
            return nil
        case (.aad, _):
            let home = account.homeAccountID?.tenantID
                ?? account.tenantProfiles.first(where: \.isHomeTenant)?.tenantID
            guard let home else {
                throw MSALError(.interactionRequired, message: "The account has no home tenant; sign in interactively.", correlationID: correlationID())
            }
            return (authority.withTenant(home), home)
        case (.b2c, _):
            // One B2C authority is one tenant and one policy; the cache realm is the tenant ID
            // (the `utid` of the account's home account ID), whatever name the URL uses.
            let home = account.homeAccountID?.tenantID
                ?? account.tenantProfiles.first(where: \.isHomeTenant)?.tenantID
            guard let home else {
                throw MSALError(.interactionRequired, message: "The account has no B2C tenant; sign in interactively.", correlationID: correlationID())
            }
            return (authority, home)
        case (.adfs, _):
            return (authority, Self.adfsRealm)
        case (.oidc, _):
            return (authority, Self.realm(forOIDC: authority))
        }
    }

    /// The tenant segment of an Entra issuer `https://host/<tenant>/v2.0`, unless it is the `{tenantid}` template.
    static func tenantSegment(ofIssuer issuer: String) -> String? {
        guard let url = URL(string: issuer) else { return nil }
        let segments = url.path.split(separator: "/")
        guard let first = segments.first, first != "{tenantid}", !first.contains("{") else { return nil }
        return String(first)
    }

    /// The cache realm of a generic OpenID Connect authority: the issuer's path without slashes
    /// (empty for an issuer at the root), so two issuers on one host do not share entries.
    static func realm(forOIDC authority: Authority) -> String {
        authority.url.path.split(separator: "/").joined(separator: "/")
    }

    /// The cache realm of AD FS tokens: `adfs`, as MSAL for Python and MSAL.NET write it (the
    /// authority's path segment; AD FS has no tenants).
    static let adfsRealm = "adfs"

    /// Whether requests to this kind of authority carry `client_info=1`: Entra ID and B2C (both
    /// answer with `uid` and `utid`, as MSAL for iOS/macOS asks them); not AD FS or other providers.
    static func requestsClientInfo(_ type: AuthorityType) -> Bool {
        type == .aad || type == .b2c
    }

    /// Parameters every token request of this protocol carries: `client_info=1` on Entra ID and B2C.
    func protocolParameters(for authority: Authority) -> [String: String] {
        Self.requestsClientInfo(authority.type) ? ["client_info": "1"] : [:]
    }

    /// The result for a cache hit. The account comes fresh from the cache; the ID token and its
    /// claims are those of the account's profile in the token's tenant (decoded once, there).
    private func cachedResult(
        _ entry: AccessTokenEntry, account: Account, authority: Authority, correlationID: String, isExtendedLifetimeToken: Bool = false
    ) throws(MSALError) -> AuthenticationResult {
        try cachedResultAndSource(
            entry, account: account, authority: authority, correlation: .given(correlationID),
            isExtendedLifetimeToken: isExtendedLifetimeToken).result
    }

    /// ``cachedResult(_:account:authority:correlationID:isExtendedLifetimeToken:)``, and whether its
    /// account came from the cache (`false`: the caller's account, which the cache does not hold).
    /// - Parameter revision: the cache revision `entry` was found at, when known: a caller's account
    ///   that this instance assembled at that revision, for the entry's home account ID and
    ///   environment, is the account of that state, used as it is.
    private func cachedResultAndSource(
        _ entry: AccessTokenEntry, account: Account, authority: Authority, correlation: RequestCorrelationID,
        isExtendedLifetimeToken: Bool = false, revision: UInt64? = nil
    ) throws(MSALError) -> (result: AuthenticationResult, accountIsCached: Bool) {
        // The entry was looked up by the caller's account identifier; its environment may be
        // another alias of the cloud, whose account the caller's is not.
        if let revision, let origin = account.origin, origin.application == instanceNumber, origin.revision == revision,
           entry.hasEnvironment(ofAccount: account) {
            // The caller's account is used as given (no copy of it held in between).
            return (AuthenticationResult(
                cached: entry, account: account, correlation: correlation, authority: authority,
                isExtendedLifetimeToken: isExtendedLifetimeToken), true)
        }
        // The entry comes from a lookup that just checked the store: the account of the same state.
        let found = try self.account(homeAccountID: entry.homeAccountID, environment: entry.environment, checkingStore: false)
        return (AuthenticationResult(
            cached: entry, account: found ?? account, correlation: correlation, authority: authority,
            isExtendedLifetimeToken: isExtendedLifetimeToken), found != nil)
    }

    /// Whether the provider was unavailable rather than refusing: a 5xx, a timeout, a network error.
    static func isOutage(_ error: MSALError) -> Bool {
        if error.code == .serverError, let status = error.httpStatusCode, status >= 500 { return true }
        return error.internalCode == .timeout || error.internalCode == .networkError
    }

    /// The `claims` request parameter: the app's claims request with the client capabilities
    /// merged in as `access_token.xms_cc.values` (MSAL for iOS/macOS), or `nil` when neither is set.
    /// - Throws: `.internal(.invalidParameter)` when `requested` is not a JSON object.
    static func claimsParameter(requested: String?, capabilities: [String]) throws(MSALError) -> String? {
        guard requested != nil || !capabilities.isEmpty else { return nil }
        var object: [String: JSONValue] = [:]
        if let requested {
            guard let parsed = try? JSONDecoder().decode([String: JSONValue].self, from: Data(requested.utf8)) else {
                throw .internal(.invalidParameter, "The claims request is not a JSON object (OpenID Connect Core §5.5).")
            }
            object = parsed
        }
        if !capabilities.isEmpty {
            var accessToken = object["access_token"]?.objectValue ?? [:]
            accessToken["xms_cc"] = .object(["values": .array(capabilities.map(JSONValue.string))])
            object["access_token"] = .object(accessToken)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(object) else {
            throw .internal(.unexpected, "The claims request could not be encoded.")
        }
        return String(decoding: data, as: UTF8.self)
    }

    // MARK: - Accounts

    /// Every account this application holds tokens for in the cache: a refresh token (its own or
    /// its family's, FOCI) or an ID token issued to it, each with its tenant profiles. Shared stores
    /// may hold other apps' accounts, which are not returned; an account whose refresh token was
    /// rejected stays listed (and removable) while its other tokens are cached.
    ///
    /// Accounts found only in ``PublicClientApplicationConfiguration/legacyCaches`` are not listed:
    /// look them up with ``account(forUsername:)``.
    ///
    /// - Returns: the accounts, sorted by username then identifier.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func allAccounts() throws(MSALError) -> [Account] {
        var groups: [String: [AccountEntry]] = [:]
        for entry in try cache.accounts() {
            groups[entry.homeAccountID.lowercased() + "|" + entry.environment.lowercased(), default: []].append(entry)
        }
        var accounts: [Account] = []
        for entries in groups.values {
            let first = entries[0]
            let hasRefreshToken = try !refreshTokenCandidates(homeAccountID: first.homeAccountID, environment: first.environment).isEmpty
            var hasIDToken = false
            for entry in entries where !hasRefreshToken && !hasIDToken {
                hasIDToken = try cache.idToken(homeAccountID: entry.homeAccountID, environment: entry.environment, realm: entry.realm, clientID: configuration.clientID) != nil
            }
            // Assembled once per cache state and kept, as for a cache hit.
            guard hasRefreshToken || hasIDToken,
                  let assembled = try account(homeAccountID: first.homeAccountID, environment: first.environment) else { continue }
            accounts.append(assembled)
        }
        return accounts.sorted { ($0.username ?? "", $0.identifier) < ($1.username ?? "", $1.identifier) }
    }

    /// The account whose identifier (home account ID) matches, ignoring case.
    /// - Returns: the account, or `nil` when no cached account of this app has that identifier.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    public func account(forIdentifier identifier: String) throws(MSALError) -> Account? {
        try allAccounts().first { $0.identifier.lowercased() == identifier.lowercased() }
    }

    /// The account whose username matches, ignoring case, in the MSAL cache and in the legacy caches
    /// of ``PublicClientApplicationConfiguration/legacyCaches``: the migration path for apps that
    /// kept ADAL user IDs (MSAL for iOS/macOS `accountForUsername:`, which reads both MSAL's and
    /// ADAL's caches).
    ///
    /// An account in both (same username, same cloud, no contradicting object ID) is the MSAL one.
    /// An account only in a legacy cache has an identifier that is not an MSAL home account ID
    /// (opaque; never store it): pass the account to ``acquireTokenSilent(with:)``, which upgrades
    /// it, and keep the result's ``AuthenticationResult/account`` identifier from then on.
    /// - Returns: the account, or `nil` when none matches.
    /// - Throws: ``MSALError`` `.internal(.ambiguousAccount)` when two different accounts have that
    ///   username: accounts of different clouds, an MSAL account and a legacy entry whose object ID
    ///   in the same tenant differs, or legacy entries that disagree on the object ID in one tenant
    ///   (a user deleted and created again); `.internal(.cacheError)` when the MSAL store cannot be
    ///   read. A legacy cache that cannot be read is logged and left out, never an error.
    public func account(forUsername username: String) throws(MSALError) -> Account? {
        let wanted = username.lowercased()
        let matches = try allAccounts().filter { $0.username?.lowercased() == wanted }
        var count = matches.count
        var legacyOnly: [LegacyUser] = []
        for user in legacyUsers() where user.userID.lowercased() == wanted {
            if user.hasObjectIDConflict {
                count += 2
            } else if !matches.contains(where: { user.isSameAccount(as: $0) }) {
                legacyOnly.append(user)
                count += 1
            }
        }
        guard count <= 1 else {
            throw .internal(.ambiguousAccount, "More than one account has this username (in the MSAL cache or the legacy ADAL caches); look the account up by its identifier, or sign in interactively.")
        }
        return matches.first ?? legacyOnly.first?.account
    }

    /// Removes the account's tokens for this application from the cache (access, refresh and ID
    /// tokens in every tenant) and its account entries when no other app still holds tokens for it.
    /// Nothing is sent to the provider. The ID tokens and `client_info` values the process keeps
    /// decoded (for every instance) are dropped, so none of the removed account's stays in memory.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be written.
    public func remove(account: Account) throws(MSALError) {
        try cache.removeAccount(homeAccountID: account.identifier, environment: account.environment, clientID: configuration.clientID)
        // Kept answers are stale now (the cache changed); drop them so no removed token stays in memory.
        silentHits.removeAll()
        // The same for decoded ID tokens and client_info: dropped for every account (they are
        // decoded again as needed), which is simpler than finding the removed account's.
        Self.sharedIDTokenClaims.removeAll()
        Self.sharedClientInfos.removeAll()
        logger.info("removed account \(pii: account.identifier)")
    }

    /// The account with its tenant profiles, as the cache holds it now. Assembled once per cache
    /// state (decoding each profile's ID token costs far more than a lookup) and kept by the cache
    /// until it changes.
    /// - Parameter checkingStore: `false` right after a lookup that checked the store (a cache hit).
    func account(homeAccountID: String, environment: String, checkingStore: Bool = true) throws(MSALError) -> Account? {
        let key = Self.accountKey(homeAccountID: homeAccountID, environment: environment)
        return try cache.derivedValue(for: key, checkingStore: checkingStore) { () throws(MSALError) -> Account? in
            // Read before the lookups, so the stamp is never newer than the state they see (an
            // account stamped with the current revision is then that state's account).
            let origin = AccountOrigin(application: instanceNumber, revision: cache.lastSeenRevision())
            let account: Account?
            if let kept = cache.keptHomeDerivedValue(for: key, homeAccountID: homeAccountID, environment: environment, as: Account?.self) {
                // No change touched the account's entries since it was assembled (the cache
                // changed for other accounts): the same profiles, with this state's access tokens.
                account = try kept.value.map { old throws(MSALError) in
                    let partitions = try cache.tokenPartitions(homeAccountID: homeAccountID, environment: environment, checkingStore: false)
                    return Account(
                        identifier: old.identifier, username: old.username, environment: old.environment,
                        tenantProfiles: old.tenantProfiles, origin: origin, tokenPartitions: partitions)
                }
            } else {
                let profiles = try cache.tenantProfiles(homeAccountID: homeAccountID, environment: environment, clientID: configuration.clientID)
                guard !profiles.isEmpty else { return nil }
                // Its access tokens, so the account's lookups go straight to them while the cache
                // stays at this state (the store was just checked).
                let partitions = try cache.tokenPartitions(homeAccountID: homeAccountID, environment: environment, checkingStore: false)
                account = makeAccount(profiles, origin: origin, tokenPartitions: partitions)
            }
            cache.keepHomeDerivedValue(account, for: key, homeAccountID: homeAccountID, environment: environment, revision: origin.revision)
            return account
        }
    }

    /// The key under which the cache keeps the assembled account (an `Account?`) of a home account
    /// in an environment (``account(homeAccountID:environment:checkingStore:)``).
    static func accountKey(homeAccountID: String, environment: String) -> DerivedValueKey {
        DerivedValueKey(kind: "account", homeAccountID, environment)
    }

    /// The account right after a save that left the account's entries as they were and replaced
    /// at most its ID token in `realm`: `previous` (the account kept at the revision the save was
    /// applied on) with that tenant profile's claims replaced by `claims`, stamped with the
    /// revision the save made and holding the access token partitions of that state. It is what
    /// ``account(homeAccountID:environment:checkingStore:)`` would assemble at that revision
    /// (every other profile, the username and the identifiers come from entries the save did not
    /// touch), without reading every profile and its ID token again; it is kept for later calls.
    /// - Parameters:
    ///   - previous: ``TokenCache/keptHomeDerivedValue(for:homeAccountID:environment:as:)`` for `key`, read before the save.
    ///   - saved: what the save did.
    ///   - key: ``accountKey(homeAccountID:environment:)`` of the account.
    ///   - realm: the realm of the saved ID token.
    ///   - claims: the saved ID token's claims; `nil` when the save wrote no ID token.
    /// - Returns: the account, or `nil` when it must be assembled: nothing was kept at the save's
    ///   revision, another writer changed the store, an account entry changed, or the account has
    ///   no single profile in `realm`.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` when the store cannot be read.
    func account(
        _ previous: (value: Account?, revision: UInt64)?, after saved: SaveOutcome, key: DerivedValueKey, realm: String,
        claims: IDTokenClaims?
    ) throws(MSALError) -> Account? {
        guard let previous, let old = previous.value, let revisions = saved.revisions,
              revisions.before == previous.revision, saved.accountUnchanged else { return nil }
        var profiles = old.tenantProfiles
        if let claims {
            // The index keys profiles by the lowercased realm: so does this.
            let lowercasedRealm = realm.lowercasedIfNeeded()
            let matching = profiles.indices.filter { profiles[$0].tenantID.lowercasedIfNeeded() == lowercasedRealm }
            guard matching.count == 1, let index = matching.first else { return nil }
            let profile = profiles[index]
            profiles[index] = TenantProfile(
                identifier: profile.identifier, tenantID: profile.tenantID, environment: profile.environment,
                isHomeTenant: profile.isHomeTenant, claims: claims)
        }
        let partitions = try cache.tokenPartitions(homeAccountID: key.first, environment: key.second, checkingStore: false)
        guard partitions.revision == revisions.after else { return nil }
        let account = Account(
            identifier: old.identifier, username: old.username, environment: old.environment, tenantProfiles: profiles,
            origin: AccountOrigin(application: instanceNumber, revision: revisions.after), tokenPartitions: partitions)
        cache.keepHomeDerivedValue(Optional(account), for: key, homeAccountID: key.first, environment: key.second, revision: revisions.after)
        return account
    }

    /// The claims of an ID token, decoded once per JWT (kept in ``sharedIDTokenClaims``); `nil` when it
    /// does not decode.
    static func decodedClaims(_ jwt: String) -> IDTokenClaims? {
        try? sharedIDTokenClaims.value(for: JWTKey(jwt: jwt)) { () throws(MSALError) in try IDTokenClaims(jwt: jwt) }
    }

    /// The claims of an assembled profile's ID token, decoded when the app first reads them: those
    /// kept in ``sharedIDTokenClaims`` when there, else decoded for this profile alone. Nothing is
    /// added to the shared table, so a profile read after ``remove(account:)`` emptied it does not
    /// put a removed account's ID token back into memory the whole process shares.
    static func profileClaims(_ jwt: String) -> IDTokenClaims? {
        sharedIDTokenClaims.value(for: JWTKey(jwt: jwt)) ?? (try? IDTokenClaims(jwt: jwt))
    }

    /// A token response's `client_info`, decoded once per distinct value (kept in ``sharedClientInfos``).
    /// - Throws: what ``ClientInfo/init(encoded:)`` throws; nothing is kept then.
    func decodedClientInfo(_ encoded: String) throws(MSALError) -> ClientInfo {
        try Self.sharedClientInfos.value(for: encoded) { () throws(MSALError) in try ClientInfo(encoded: encoded) }
    }

    /// The account of one home account's tenant profiles (account entries with their ID tokens).
    private func makeAccount(
        _ entries: [(account: AccountEntry, idToken: IDTokenEntry?)], origin: AccountOrigin, tokenPartitions: AccountTokenPartitions
    ) -> Account {
        let first = entries[0].account
        let homeTenant = Account.homeAccountParts(of: first.homeAccountID)?.tenantID
        var profiles: [TenantProfile] = []
        for (entry, idToken) in entries.sorted(by: { $0.account.realm < $1.account.realm }) {
            let isHome = homeTenant.map { $0.equalsIgnoringCase(entry.realm) } ?? true
            // The claims are decoded when first read: assembling an account (after every change
            // of the cache, for each of its tenants) decodes no ID token.
            if let idToken {
                profiles.append(TenantProfile(
                    identifier: entry.localAccountID, tenantID: entry.realm, environment: entry.environment,
                    isHomeTenant: isHome, idToken: idToken.secret, decode: Self.profileClaims))
            } else {
                profiles.append(TenantProfile(
                    identifier: entry.localAccountID, tenantID: entry.realm, environment: entry.environment,
                    isHomeTenant: isHome, claims: nil))
            }
        }
        let homeEntry = entries.first { entry in homeTenant.map { $0.equalsIgnoringCase(entry.account.realm) } ?? true }?.account
        let username = homeEntry?.username ?? entries.lazy.compactMap(\.account.username).first
        return Account(
            identifier: first.homeAccountID, username: username, environment: first.environment, tenantProfiles: profiles, origin: origin,
            tokenPartitions: tokenPartitions)
    }
}

extension MSALError {
    /// The error with `correlationID` set when it has none, so every error of a request names it.
    func filling(correlationID: String) -> MSALError {
        guard self.correlationID == nil else { return self }
        var error = self
        error.correlationID = correlationID
        return error
    }
}

/// What a token response's `scope` grants (less the reserved OIDC scopes) and its `target`.
struct GrantedScopes: Sendable {
    let scopes: ScopeSet
    let target: String

    init(_ scopes: ScopeSet) {
        self.scopes = scopes
        target = scopes.joined
    }
}

/// A scope array as a silent request gave it: its validated scopes (with the numbers the cache's
/// index gives them) and the array's `hashValue`, both computed once per array and kept.
struct RequestedScopes: Sendable {
    let scopes: RequestScopes
    let arrayHash: Int
}

/// An array of strings as a table key, equal only to an array of strings with the same UTF-8 bytes
/// (not to a canonically equivalent one, as `[String]` is): what a kept validation is found by.
struct ExactStrings: Hashable, Sendable {
    let strings: [String]

    init(_ strings: [String]) {
        self.strings = strings
    }

    static func == (lhs: ExactStrings, rhs: ExactStrings) -> Bool { lhs.strings.hasSameUTF8(as: rhs.strings) }

    /// Hashes as `[String]` does (canonically equivalent strings hash alike; equal bytes certainly do).
    func hash(into hasher: inout Hasher) {
        hasher.combine(strings)
    }
}
