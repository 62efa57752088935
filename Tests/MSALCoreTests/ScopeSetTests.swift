import MSALCore
import Testing

@Suite("ScopeSet")
struct ScopeSetTests {
    @Test("Comparison ignores case and keeps the first spelling")
    func caseInsensitive() {
        let scopes = ScopeSet(["User.Read", "user.read", " Mail.Send "])
        #expect(scopes.count == 2)
        #expect(scopes.contains("USER.READ"))
        #expect(scopes.scopes == ["Mail.Send", "User.Read"])
        #expect(scopes == ScopeSet(["mail.send", "user.read"]))
        #expect(scopes.isSuperset(of: ["user.read"]))
        #expect(!scopes.isSuperset(of: ["user.read", "files.read"]))
        #expect(ScopeSet(spaceDelimited: "a  B\tc").normalized == ["a", "b", "c"])
    }

    @Test("Union, subtraction and intersection")
    func algebra() {
        let a: ScopeSet = ["a", "B"]
        let b: ScopeSet = ["b", "c"]
        #expect(a.union(b).normalized == ["a", "b", "c"])
        #expect(a.union(b).scopes.contains("B"))
        #expect(a.subtracting(b).normalized == ["a"])
        #expect(a.intersects(b))
        #expect(!a.intersects(["z"]))
        #expect(a.union(ScopeSet.reservedOIDCScopes).joined == "a B offline_access openid profile")
    }

    @Test("Reserved OIDC scopes passed by the app are rejected", arguments: ["openid", "Profile", "OFFLINE_ACCESS"])
    func reserved(scope: String) {
        do {
            _ = try ScopeSet.validatedRequest(["User.Read", scope])
            Issue.record("expected invalidScope")
        } catch {
            #expect(error == .internal(.invalidScope, ""))
            #expect(error.message.contains(scope))
        }
    }

    @Test("An empty scope or one with whitespace is rejected; no scope at all is allowed")
    func emptyAndWhitespace() {
        // An empty list is allowed (sign-in only / any cached token); an empty or blank scope is not.
        #expect((try? ScopeSet.validatedRequest([]))?.isEmpty == true)
        #expect(throws: MSALError.internal(.invalidScope, "")) { try ScopeSet.validatedRequest(["  "]) }
        // An empty scope string is not an empty list (RFC 6749 §3.3: a scope token has a character).
        #expect(throws: MSALError.internal(.invalidScope, "")) { try ScopeSet.validatedRequest([""]) }
        #expect(throws: MSALError.internal(.invalidScope, "")) { try ScopeSet.validatedRequest(["User.Read", ""]) }
        #expect(throws: MSALError.internal(.invalidScope, "")) { try ScopeSet.validatedRequest(["a b"]) }
        #expect((try? ScopeSet.validatedRequest(["email"]))?.joined == "email")
    }

    @Test("A v1 resource becomes resource/.default; a trailing slash gives //.default")
    func defaultScope() {
        #expect(ScopeSet.defaultScope(forResource: "https://graph.microsoft.com") == "https://graph.microsoft.com/.default")
        #expect(ScopeSet.defaultScope(forResource: "https://management.core.windows.net/") == "https://management.core.windows.net//.default")
        #expect(ScopeSet(["https://management.core.windows.net//.default"]).containsDefaultScope)
        #expect(!ScopeSet(["User.Read"]).containsDefaultScope)
    }
}

@Suite("Scope characters and one-line errors")
struct ScopeCharacterTests {
    @Test("Characters RFC 6749 §3.3 does not allow in a scope are rejected", arguments: ["e\u{01}mail", "a\"b", "a\\b", "caf\u{E9}"])
    func invalidCharacters(scope: String) {
        #expect(throws: MSALError.internal(.invalidScope, "")) { try ScopeSet.validatedRequest([scope]) }
    }

    @Test("A server's line breaks and escapes never split an error's description")
    func oneLineDescription() {
        let error = MSALError(.serverError, message: "The provider said: line1\nline2\r\u{1B}[31mRED", oauthError: "invalid_scope\n")
        #expect(!error.description.contains("\n"))
        #expect(!error.description.contains("\r"))
        #expect(!error.description.unicodeScalars.contains { $0.value == 0x1B })
        #expect(error.description.contains("line1 line2"))
    }
}

@Suite("ScopeSet fast paths")
struct ScopeSetFastPathTests {
    @Test("sortedScopes(spaceDelimited:) is ScopeSet(spaceDelimited:).scopes", arguments: [
        "a b c", "c b a", "User.Read Mail.Read", "https://res.example/Files.Read https://res.example/Mail.Read", "A a",
        "a A b", " a\tb\nc ", "", "   ", "a\r\nb", "b\r\na", "é a", "a é", "Z a", "a Z", "x.default y", "a a", "ab a",
    ])
    func sortedScopes(target: String) {
        #expect(ScopeSet.sortedScopes(spaceDelimited: target) == ScopeSet(spaceDelimited: target).scopes)
    }

    @Test("validatedRequest gives the same set as ScopeSet for plain scopes, the first spelling of duplicates kept")
    func validatedRequest() throws {
        let scopes = ["https://res.example/User.Read", "Mail.Send", "mail.send", "a!b", "Z"]
        let set = try ScopeSet.validatedRequest(scopes)
        #expect(set == ScopeSet(scopes))
        #expect(set.scopes == ScopeSet(scopes).scopes)
        #expect(set.scopes.contains("Mail.Send") && !set.scopes.contains("mail.send"))
        // An empty string is no scope (RFC 6749 §3.3): refused in a request, dropped by ScopeSet.
        #expect(throws: MSALError.internal(.invalidScope, "")) { try ScopeSet.validatedRequest(["", "a"]) }
        #expect(ScopeSet(["", "a"]).scopes == ["a"])
    }

    @Test("Set operations agree with their definitions on generated sets (seeded)")
    func algebraAgainstDefinitions() {
        var state: UInt64 = 42
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let pool = ["a", "B", "b", "c", "User.Read", "user.read", "Mail.Send", "x/.default", "é"]
        func random() -> ScopeSet { ScopeSet((0..<Int(next() % 5)).map { _ in pool[Int(next() % UInt64(pool.count))] }) }
        for _ in 0..<300 {
            let a = random(), b = random()
            let la = Set(a.normalized), lb = Set(b.normalized)
            #expect(a.isSuperset(of: b) == lb.isSubset(of: la))
            #expect(a.intersects(b) == !la.isDisjoint(with: lb))
            #expect(Set(a.union(b).normalized) == la.union(lb))
            #expect(Set(a.subtracting(b).normalized) == la.subtracting(lb))
            #expect(a.union(b).normalized == a.union(b).normalized.sorted())
            #expect((a == b) == (la == lb))
            #expect(a.normalized.allSatisfy { a.contains($0) })
        }
    }
}
