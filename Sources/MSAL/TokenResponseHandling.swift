import Foundation
import MSALCache
import MSALCore
import MSALNetwork

/// What the handler of a token response needs to know about the request that produced it.
struct ResponseContext {
    /// The authority the request went to (for silent requests, already moved to the account's tenant).
    let authority: Authority
    /// Its discovery document (for the ID token's expected issuer).
    let openID: OpenIDConfiguration
    /// The scopes the app asked for, without the reserved OIDC scopes.
    let requestedScopes: ScopeSet
    let correlationID: String
    /// For a refresh: the account the refresh token belongs to; the response must be for it.
    let expectedHomeAccountID: String?
    /// For a refresh: the realm the request was made in.
    let knownRealm: String?
    /// How the account signed in (`device_code`, ...), for a new account entry; a refresh keeps
    /// the cached entry's value.
    let accountSource: String?
    /// The `nonce` sent in the authorization request; the ID token must carry it.
    var nonce: String? = nil
    /// For an interactive sign-in that named an account: the user who signs in must be it.
    var requiredHomeAccountID: String? = nil
}

extension PublicClientApplication {
    /// Validates a token response, writes its tokens to the cache in one atomic change, and builds
    /// the result: the common tail of every grant.
    ///
    /// Validation follows OpenID Connect Core §3.1.3.7 (`iss`, `aud`, `exp`); the home account ID is
    /// `<uid>.<utid>` from `client_info` on Entra ID and B2C (where `uid` carries the policy, so each
    /// policy is its own account) and the ID token's `sub` on AD FS and other providers (as MSAL for
    /// Python). The realm is the tenant on Entra ID, the `utid` on B2C, `adfs` on AD FS. A response
    /// without a refresh token or ID token keeps the cached ones. When the server granted fewer
    /// scopes than asked (and the request was not for `/.default`), the tokens are cached and
    /// `serverDeclinedScopes` is thrown, as MSAL for iOS/macOS does.
    func handle(_ response: TokenResponse, context: ResponseContext) async throws(MSALError) -> AuthenticationResult {
        let clientID = configuration.clientID
        let authority = context.authority
        let environment = authority.environment
        // Whole seconds: the stores keep epoch seconds (MSAL's unified schema), so the instance that
        // writes the entries and every instance that reads them back see the same instants.
        let now = Date(timeIntervalSince1970: configuration.clock.now().timeIntervalSince1970.rounded(.down))
        let correlationID = response.correlationID ?? context.correlationID

        func invalid(_ message: String) -> MSALError {
            MSALError(.serverError, internalCode: .invalidResponse, message: message, correlationID: correlationID)
        }

        var newClaims: IDTokenClaims?
        if let idToken = response.idToken {
            do {
                let claims = try IDTokenClaims(jwt: idToken)
                try claims.validate(
                    issuer: context.openID.issuer, clientID: clientID, nonce: context.nonce, now: now,
                    allowedClockSkew: configuration.allowedClockSkew)
                newClaims = claims
                // The account is assembled again right after the save, with this token's claims.
                Self.sharedIDTokenClaims.keep(claims, for: JWTKey(jwt: idToken))
            } catch {
                var failure = error
                failure.correlationID = correlationID
                throw failure
            }
        }

        // The home account ID and the tenant (realm) of these tokens.
        let homeAccountID: String
        var clientInfo: ClientInfo?
        switch authority.type {
        case .aad, .b2c:
            if let encoded = response.clientInfo {
                clientInfo = try decodedClientInfo(encoded)
                homeAccountID = clientInfo!.homeAccountID
            } else if let expected = context.expectedHomeAccountID {
                homeAccountID = expected
            } else {
                throw invalid("The \(authority.type == .b2c ? "B2C" : "Entra ID") token response has no client_info (it is requested with client_info=1).")
            }
        case .oidc, .adfs:
            if let subject = newClaims?.subject {
                homeAccountID = subject
            } else if let expected = context.expectedHomeAccountID {
                homeAccountID = expected
            } else {
                throw invalid("The token response has no ID token, so the account cannot be identified (is the openid scope allowed for this client?).")
            }
        }
        if let required = context.requiredHomeAccountID, required.lowercased() != homeAccountID.lowercased() {
            throw MSALError(
                .internal, internalCode: .mismatchedUser,
                message: "A different user signed in than the account the request named; nothing was cached.",
                correlationID: correlationID)
        }
        if let expected = context.expectedHomeAccountID, expected.lowercased() != homeAccountID.lowercased() {
            throw invalid("The identity provider returned tokens for a different account than the one whose refresh token was redeemed.")
        }
        let realm: String
        switch authority.type {
        case .aad:
            guard let tenant = newClaims?.tenantID ?? context.knownRealm ?? clientInfo?.uniqueTenantID else {
                throw invalid("The token response names no tenant (no tid claim and no client_info).")
            }
            realm = tenant
        case .b2c:
            // The tenant ID; a B2C authority may name the tenant by its domain.
            guard let tenant = clientInfo?.uniqueTenantID ?? context.knownRealm ?? newClaims?.tenantID else {
                throw invalid("The B2C token response names no tenant (no client_info and no tid claim).")
            }
            realm = tenant
        case .adfs:
            realm = Self.adfsRealm
        case .oidc:
            realm = Self.realm(forOIDC: authority)
        }

        // The reserved OIDC scopes are left out of the access token's target (MSAL for iOS/macOS does
        // the same): every token carries them, so keeping them would make every pair of tokens
        // "intersect" and each save would evict the account's other access tokens.
        let grantedScopes: GrantedScopes
        if let scope = response.scope {
            grantedScopes = self.grantedScopes.value(for: ExactStrings([scope])) {
                GrantedScopes(ScopeSet(spaceDelimited: scope).subtracting(ScopeSet.reservedOIDCScopes))
            }
        } else {
            grantedScopes = GrantedScopes(context.requestedScopes.subtracting(ScopeSet.reservedOIDCScopes))
        }
        let granted = grantedScopes.scopes
        let expiresIn = response.expiresIn ?? 3600
        let accessToken = AccessTokenEntry(
            homeAccountID: homeAccountID, environment: environment, clientID: clientID, realm: realm,
            target: grantedScopes.target, secret: response.accessToken, tokenType: response.tokenType,
            cachedAt: now, expiresOn: now.addingTimeInterval(expiresIn),
            extendedExpiresOn: now.addingTimeInterval(response.extendedExpiresIn ?? expiresIn),
            refreshOn: response.refreshIn.map { now.addingTimeInterval($0) })
        let refreshToken = response.refreshToken.map {
            RefreshTokenEntry(homeAccountID: homeAccountID, environment: environment, clientID: clientID, familyID: response.familyID, secret: $0)
        }
        let idToken = response.idToken.map {
            IDTokenEntry(homeAccountID: homeAccountID, environment: environment, clientID: clientID, realm: realm, secret: $0)
        }
        var accountEntry: AccountEntry?
        if let claims = newClaims {
            let localID: String = switch authority.type {
            case .aad, .b2c: claims.objectID ?? clientInfo?.uniqueID ?? claims.subject ?? homeAccountID
            case .oidc, .adfs: claims.subject ?? homeAccountID
            }
            accountEntry = AccountEntry(
                homeAccountID: homeAccountID, environment: environment, realm: realm, localAccountID: localID,
                username: claims.preferredUsername, authorityType: Self.cacheAuthorityType(authority.type),
                // nil for a refresh: the save keeps the cached entry's (how the account signed in).
                accountSource: context.accountSource,
                name: claims.name,
                givenName: claims.givenName, familyName: claims.familyName)
        } else if try cache.accountEntries(homeAccountID: homeAccountID, environment: environment).isEmpty {
            accountEntry = AccountEntry(
                homeAccountID: homeAccountID, environment: environment, realm: realm,
                localAccountID: clientInfo?.uniqueID ?? homeAccountID, username: nil,
                authorityType: Self.cacheAuthorityType(authority.type))
        }
        let appMetadata = AppMetadataEntry(clientID: clientID, environment: environment, familyID: response.familyID)
        // The account as kept before the save: after it, updated rather than assembled again.
        let accountKey = Self.accountKey(homeAccountID: homeAccountID, environment: environment)
        let previousAccount = cache.keptHomeDerivedValue(for: accountKey, homeAccountID: homeAccountID, environment: environment, as: Account?.self)
        let saved = try cache.save(
            accessToken: accessToken, accessTokenScopes: granted, refreshToken: refreshToken, idToken: idToken,
            account: accountEntry, appMetadata: appMetadata)
        if context.expectedHomeAccountID == nil {
            // A fresh sign-in lifts the "refresh token was rejected" throttle for the account.
            await throttler.clear(homeAccountId: homeAccountID)
        }

        var cachedIDToken = response.idToken
        if cachedIDToken == nil {
            cachedIDToken = try cache.idToken(homeAccountID: homeAccountID, environment: environment, realm: realm, clientID: clientID)?.secret
        }
        var assembled = try account(
            previousAccount, after: saved, key: accountKey, realm: realm, claims: idToken == nil ? nil : newClaims)
        if assembled == nil { assembled = try self.account(homeAccountID: homeAccountID, environment: environment) }
        let account = assembled
            ?? Account(identifier: homeAccountID, username: newClaims?.preferredUsername, environment: environment, tenantProfiles: [])
        let result = AuthenticationResult(
            accessToken: response.accessToken, tokenType: response.tokenType, expiresOn: accessToken.expiresOn,
            scopes: granted.scopes, account: account, tenantID: realm, idToken: cachedIDToken,
            idTokenClaims: newClaims ?? cachedIDToken.flatMap { try? IDTokenClaims(jwt: $0) },
            correlationID: correlationID, tokenSource: .identityProvider, authority: authority)
        let declined = context.requestedScopes.containsDefaultScope ? ScopeSet() : context.requestedScopes.subtracting(granted)
        if !declined.isEmpty {
            var error = MSALError(
                .serverDeclinedScopes,
                message: "The identity provider did not grant every requested scope; the token for the granted scopes is cached and in declinedScopesResult.",
                correlationID: correlationID, grantedScopes: granted.scopes, declinedScopes: declined.scopes)
            error.partialResult = result
            throw error
        }
        return result
    }

    /// The account entry's `authority_type` (MSAL's unified cache schema): `MSSTS` for Entra ID and
    /// B2C, `ADFS` for AD FS (as MSAL for Python writes), `Other` for other providers.
    static func cacheAuthorityType(_ type: AuthorityType) -> String {
        switch type {
        case .aad, .b2c: AccountEntry.entraAuthorityType
        case .adfs: AccountEntry.adfsAuthorityType
        case .oidc: AccountEntry.otherAuthorityType
        }
    }
}
