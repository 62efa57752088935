import MSALCore
import Testing

@Suite("String.containsBytes(of:)")
struct ContainsBytesTests {
    @Test("Finds a needle anywhere, byte for byte, and only a whole one", arguments: [
        ("text/html; charset=utf-8", "text/html", true),
        ("application/json; charset=utf-8", "text/html", false),
        ("application/xhtml, text/html", "text/html", true),
        ("text/htm", "text/html", false),
        ("text/htmlx", "text/html", true),
        ("text/htmx", "text/html", false),
        ("TEXT/HTML", "text/html", false),
        ("ümlaut text/html", "text/html", true),
        ("", "text/html", false),
        ("anything", "", true),
        ("tetext/html", "text/html", true),
        ("text/html\u{301}", "text/html", true),
    ])
    func containsBytes(haystack: String, needle: String, expected: Bool) {
        #expect(haystack.containsBytes(of: needle) == expected)
        // Agrees with the standard library's (slower) search of the bytes.
        if !needle.isEmpty {
            let found = Array(haystack.utf8).firstRange(of: Array(needle.utf8)) != nil
            #expect(found == expected)
        }
    }
}
