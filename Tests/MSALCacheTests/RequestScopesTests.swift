import Foundation
@testable import MSALCache
import MSALCore
import Testing

/// The numbers a request's scopes keep between lookups (``RequestScopes``): used only under the
/// numbering they were given in, so a lookup never reads another scope's number.
@Suite("Request scopes: kept scope numbers")
struct RequestScopesTests {
    @Test("Numbers are kept on the first lookup and used by the next, under the same numbering")
    func keptUnderSameNumbering() throws {
        var table = ScopeTable()
        _ = table.intern(target: "Files.Read Mail.Read User.Read")
        let request = RequestScopes(try ScopeSet.validatedRequest(["User.Read", "files.read"]))
        #expect(request.numbers(in: table.numberingName) == nil)
        let first = table.withIDs(of: request) { $0.map(Array.init) }
        let expected = table.withIDs(of: request.set) { $0.map(Array.init) }
        #expect(first == expected)
        #expect(first?.count == 2)
        #expect(request.numbers(in: table.numberingName) == first)
        // Numbering more scopes keeps the numbering: the kept numbers still hold.
        _ = table.intern(target: "Calendars.Read")
        #expect(request.numbers(in: table.numberingName) == first)
        #expect(table.withIDs(of: request) { $0.map(Array.init) } == expected)
    }

    @Test("A scope no cached token holds gets no number, and nothing is kept")
    func unknownScopeKeepsNothing() throws {
        var table = ScopeTable()
        _ = table.intern(target: "User.Read")
        let request = RequestScopes(try ScopeSet.validatedRequest(["User.Read", "Mail.Send"]))
        #expect(table.withIDs(of: request) { $0 == nil })
        #expect(request.numbers(in: table.numberingName) == nil)
        // Once a token holds it, the same request is numbered.
        _ = table.intern(target: "Mail.Send")
        #expect(table.withIDs(of: request) { $0?.count } == 2)
    }

    @Test("Two copies of a table that number different scopes have different numberings, and neither uses the other's kept numbers")
    func divergedCopies() throws {
        var original = ScopeTable()
        _ = original.intern(target: "x")
        var copy = original
        _ = copy.intern(target: "y")  // y is number 1 in the copy
        _ = original.intern(target: "z")  // z is number 1 in the original
        #expect(copy.numberingName != original.numberingName)
        let y = RequestScopes(try ScopeSet.validatedRequest(["y"]))
        #expect(copy.withIDs(of: y) { $0.map(Array.init) } == [1])
        // The original has no y: the numbers kept from the copy must not answer [1] (its z).
        #expect(original.withIDs(of: y) { $0 == nil })
        let z = RequestScopes(try ScopeSet.validatedRequest(["z"]))
        #expect(original.withIDs(of: z) { $0.map(Array.init) } == [1])
        #expect(copy.withIDs(of: z) { $0 == nil })
    }

    @Test("After another cache instance changed the store, the reloaded index does not use numbers kept before")
    func reloadedIndex() throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        try cache.save(accessToken: Sample.accessToken(target: "x", secret: "AT-x"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        let x = RequestScopes(try ScopeSet.validatedRequest(["x"]))
        func lookup(_ scopes: RequestScopes) throws -> String? {
            try cache.accessTokenAndRevision(
                homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant, clientID: Sample.clientID,
                scopes: scopes)?.entry.secret
        }
        #expect(try lookup(x) == "AT-x")
        #expect(try lookup(x) == "AT-x")  // the kept numbers
        // Another instance replaces the token by one for y: reloaded, the index numbers y first.
        let other = TokenCache(store: store)
        try other.save(accessToken: Sample.accessToken(target: "y", secret: "AT-y"), refreshToken: nil, idToken: nil, account: nil, appMetadata: nil)
        try other.remove([CacheEntryRemoval(kind: .accessToken, key: Sample.accessToken(target: "x", secret: "").key)])
        #expect(try lookup(x) == nil)
        #expect(try lookup(RequestScopes(try ScopeSet.validatedRequest(["y"]))) == "AT-y")
    }

    @Test("Concurrent lookups with one request's scopes all find the same token")
    func concurrentLookups() async throws {
        let store = InMemoryTokenCacheStore()
        let cache = TokenCache(store: store)
        for k in 0..<40 {
            try cache.save(
                accessToken: Sample.accessToken(target: "r\(k)/A r\(k)/B", secret: "AT-\(k)"), refreshToken: nil, idToken: nil,
                account: nil, appMetadata: nil)
        }
        let request = RequestScopes(try ScopeSet.validatedRequest(["r7/B"]))
        let found = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    try cache.accessTokenAndRevision(
                        homeAccountID: Sample.home, environment: Sample.environment, realm: Sample.tenant, clientID: Sample.clientID,
                        scopes: request)?.entry.secret
                }
            }
            var all: [String?] = []
            for try await secret in group { all.append(secret) }
            return all
        }
        #expect(found.count == 64)
        #expect(found.allSatisfy { $0 == "AT-7" })
    }
}
