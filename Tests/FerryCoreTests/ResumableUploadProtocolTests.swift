import FerryCore
import Foundation
import Testing

/// What a resumable-upload server's answers say, read as RFC 9651 structured fields.
@Suite struct ResumableUploadProtocolTests {
    private func headers(_ fields: [(String, String)]) -> Headers { Headers(fields) }

    @Test(arguments: [
        ("42", Int64(42)), (" 42 ", 42), ("0", 0), ("42;a=1", 42),
        ("-1", nil), ("4.2", nil), ("42, 43", nil), ("forty", nil), ("\"42\"", nil), ("", nil),
        ("999999999999999", 999_999_999_999_999), ("1000000000000000", nil),  // RFC 9651: at most 15 digits
    ] as [(String, Int64?)])
    func theOffsetIsANonNegativeStructuredInteger(value: String, offset: Int64?) {
        #expect(ResumableUploadProtocol.offset(headers([("Upload-Offset", value)])) == offset)
    }

    @Test(arguments: [
        ("?1", true), ("?0", false), (" ?1", true), ("?1;x", true),
        ("1", nil), ("true", nil), ("?2", nil), ("?1, ?0", nil),
    ] as [(String, Bool?)])
    func completionIsAStructuredBoolean(value: String, complete: Bool?) {
        #expect(ResumableUploadProtocol.isComplete(headers([("Upload-Complete", value)])) == complete)
        #expect(ResumableUploadProtocol.isComplete(headers([("Upload-Incomplete", value)])) == complete.map { !$0 })
    }

    @Test func theLimitIsAStructuredDictionary() throws {
        let limit = try #require(UploadLimit("max-size=1000, min-size=1, max-append-size=100, min-append-size=10, max-age=3600, other=?1"))
        #expect(limit.maximumSize == 1000 && limit.minimumSize == 1)
        #expect(limit.maximumAppendSize == 100 && limit.minimumAppendSize == 10)
        #expect(limit.maximumAge == 3600)
        // Unknown keys, of any type, are ignored; a known one that is not a non-negative integer is not.
        #expect(UploadLimit("future=(1 2), max-size=5")?.maximumSize == 5)
        #expect(UploadLimit("max-size=-1") == nil)
        #expect(UploadLimit("max-size=1.5") == nil)
        #expect(UploadLimit("max-size=\"1000\"") == nil)
        // Not a dictionary at all.
        #expect(UploadLimit("max-size = 1000") == nil)
        #expect(UploadLimit("max-size=1000,,") == nil)
    }
}
