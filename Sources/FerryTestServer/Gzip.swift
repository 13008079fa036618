import CFerryZlib

/// gzip compression and decompression (RFC 1952) through the system zlib.
///
/// The test server compresses whole bodies in memory (`gzip=1` is for checking a client's decoding, not
/// for large transfers), so one-shot functions are enough.
public enum Gzip {
    /// What went wrong inside zlib.
    public struct Failure: Error, CustomStringConvertible {
        /// zlib's return code.
        public var code: Int32
        public var description: String { "zlib failed with code \(code)" }
    }

    /// Compresses `input` into a gzip member.
    public static func compress(_ input: [UInt8]) throws -> [UInt8] {
        var stream = z_stream()
        var status = deflateInit2_(
            &stream,
            Z_DEFAULT_COMPRESSION,
            Z_DEFLATED,
            15 + 16,
            8,
            Z_DEFAULT_STRATEGY,
            zlibVersion(),
            Int32(MemoryLayout<z_stream>.size)
        )
        guard status == Z_OK else { throw Failure(code: status) }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 32)
        var input = input
        status = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = uInt(outBuffer.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { throw Failure(code: status) }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }

    /// Decompresses a gzip member.
    public static func decompress(_ input: [UInt8]) throws -> [UInt8] {
        var stream = z_stream()
        var status = inflateInit2_(&stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw Failure(code: status) }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var input = input
        try input.withUnsafeMutableBufferPointer { inBuffer in
            stream.next_in = inBuffer.baseAddress
            stream.avail_in = uInt(inBuffer.count)
            repeat {
                let produced = chunk.withUnsafeMutableBufferPointer { outBuffer -> Int in
                    stream.next_out = outBuffer.baseAddress
                    stream.avail_out = uInt(outBuffer.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return outBuffer.count - Int(stream.avail_out)
                }
                output.append(contentsOf: chunk[0..<produced])
                guard status == Z_OK || status == Z_STREAM_END else { throw Failure(code: status) }
                if status == Z_OK && produced == 0 && stream.avail_in == 0 { throw Failure(code: Z_BUF_ERROR) }
            } while status != Z_STREAM_END
        }
        return output
    }
}
