import Testing

@testable import FerryTestServer

@Suite struct ByteRangeTests {
    @Test(arguments: [
        ("bytes=0-99", 1000, RangeRequest.partial(ByteRange(start: 0, end: 100))),
        ("bytes=100-", 1000, .partial(ByteRange(start: 100, end: 1000))),
        ("bytes=-100", 1000, .partial(ByteRange(start: 900, end: 1000))),
        ("bytes=-5000", 1000, .partial(ByteRange(start: 0, end: 1000))),
        ("bytes=900-5000", 1000, .partial(ByteRange(start: 900, end: 1000))),
        (" bytes = 5 - 9 ", 1000, .whole),
        ("bytes=5-9", 1000, .partial(ByteRange(start: 5, end: 10))),
        ("bytes=1000-", 1000, .unsatisfiable),
        ("bytes=2000-3000", 1000, .unsatisfiable),
        ("bytes=-0", 1000, .unsatisfiable),
        ("bytes=0-0,5-9", 1000, .whole),
        ("bytes=9-5", 1000, .whole),
        ("items=0-5", 1000, .whole),
        ("bytes=a-b", 1000, .whole),
        ("bytes=0-", 0, .unsatisfiable),
        ("bytes=10-9223372036854775807", 1000, .partial(ByteRange(start: 10, end: 1000))),
        ("bytes=-9223372036854775807", 1000, .partial(ByteRange(start: 0, end: 1000))),
        ("bytes=99999999999999999999-", 1000, .whole),
    ])
    func parses(header: String, length: Int64, expected: RangeRequest) {
        #expect(RangeRequest(header: header, length: length) == expected)
    }

    @Test func contentRangeNamesTheLastByte() {
        #expect(ByteRange(start: 100, end: 200).contentRange(total: 1000) == "bytes 100-199/1000")
    }
}
