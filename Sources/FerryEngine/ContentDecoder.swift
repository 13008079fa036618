import CFerryZlib
public import FerryCore
public import NIOCore

/// Undoes a response's `Content-Encoding: gzip` or `deflate` as the body arrives (zlib's inflate,
/// streaming: memory does not grow with the body). Data tasks decode, as URLSession's do; downloads keep
/// the bytes as they were sent, as curl does without `--compressed`.
public final class ContentDecoder {
    /// What a client that decodes says it takes.
    public static let acceptEncoding = "gzip, deflate"

    private let encoding: String
    private var stream = z_stream()
    private var started = false
    private var finished = false
    /// The first bytes of a deflate body, until there are two: they tell a zlib header from raw DEFLATE.
    private var head: [UInt8] = []

    /// A decoder for `headers`' Content-Encoding, or nil when it is absent, `identity`, or one this does
    /// not undo (the body is then left as it came).
    public init?(headers: Headers) {
        guard let value = headers["content-encoding"]?.trimmingCharacters(in: .whitespaces).lowercased(),
            ["gzip", "x-gzip", "deflate"].contains(value)
        else { return nil }
        encoding = value
    }

    deinit {
        if started { inflateEnd(&stream) }
    }

    /// The decoded bytes of the next encoded `chunk`.
    /// - Throws: ``FerryError/Code/cannotDecodeContentData`` when the bytes are not what the header says.
    public func decode(_ chunk: ByteBuffer) throws -> ByteBuffer {
        var input = Array(chunk.readableBytesView)
        if !started {
            var windowBits: Int32 = 15 + 16  // gzip
            if encoding == "deflate" {
                head += input
                guard head.count >= 2 else { return ByteBuffer() }
                input = head
                head = []
                // RFC 9110 says zlib (RFC 1950); some servers send raw DEFLATE: a zlib header is CM 8 and
                // a multiple of 31.
                let isZlib = input[0] & 0x0F == 8 && (UInt16(input[0]) << 8 | UInt16(input[1])) % 31 == 0
                windowBits = isZlib ? 15 : -15
            }
            guard inflateInit2_(&stream, windowBits, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
                throw FerryError(.cannotDecodeContentData, "zlib could not start decoding the \(encoding) body")
            }
            started = true
        }
        var output = ByteBuffer()
        guard !finished, !input.isEmpty else { return output }
        try input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            let step = min(64 * 1024, max(4096, source.count * 8))
            while true {
                // zlib writes straight into the output buffer's free space.
                var status: Int32 = Z_OK
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: step) { target in
                    stream.next_out = target.baseAddress?.assumingMemoryBound(to: UInt8.self)
                    stream.avail_out = uInt(target.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return target.count - Int(stream.avail_out)
                }
                switch status {
                case Z_STREAM_END:
                    finished = true
                    return
                case Z_OK where stream.avail_out == 0:
                    continue  // more output waits
                case Z_OK, Z_BUF_ERROR:
                    return  // this chunk is used up
                default:
                    throw FerryError(
                        .cannotDecodeContentData,
                        "the body is not valid \(encoding) data (zlib \(status)), though its Content-Encoding says so"
                    )
                }
            }
        }
        return output
    }

    /// Checks that the body ended where its encoding does.
    /// - Throws: ``FerryError/Code/cannotDecodeContentData`` for a body cut short.
    public func finish() throws {
        guard finished || (!started && head.isEmpty) else {
            throw FerryError(.cannotDecodeContentData, "the \(encoding) body ended before its end (it was cut short)")
        }
    }
}
