import MSALCore
import Testing

@Suite("Lowercasing identifiers and scopes, and the lowercased scopes of a set")
struct ASCIILowercasingTests {
    @Test("lowercasedIfNeeded() equals lowercased(): ASCII short and long, capitals anywhere or none, and non-ASCII", arguments: [
        "", "a", "A", "User.Read", "https://graph.microsoft.com/User.Read", "ALLCAPS-SCOPE-0123456789",
        "already-lower-case-and-longer-than-fifteen", "Z", "@[`{", "mixed/Path/With.Dots_and-Dashes~X",
        "ÄBC", "Straße/USER.Read", "İstanbul", "ΣΊΣΥΦΟΣ", "café", "already lower ü",
    ])
    func matchesLowercased(string: String) {
        #expect(string.lowercasedIfNeeded() == string.lowercased())
    }

    @Test("A string without a capital letter comes back as it is")
    func unchanged() {
        let lower = "https://graph.microsoft.com/user.read"
        #expect(lower.lowercasedIfNeeded() == lower)
        #expect(lower.lowercasedIfNeeded().utf8.count == lower.utf8.count)
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
