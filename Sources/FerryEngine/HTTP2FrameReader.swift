import NIOCore

/// Reads HTTP/2 frames from a connection's bytes as they arrive, without copying what it can avoid
/// copying (a pure value: no I/O).
///
/// A DATA frame's content is handed on as slices of the reads it arrived in, as soon as they arrive,
/// even when the frame continues in the next read: the bytes of a download are never copied here. Other
/// frames are handed on whole; only one that straddles two reads (and a frame header that does) is
/// gathered into a buffer of its own.
struct HTTP2FrameReader {
    enum Event {
        /// A whole frame other than DATA.
        case frame(HTTP2Frame.Header, payload: ByteBuffer)
        /// Content of a DATA frame on `stream`, a slice of the read it came in (possibly empty).
        /// `window`: the bytes of the frame this piece accounts for in flow control (its content, and
        /// the pad length and padding it consumed). `endStream`: the last piece of a frame with
        /// END_STREAM.
        case data(stream: UInt32, ByteBuffer, window: Int, endStream: Bool)
    }

    /// The DATA frame being read.
    private struct DataFrame {
        let stream: UInt32
        let endStream: Bool
        /// The whole payload's length (for checking the pad length).
        let length: Int
        /// The pad length byte is still to come.
        var awaitingPadLength: Bool
        var contentLeft: Int
        var paddingLeft: Int
        /// Bytes consumed but not yet reported in an event.
        var unreported: Int
    }

    /// The largest frame payload accepted (what this side announced as SETTINGS_MAX_FRAME_SIZE).
    var maximumFrameSize: Int
    /// A frame header, or a frame other than DATA, that straddles reads.
    private var partial: ByteBuffer?
    private var dataFrame: DataFrame?

    init(maximumFrameSize: Int = HTTP2Frame.defaultMaximumFrameSize) {
        self.maximumFrameSize = maximumFrameSize
    }

    /// Whether the reader is between frames (nothing of a frame held back).
    var isAtFrameBoundary: Bool { partial == nil && dataFrame == nil }

    /// Reads `input`, calling `handle` with each event in order.
    /// - Throws: ``HTTP2Frame/Violation`` for a frame larger than allowed or a DATA frame whose padding
    ///   does not fit; whatever `handle` throws.
    mutating func read(_ input: ByteBuffer, _ handle: (Event) throws -> Void) throws {
        var input = input
        while true {
            if dataFrame != nil {
                guard try readData(&input, handle) else { return }
                continue
            }
            if partial == nil, input.readableBytes >= HTTP2Frame.headerLength {
                // The common case: the frame's header is here whole.
                let header = try Self.header(at: input.readerIndex, of: input, maximum: maximumFrameSize)
                if header.type == HTTP2Frame.Kind.data.rawValue {
                    input.moveReaderIndex(forwardBy: HTTP2Frame.headerLength)
                    startData(header)
                    continue
                }
                if input.readableBytes >= HTTP2Frame.headerLength + header.length {
                    input.moveReaderIndex(forwardBy: HTTP2Frame.headerLength)
                    try handle(.frame(header, payload: input.readSlice(length: header.length)!))
                    continue
                }
            }
            guard input.readableBytes > 0 else { return }
            // Gathering: a header or a frame that straddles reads.
            var gathered = partial ?? ByteBuffer()
            if gathered.readableBytes < HTTP2Frame.headerLength {
                let take = min(HTTP2Frame.headerLength - gathered.readableBytes, input.readableBytes)
                var piece = input.readSlice(length: take)!
                gathered.writeBuffer(&piece)
                guard gathered.readableBytes == HTTP2Frame.headerLength else {
                    partial = gathered
                    return
                }
            }
            let header = try Self.header(at: gathered.readerIndex, of: gathered, maximum: maximumFrameSize)
            if header.type == HTTP2Frame.Kind.data.rawValue {
                partial = nil
                startData(header)
                continue
            }
            let missing = HTTP2Frame.headerLength + header.length - gathered.readableBytes
            let take = min(missing, input.readableBytes)
            var piece = input.readSlice(length: take)!
            gathered.writeBuffer(&piece)
            guard take == missing else {
                partial = gathered
                return
            }
            partial = nil
            gathered.moveReaderIndex(forwardBy: HTTP2Frame.headerLength)
            try handle(.frame(header, payload: gathered))
        }
    }

    private mutating func startData(_ header: HTTP2Frame.Header) {
        let padded = header.has(HTTP2Frame.Flag.padded)
        dataFrame = DataFrame(
            stream: header.stream,
            endStream: header.has(HTTP2Frame.Flag.endStream),
            length: header.length,
            awaitingPadLength: padded,
            contentLeft: padded ? 0 : header.length,
            paddingLeft: 0,
            unreported: 0
        )
    }

    /// Reads what `input` holds of the DATA frame under way; true when the frame is complete (and
    /// reported), false when `input` ran out first.
    private mutating func readData(_ input: inout ByteBuffer, _ handle: (Event) throws -> Void) throws -> Bool {
        var frame = dataFrame!
        if frame.awaitingPadLength {
            guard let padLength = input.readInteger(as: UInt8.self) else { return false }
            guard Int(padLength) < frame.length else {
                throw HTTP2Frame.Violation(
                    code: .protocolError,
                    message: "a DATA frame's padding (\(padLength) bytes) is longer than the frame (\(frame.length))"
                )
            }
            frame.awaitingPadLength = false
            frame.paddingLeft = Int(padLength)
            frame.contentLeft = frame.length - 1 - Int(padLength)
            frame.unreported += 1
        }
        let take = min(frame.contentLeft, input.readableBytes)
        let content = take > 0 ? input.readSlice(length: take) : nil
        frame.contentLeft -= take
        frame.unreported += take
        if frame.contentLeft == 0, frame.paddingLeft > 0 {
            let skip = min(frame.paddingLeft, input.readableBytes)
            input.moveReaderIndex(forwardBy: skip)
            frame.paddingLeft -= skip
            frame.unreported += skip
        }
        let complete = frame.contentLeft == 0 && frame.paddingLeft == 0
        if content != nil || complete {
            let window = frame.unreported
            frame.unreported = 0
            dataFrame = complete ? nil : frame
            try handle(
                .data(stream: frame.stream, content ?? ByteBuffer(), window: window, endStream: complete && frame.endStream)
            )
        } else {
            dataFrame = frame
        }
        return complete
    }

    private static func header(at index: Int, of buffer: ByteBuffer, maximum: Int) throws -> HTTP2Frame.Header {
        let high = Int(buffer.getInteger(at: index, as: UInt8.self)!)
        let low = Int(buffer.getInteger(at: index + 1, as: UInt16.self)!)
        let length = high << 16 | low
        guard length <= maximum else {
            throw HTTP2Frame.Violation(
                code: .frameSizeError,
                message: "a frame of \(length) bytes, larger than the \(maximum) this client allows"
            )
        }
        return HTTP2Frame.Header(
            length: length,
            type: buffer.getInteger(at: index + 3, as: UInt8.self)!,
            flags: buffer.getInteger(at: index + 4, as: UInt8.self)!,
            stream: buffer.getInteger(at: index + 5, as: UInt32.self)! & 0x7FFF_FFFF
        )
    }
}
