import NIOCore

/// The HTTP/2 frame vocabulary of Ferry's client (RFC 9113 §4 and §6): frame types, flags, settings,
/// error codes, and the writers for the frames it sends.
///
/// Why not swift-nio-http2 on the client: its frame decoder copies every byte it reads into a buffer of
/// its own (`HTTP2FrameDecoder.append`), which was 15.7–20.9 % of the CPU samples of a 1 GiB https
/// download, and each request made a stream channel with a pipeline of its own; Ferry's HTTP/2 stayed at
/// 0.75–0.86× curl on large bodies and 0.45–0.67× on small requests (docs/BENCHMARKS.md). The client here
/// parses frames where they lie (``HTTP2FrameReader``), hands DATA payloads on as slices of the read,
/// and runs every stream of a connection in one handler (``HTTP2ClientHandler``). HPACK stays
/// swift-nio-http2's (NIOHPACK); ferry-testserver's HTTP/2 listener stays swift-nio-http2's too.
enum HTTP2Frame {
    /// What a client sends first on a connection (RFC 9113 §3.4).
    static let preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    /// The frame header's length.
    static let headerLength = 9
    /// The largest frame payload until the peer allows more (SETTINGS_MAX_FRAME_SIZE's initial value).
    static let defaultMaximumFrameSize = 16384
    /// Every window starts at this (RFC 9113 §6.9.2).
    static let defaultWindow = 65535
    /// The largest window (2^31 − 1).
    static let maximumWindow = Int(Int32.max)

    enum Kind: UInt8 {
        case data = 0
        case headers = 1
        case priority = 2
        case resetStream = 3
        case settings = 4
        case pushPromise = 5
        case ping = 6
        case goAway = 7
        case windowUpdate = 8
        case continuation = 9
    }

    enum Flag {
        static let endStream: UInt8 = 0x1
        static let ack: UInt8 = 0x1
        static let endHeaders: UInt8 = 0x4
        static let padded: UInt8 = 0x8
        static let priority: UInt8 = 0x20
    }

    enum Setting: UInt16 {
        case headerTableSize = 1
        case enablePush = 2
        case maximumConcurrentStreams = 3
        case initialWindowSize = 4
        case maximumFrameSize = 5
        case maximumHeaderListSize = 6
    }

    /// A frame's header (RFC 9113 §4.1).
    struct Header: Equatable {
        var length: Int
        /// The raw type: unknown types are read and ignored, as the protocol asks.
        var type: UInt8
        var flags: UInt8
        var stream: UInt32

        var kind: Kind? { Kind(rawValue: type) }
        func has(_ flag: UInt8) -> Bool { flags & flag != 0 }
    }

    /// An error code of RST_STREAM and GOAWAY (RFC 9113 §7).
    struct ErrorCode: Equatable, CustomStringConvertible {
        let rawValue: UInt32
        static let noError = ErrorCode(rawValue: 0)
        static let protocolError = ErrorCode(rawValue: 1)
        static let internalError = ErrorCode(rawValue: 2)
        static let flowControlError = ErrorCode(rawValue: 3)
        static let streamClosed = ErrorCode(rawValue: 5)
        static let frameSizeError = ErrorCode(rawValue: 6)
        static let refusedStream = ErrorCode(rawValue: 7)
        static let cancel = ErrorCode(rawValue: 8)
        static let compressionError = ErrorCode(rawValue: 9)
        static let enhanceYourCalm = ErrorCode(rawValue: 11)

        private static let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
            "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR",
            "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]

        var description: String {
            rawValue < Self.names.count ? Self.names[Int(rawValue)] : "error code \(rawValue)"
        }
    }

    /// A breach of the protocol by the peer, with the code a GOAWAY or RST_STREAM names it by.
    struct Violation: Error, Equatable {
        let code: ErrorCode
        let message: String
    }
}

/// Frame writers: each appends one whole frame to a buffer.
extension ByteBuffer {
    mutating func writeHTTP2FrameHeader(length: Int, kind: HTTP2Frame.Kind, flags: UInt8 = 0, stream: UInt32 = 0) {
        writeInteger(UInt8(truncatingIfNeeded: length >> 16))
        writeInteger(UInt16(truncatingIfNeeded: length))
        writeInteger(kind.rawValue)
        writeInteger(flags)
        writeInteger(stream & 0x7FFF_FFFF)
    }

    mutating func writeHTTP2Settings(_ settings: [(HTTP2Frame.Setting, Int)]) {
        writeHTTP2FrameHeader(length: settings.count * 6, kind: .settings)
        for (setting, value) in settings {
            writeInteger(setting.rawValue)
            writeInteger(UInt32(value))
        }
    }

    mutating func writeHTTP2SettingsAck() {
        writeHTTP2FrameHeader(length: 0, kind: .settings, flags: HTTP2Frame.Flag.ack)
    }

    mutating func writeHTTP2Ping(_ data: UInt64, ack: Bool) {
        writeHTTP2FrameHeader(length: 8, kind: .ping, flags: ack ? HTTP2Frame.Flag.ack : 0)
        writeInteger(data)
    }

    mutating func writeHTTP2WindowUpdate(stream: UInt32, increment: Int) {
        writeHTTP2FrameHeader(length: 4, kind: .windowUpdate, stream: stream)
        writeInteger(UInt32(increment) & 0x7FFF_FFFF)
    }

    mutating func writeHTTP2ResetStream(stream: UInt32, code: HTTP2Frame.ErrorCode) {
        writeHTTP2FrameHeader(length: 4, kind: .resetStream, stream: stream)
        writeInteger(code.rawValue)
    }

    mutating func writeHTTP2GoAway(lastStream: UInt32, code: HTTP2Frame.ErrorCode, message: String = "") {
        let debug = Array(message.utf8.prefix(256))
        writeHTTP2FrameHeader(length: 8 + debug.count, kind: .goAway)
        writeInteger(lastStream & 0x7FFF_FFFF)
        writeInteger(code.rawValue)
        writeBytes(debug)
    }

    /// A header block as HEADERS and, when it is larger than `maximumFrameSize`, CONTINUATION frames.
    mutating func writeHTTP2Headers(stream: UInt32, block: ByteBuffer, endStream: Bool, maximumFrameSize: Int) {
        var block = block
        var first = true
        repeat {
            let length = min(block.readableBytes, maximumFrameSize)
            let last = length == block.readableBytes
            var flags: UInt8 = last ? HTTP2Frame.Flag.endHeaders : 0
            if first, endStream { flags |= HTTP2Frame.Flag.endStream }
            writeHTTP2FrameHeader(length: length, kind: first ? .headers : .continuation, flags: flags, stream: stream)
            var piece = block.readSlice(length: length)!
            writeBuffer(&piece)
            first = false
        } while block.readableBytes > 0
    }
}
