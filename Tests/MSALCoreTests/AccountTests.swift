import Foundation
import MSALCore
import Testing

@Suite("Account")
struct AccountTests {
    static func account(_ identifier: String) -> Account {
        Account(identifier: identifier, username: nil, environment: "login.microsoftonline.com", tenantProfiles: [])
    }

    @Test("homeAccountID splits <uid>.<utid> and is nil for every other shape", arguments: [
        ("00000000-0000-0000-0000-000000000001.72f988bf-86f1-41af-91ab-2d7cd011db47",
         "00000000-0000-0000-0000-000000000001", "72f988bf-86f1-41af-91ab-2d7cd011db47"),
        ("a.b", "a", "b"),
        ("ä.b", "ä", "b"),
        ("a.é", "a", "é"),
    ])
    func splits(identifier: String, objectID: String, tenantID: String) {
        let parts = Self.account(identifier).homeAccountID
        #expect(parts?.objectID == objectID)
        #expect(parts?.tenantID == tenantID)
    }

    @Test("homeAccountID is nil without exactly one dot between two non-empty parts", arguments: [
        "", ".", "abc", ".b", "a.", "a.b.c", "a..b", "sub-without-dot", "ä.", ".é", "a.b.é",
    ])
    func notSplit(identifier: String) {
        #expect(Self.account(identifier).homeAccountID == nil)
    }

    @Test("A dot followed by a combining mark is one Character, not a separator (as before the byte fast path)")
    func combiningMark() {
        // "a" "." U+0301 "b": the dot and the accent form one Character, so there is no "." to split at.
        let identifier = "a.\u{0301}b"
        #expect(Self.account(identifier).homeAccountID == nil)
    }
}
