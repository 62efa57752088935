import Foundation
@testable import MSAL
import Testing

/// The string form of the correlation IDs a request makes when it brings none.
@Suite("Correlation ID format")
struct CorrelationIDFormatTests {
    @Test("format(high:low:) writes what Foundation's UUID writes for the same 16 bytes, lowercased (seeded values and the extremes)")
    func matchesFoundation() {
        var random = SystemRandomNumberGenerator()
        var values: [(UInt64, UInt64)] = [(0, 0), (.max, .max), (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210), (1, 1 << 63)]
        for _ in 0..<500 { values.append((random.next(), random.next())) }
        for (high, low) in values {
            let bytes = withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { Array($0) }
            let uuid = UUID(uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
            #expect(CorrelationIDGenerator.format(high: high, low: low) == uuid.uuidString.lowercased())
        }
    }

    @Test("Generated IDs are version 4, variant 10 UUIDs, all different")
    func generated() {
        let generator = CorrelationIDGenerator()
        var seen = Set<String>()
        for _ in 0..<1_000 {
            let id = generator.nextID().string
            let characters = Array(id)
            #expect(UUID(uuidString: id) != nil && id == id.lowercased())
            #expect(characters[14] == "4" && "89ab".contains(characters[19]), "\(id)")
            seen.insert(id)
        }
        #expect(seen.count == 1_000)
    }
}
