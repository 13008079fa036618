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

    /// The most decoded bytes ``next(maximum:)`` hands out at once by default: a gzip bomb (10 MB that
    /// inflate to 10 GiB) is written out a piece at a time, never inflated whole into memory.
    public static let pieceSize = 1 << 20

    /// Encoded bytes given and not yet inflated, from ``inputOffset``.
    private var input: [UInt8] = []
    private var inputOffset = 0

    /// The decoded bytes of the next encoded `chunk`, all at once (for small bodies and tests; a
    /// download uses ``feed(_:)`` and ``next(maximum:)``, which bound memory).
    /// - Throws: ``FerryError/Code/cannotDecodeContentData`` when the bytes are not what the header says.
    public func decode(_ chunk: ByteBuffer) throws -> ByteBuffer {
        feed(chunk)
        var output = ByteBuffer()
        while var piece = try next() { output.writeBuffer(&piece) }
        return output
    }

    /// Adds the next encoded bytes; take what they decode to with ``next(maximum:)`` until it says nil.
    public func feed(_ chunk: ByteBuffer) {
        if inputOffset > 0, inputOffset == input.count {
            input.removeAll(keepingCapacity: true)
            inputOffset = 0
        }
        input.append(contentsOf: chunk.readableBytesView)
    }

    /// The next decoded bytes (at most `maximum`), or nil when the bytes fed so far are used up.
    /// Every member of a gzip body is decoded (RFC 1952 §2.2: a gzip file is a series of members);
    /// anything after the last member's end that is not another member, and anything after the end of
    /// a deflate body, is an error: the body is not what its Content-Encoding says.
    /// - Throws: ``FerryError/Code/cannotDecodeContentData``.
    public func next(maximum: Int = ContentDecoder.pieceSize) throws -> ByteBuffer? {
        if !started {
            guard try start() else { return nil }
        }
        var output = ByteBuffer()
        while output.readableBytes < maximum {
            guard inputOffset < input.count else { break }
            if finished {
                // Another gzip member may follow; nothing may follow a deflate body.
                guard encoding != "deflate" else { throw trailingData() }
                inflateReset(&stream)
                finished = false
                afterEnd = true
            }
            let (status, produced) = inflateStep(into: &output, room: maximum - output.readableBytes)
            if produced > 0 { afterEnd = false }
            switch status {
            case Z_STREAM_END:
                finished = true
                afterEnd = false
            case Z_OK, Z_BUF_ERROR:
                // The input is used up (what zlib holds back needs more of it).
                if inputOffset == input.count, output.readableBytes < maximum { return output.readableBytes > 0 ? output : nil }
            default:
                // Bytes after a complete member that do not start another one.
                if afterEnd { throw trailingData() }
                throw FerryError(
                    .cannotDecodeContentData,
                    "the body is not valid \(encoding) data (zlib \(status)), though its Content-Encoding says so"
                )
            }
        }
        return output.readableBytes > 0 ? output : nil
    }

    /// True from the end of a gzip member until the next one decodes a byte: an error then means the
    /// bytes after the body are not another member.
    private var afterEnd = false

    /// Starts zlib once the first bytes tell how (a deflate body: zlib-wrapped or raw); false while
    /// fewer than two bytes of a deflate body are in.
    private func start() throws -> Bool {
        var windowBits: Int32 = 15 + 16  // gzip
        if encoding == "deflate" {
            guard input.count - inputOffset >= 2 else { return false }
            let (first, second) = (input[inputOffset], input[inputOffset + 1])
            // RFC 9110 says zlib (RFC 1950); some servers send raw DEFLATE: a zlib header is CM 8 and a
            // multiple of 31.
            let isZlib = first & 0x0F == 8 && (UInt16(first) << 8 | UInt16(second)) % 31 == 0
            windowBits = isZlib ? 15 : -15
        }
        guard inflateInit2_(&stream, windowBits, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw FerryError(.cannotDecodeContentData, "zlib could not start decoding the \(encoding) body")
        }
        started = true
        return true
    }

    /// One inflate call from the unused input into at most `room` more bytes of `output`.
    private func inflateStep(into output: inout ByteBuffer, room: Int) -> (status: Int32, produced: Int) {
        var status: Int32 = Z_OK
        var produced = 0
        let available = input.count - inputOffset
        input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress! + inputOffset
            stream.avail_in = uInt(available)
            output.writeWithUnsafeMutableBytes(minimumWritableBytes: min(room, 64 * 1024)) { target in
                let size = min(target.count, room)
                stream.next_out = target.baseAddress?.assumingMemoryBound(to: UInt8.self)
                stream.avail_out = uInt(size)
                status = inflate(&stream, Z_NO_FLUSH)
                produced = size - Int(stream.avail_out)
                return produced
            }
        }
        inputOffset += available - Int(stream.avail_in)
        return (status, produced)
    }

    private func trailingData() -> FerryError {
        FerryError(
            .cannotDecodeContentData,
            "the \(encoding) body goes on after its end with \(input.count - inputOffset) bytes that are not \(encoding == "deflate" ? "part of it" : "another gzip member") (trailing garbage)"
        )
    }

    /// Checks that the body ended where its encoding does.
    /// - Throws: ``FerryError/Code/cannotDecodeContentData`` for a body cut short.
    public func finish() throws {
        guard finished || (!started && input.isEmpty) else {
            throw FerryError(.cannotDecodeContentData, "the \(encoding) body ended before its end (it was cut short)")
        }
    }
}
