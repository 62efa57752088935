import MSALCore
import Testing

@Suite("ASCII lowercasing and the lowercased scopes of a set")
struct ASCIILowercasingTests {
    @Test("asciiLowercased() equals lowercased() for ASCII strings, short and long, with capitals anywhere or none", arguments: [
        "", "a", "A", "User.Read", "https://graph.microsoft.com/User.Read", "ALLCAPS-SCOPE-0123456789",
        "already-lower-case-and-longer-than-fifteen", "Z", "@[`{", "mixed/Path/With.Dots_and-Dashes~X",
    ])
    func matchesLowercased(scope: String) {
        #expect(scope.asciiLowercased() == scope.lowercased())
    }

    @Test("Bytes outside A–Z are kept, and a string without capitals comes back as it is")
    func keepsOtherBytes() {
        #expect("ÄBC".asciiLowercased() == "Äbc")
        let lower = "https://graph.microsoft.com/user.read"
        #expect(lower.asciiLowercased() == lower)
        #expect(lower.asciiLowercased().utf8.count == lower.utf8.count)
    }

    @Test("forEachNormalized visits the lowercased scopes in normalized order")
    func forEachNormalized() throws {
        let set = try ScopeSet.validatedRequest(["Mail.Read", "https://Res.example/User.Read", "mail.read", "A.b"])
        var visited: [String] = []
        set.forEachNormalized { visited.append($0) }
        #expect(visited == set.normalized)
        #expect(visited == ["a.b", "https://res.example/user.read", "mail.read"])
    }
}
