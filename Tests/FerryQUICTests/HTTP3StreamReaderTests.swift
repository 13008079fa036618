import FerryQUIC
import Testing

/// A request stream's frames as bytes come in pieces: DATA handed on as it arrives (a whole body in
/// one frame is never held), other frames whole, and an oversized one refused.
@Suite struct HTTP3StreamReaderTests {
    @Test func piecesOfAnyLengthGiveTheSameParts() throws {
        let body = (0..<5_000).map { UInt8($0 % 256) }
        let bytes = HTTP3Frame.headers([0, 0, 0xd9]).encoded + HTTP3Frame.data(body).encoded + HTTP3Frame.other(type: 0x21, payload: [7]).encoded
            + HTTP3Frame.headers([0, 0]).encoded
        for size in [1, 2, 3, 7, 1_200, bytes.count] {
            var reader = HTTP3StreamReader()
            var parts: [HTTP3StreamReader.Part] = []
            var index = 0
            while index < bytes.count {
                parts += try reader.feed(Array(bytes[index..<min(index + size, bytes.count)]))
                index += size
            }
            #expect(parts.first == .headers([0, 0, 0xd9]), "pieces of \(size)")
            let data = parts.compactMap { if case .data(let piece) = $0 { piece } else { nil } }
            #expect(Array(data.joined()) == body, "pieces of \(size)")
            // The body arrives in as many pieces as it was fed in (not held until the frame ends).
            if size < 1_000 { #expect(data.count >= 5_000 / size) }
            #expect(parts.contains(.other(type: 0x21, payload: [7])) && parts.last == .headers([0, 0]))
            #expect(reader.isAtFrameBoundary)
        }
    }

    @Test func anOversizedFrameIsRefusedAndACutOneIsNotAtABoundary() throws {
        var reader = HTTP3StreamReader(maximumPayload: 100)
        #expect(throws: QUICError.self) { _ = try reader.feed(HTTP3Frame.headers([UInt8](repeating: 0, count: 101)).encoded) }
        var cut = HTTP3StreamReader()
        _ = try cut.feed(Array(HTTP3Frame.data([1, 2, 3]).encoded.dropLast()))
        #expect(!cut.isAtFrameBoundary)
    }
}
