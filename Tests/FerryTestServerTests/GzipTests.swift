import Testing

@testable import FerryTestServer

@Suite struct GzipTests {
    @Test func roundTrips() throws {
        let input = DeterministicBytes(seed: 3).bytes(offset: 0, count: 200_000) + Array(repeating: 7, count: 100_000)
        let compressed = try Gzip.compress(input)
        #expect(compressed.prefix(2) == [0x1f, 0x8b])
        #expect(compressed.count < input.count)
        #expect(try Gzip.decompress(compressed) == input)
    }

    @Test func refusesGarbage() {
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress([1, 2, 3, 4]) }
    }
}
