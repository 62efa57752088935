import Foundation
public import MSALCore

/// ADAL's keyed items (``ADALKeyedItem``) in one of our stores, read as a legacy cache: the second
/// place MSAL for iOS/macOS looks for ADAL users (beside its own cache, in the same keychain access
/// group). Read-only: ``read()`` only calls ``ADALKeyedItemStore/adalKeyedItems()``.
///
/// Each item becomes one ``LegacyTokenEntry``. The item's key is what ADAL looked items up by, so it
/// decides; the archive only supplies the original spelling:
/// - the authority, resource and client ID of the item's service (lowercased, as ADAL keyed them),
///   written as the archive spells them when they are the same ignoring case;
/// - the user ID of the item's account, written as the archive's `userInformation` (`userId`) or its
///   ID token (`upn`, else `email`, else `sub`, as ADAL derived it) spells it when it is the same
///   ignoring case;
/// - the object ID, tenant ID, names and identity provider from the ID token's claims (`oid`, `tid`,
///   `given_name`, `family_name`, `idp`);
/// - the MSAL home account ID from `homeAccountId`, else from `additionalServer`'s `client_info`;
/// - `isMRRT` for the multi-resource refresh token item (no resource).
///
/// Skipped, with the reason in ``LegacyTokenCacheContents/skipped``: an item whose service is not
/// ADAL's `MSOpenTech.ADAL.1|…` layout or whose account is not base64url text, whose data is not an
/// archived `ADTokenCacheItem`, whose authority is not an absolute http(s) URL (all `.malformed`),
/// and an item without a refresh token (`.noRefreshToken`).
public struct ADALKeyedTokenCache: LegacyTokenCache {
    /// The store holding the items.
    public let store: any ADALKeyedItemStore

    /// A reader of the keyed items in `store`'s access group. Nothing is read until ``read()``.
    public init(store: any ADALKeyedItemStore) {
        self.store = store
    }

    /// `ADAL keyed items in access group <group>`.
    public var name: String { "ADAL keyed items in access group \(store.accessGroup)" }

    /// Reads and decodes every item.
    /// - Returns: the usable entries (sorted by service then account) and the items left out with why.
    /// - Throws: ``MSALError`` `.internal(.cacheError)` (or `.cacheUnavailable`) when the store cannot
    ///   be read at all.
    public func read() throws(MSALError) -> LegacyTokenCacheContents {
        let items = try store.adalKeyedItems()
        var contents = LegacyTokenCacheContents()
        for (offset, item) in items.enumerated() {
            switch Self.entry(item, position: offset + 1, source: name) {
            case .success(let entry): contents.entries.append(entry)
            case .failure(let skip): contents.skipped.append(skip.entry)
            }
        }
        return contents
    }

    private struct Skip: Error {
        var entry: LegacySkippedEntry
    }

    /// One item as an entry, or why it is skipped.
    private static func entry(_ item: ADALKeyedItem, position: Int, source: String) -> Result<LegacyTokenEntry, Skip> {
        let parts = item.serviceParts
        func skip(_ reason: LegacySkippedEntry.Reason, userID: String? = nil, authority: String? = nil) -> Result<LegacyTokenEntry, Skip> {
            .failure(Skip(entry: LegacySkippedEntry(
                source: source, position: position, reason: reason, userID: userID ?? item.userID,
                authority: authority ?? parts?.authority, resource: parts?.resource)))
        }
        guard let parts else {
            return skip(.malformed("the item's service is not MSOpenTech.ADAL.1|<authority>|<resource>|<client ID> in base64url"))
        }
        guard let keyUserID = item.userID else { return skip(.malformed("the item's account is not the base64url of a user ID")) }
        let archived: ADALTokenCacheItem
        do {
            archived = try ADALTokenCacheItem(archive: item.value)
        } catch {
            return skip(.malformed("the item's data is not an archived ADTokenCacheItem (\(error.message))"))
        }
        let claims = archived.rawIDToken.flatMap { try? IDTokenClaims(jwt: $0) }
        func claim(_ name: String) -> String? { claims?.all[name]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } }
        /// The archive's spelling of a key part, when it is the same text ignoring case.
        func spelled(_ keyed: String, _ candidates: String?...) -> String {
            candidates.compactMap { $0 }.first { $0.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() == keyed } ?? keyed
        }
        let userID = spelled(keyUserID.lowercased(), archived.userID, claim("upn"), claim("email"), claim("sub"))
        let authority = spelled(parts.authority, archived.authority)
        guard let url = URL(string: authority), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = url.host, !host.isEmpty
        else {
            return skip(.malformed("the item's authority is not an absolute http(s) URL"), userID: userID, authority: authority)
        }
        guard let refreshToken = archived.refreshToken, !refreshToken.isEmpty else {
            return skip(.noRefreshToken, userID: userID, authority: authority)
        }
        let resource = parts.resource.map { spelled($0, archived.resource) }
        let homeAccountID = archived.homeAccountID.flatMap { $0.isEmpty ? nil : $0 }
            ?? archived.additionalServer["client_info"].flatMap { try? ClientInfo(encoded: $0).homeAccountID }
        return .success(LegacyTokenEntry(
            source: source, position: position, authority: authority,
            clientID: spelled(parts.clientID, archived.clientID), resource: resource,
            userID: userID, refreshToken: refreshToken,
            isUserIDDisplayable: archived.isUserIDDisplayable ?? (claim("upn") != nil || claim("email") != nil ? true : nil),
            homeAccountID: homeAccountID, objectID: claim("oid"), tenantID: claim("tid"), givenName: claim("given_name"),
            familyName: claim("family_name"), identityProvider: claim("idp"), expiresOn: archived.expiresOn,
            tokenType: archived.accessTokenType, isMRRT: resource == nil, familyID: archived.familyID.flatMap { $0.isEmpty ? nil : $0 }))
    }
}
