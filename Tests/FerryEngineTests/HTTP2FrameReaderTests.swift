import NIOCore
import Testing

@testable import FerryEngine

/// The HTTP/2 frame reader on its own: frames split anywhere across reads, padding, limits, and DATA
/// content handed on without a copy.
@Suite struct HTTP2FrameReaderTests {
    /// What a run of the reader saw, with DATA content joined per stream.
    private struct Seen: Equatable {
        var frames: [HTTP2Frame.Header] = []
        var payloads: [[UInt8]] = []
        var content: [UInt32: [UInt8]] = [:]
        var window: [UInt32: Int] = [:]
        var ends: [UInt32] = []
    }

    private func read(_ reads: [ByteBuffer], maximum: Int = 16384) throws -> Seen {
        var reader = HTTP2FrameReader(maximumFrameSize: maximum)
        var seen = Seen()
        for input in reads {
            try reader.read(input) { event in
                switch event {
                case .frame(let header, let payload):
                    seen.frames.append(header)
                    seen.payloads.append(Array(payload.readableBytesView))
                case .data(let stream, let content, let window, let endStream):
                    seen.content[stream, default: []] += content.readableBytesView
                    seen.window[stream, default: 0] += window
                    if endStream { seen.ends.append(stream) }
                }
            }
        }
        #expect(reader.isAtFrameBoundary)
        return seen
    }

    /// A connection's worth of frames: SETTINGS, HEADERS, DATA (one padded), PING, an unknown type.
    private func sample() -> ByteBuffer {
        var bytes = ByteBuffer()
        bytes.writeHTTP2Settings([(.maximumConcurrentStreams, 7), (.initialWindowSize, 1 << 20)])
        bytes.writeHTTP2Headers(stream: 1, block: ByteBuffer(bytes: [0x88]), endStream: false, maximumFrameSize: 16384)
        let first = (0..<5000).map { UInt8(truncatingIfNeeded: $0) }
        bytes.writeHTTP2FrameHeader(length: first.count, kind: .data, stream: 1)
        bytes.writeBytes(first)
        // Padded: pad length 10, 300 bytes of content, 10 of padding, END_STREAM.
        bytes.writeHTTP2FrameHeader(length: 1 + 300 + 10, kind: .data, flags: 0x8 | 0x1, stream: 1)
        bytes.writeInteger(UInt8(10))
        bytes.writeBytes([UInt8](repeating: 7, count: 300))
        bytes.writeBytes([UInt8](repeating: 0, count: 10))
        bytes.writeHTTP2Ping(42, ack: false)
        // An unknown frame type (0x42) is passed on as a frame and ignored by the handler.
        bytes.writeInteger(UInt8(0)); bytes.writeInteger(UInt16(3)); bytes.writeInteger(UInt8(0x42))
        bytes.writeInteger(UInt8(0)); bytes.writeInteger(UInt32(0)); bytes.writeBytes([1, 2, 3])
        // An empty DATA frame ending stream 3.
        bytes.writeHTTP2FrameHeader(length: 0, kind: .data, flags: 0x1, stream: 3)
        return bytes
    }

    @Test func framesSplitAtEveryOffsetReadTheSame() throws {
        let whole = sample()
        let expected = try read([whole])
        #expect(expected.frames.map(\.type) == [4, 1, 6, 0x42])
        #expect(expected.content[1] == (0..<5000).map { UInt8(truncatingIfNeeded: $0) } + [UInt8](repeating: 7, count: 300))
        // Flow control counts the whole DATA payloads, padding and pad length included.
        #expect(expected.window[1] == 5000 + 311)
        #expect(expected.window[3] == 0)
        #expect(expected.ends == [1, 3])
        #expect(expected.payloads[2] == [0, 0, 0, 0, 0, 0, 0, 42])
        for cut in 1..<whole.readableBytes {
            var input = whole
            let head = input.readSlice(length: cut)!
            #expect(try read([head, input]) == expected, "cut at \(cut)")
        }
        // And byte by byte.
        let single = whole.readableBytesView.map { ByteBuffer(bytes: [$0]) }
        #expect(try read(single) == expected)
    }

    @Test func dataContentIsASliceOfTheReadNotACopy() throws {
        var input = ByteBuffer()
        input.writeHTTP2FrameHeader(length: 4096, kind: .data, stream: 1)
        input.writeBytes([UInt8](repeating: 9, count: 4096))
        let start = input.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress!) }
        var reader = HTTP2FrameReader()
        var addresses: [UInt] = []
        try reader.read(input) { event in
            if case .data(_, let content, _, _) = event {
                addresses.append(content.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress!) })
            }
        }
        #expect(addresses == [start + 9])
    }

    @Test func aFrameLargerThanAllowedIsAFrameSizeError() throws {
        var input = ByteBuffer()
        input.writeHTTP2FrameHeader(length: 20000, kind: .headers, stream: 1)
        let error = try #require(throws: HTTP2Frame.Violation.self) { try read([input]) }
        #expect(error.code == .frameSizeError)
        // DATA is checked too, though its content is never gathered.
        var data = ByteBuffer()
        data.writeHTTP2FrameHeader(length: 70000, kind: .data, stream: 1)
        #expect(throws: HTTP2Frame.Violation.self) { try read([data], maximum: 65536) }
    }

    @Test func paddingLongerThanTheFrameIsAProtocolError() throws {
        var input = ByteBuffer()
        input.writeHTTP2FrameHeader(length: 5, kind: .data, flags: 0x8, stream: 1)
        input.writeInteger(UInt8(5))
        input.writeBytes([0, 0, 0, 0])
        let error = try #require(throws: HTTP2Frame.Violation.self) { try read([input]) }
        #expect(error.code == .protocolError)
    }

    @Test func headerBlocksLargerThanAFrameGoInContinuationFrames() throws {
        let block = ByteBuffer(bytes: (0..<40000).map { UInt8(truncatingIfNeeded: $0) })
        var output = ByteBuffer()
        output.writeHTTP2Headers(stream: 5, block: block, endStream: true, maximumFrameSize: 16384)
        let seen = try read([output])
        #expect(seen.frames.map(\.type) == [1, 9, 9])
        #expect(seen.frames.map(\.length) == [16384, 16384, 40000 - 32768])
        // END_STREAM on the HEADERS frame, END_HEADERS on the last.
        #expect(seen.frames.map(\.flags) == [0x1, 0, 0x4])
        #expect(seen.payloads.flatMap { $0 } == Array(block.readableBytesView))
    }
}
