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

    @Test("A scope with whitespace is rejected; no scope at all is allowed")
    func emptyAndWhitespace() {
        // An empty list is allowed (sign-in only / any cached token); blank entries are dropped.
        #expect((try? ScopeSet.validatedRequest([]))?.isEmpty == true)
        #expect(throws: MSALError.internal(.invalidScope, "")) { try ScopeSet.validatedRequest(["  "]) }
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
