import CFerryZlib
import FerryCore
import Foundation
import NIOCore

/// permessage-deflate (RFC 7692) for a WebSocket client: the offer, the server's answer, and zlib's raw
/// DEFLATE over each message. Lives on the connection's event loop (not Sendable).
///
/// Why zlib directly: the extension is two raw DEFLATE streams with a flush per message, which is what
/// zlib's API is; CFerryZlib already links it for Content-Encoding. swift-websocket's WSCompression does
/// the same over compress-nio, but behind an async extension protocol made for its own handler.
final class PerMessageDeflate {
    /// What the server agreed to (RFC 7692 §7.1).
    struct Parameters: Equatable, Sendable {
        var serverNoContextTakeover = false
        var clientNoContextTakeover = false
        var serverMaxWindowBits = 15
        var clientMaxWindowBits = 15

        /// The client's offers, in order of preference (RFC 7692 §5): first keeping the compression context
        /// between messages (better ratios); then, for servers that take only clients that will not keep
        /// it, with client_no_context_takeover. Either lets the server pick our window. The answer's
        /// parameters say which was taken: with client_no_context_takeover, each message is compressed
        /// on its own.
        static let offer = "permessage-deflate; client_max_window_bits, permessage-deflate; client_no_context_takeover; client_max_window_bits"

        /// The server's `Sec-WebSocket-Extensions` answer: nil when it did not accept permessage-deflate.
        /// - Throws: a reason when it names an extension not offered, or parameters RFC 7692 forbids.
        static func accepted(_ values: [String]) throws -> Parameters? {
            var found: Parameters?
            for value in values {
                for element in value.split(separator: ",") {
                    var parts = element.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                    guard !parts.isEmpty else { continue }
                    let name = parts.removeFirst().lowercased()
                    guard name == "permessage-deflate" else {
                        throw Failure.refused("the server agreed to the extension \(name), which was not offered")
                    }
                    guard found == nil else { throw Failure.refused("the server agreed to permessage-deflate twice") }
                    var parameters = Parameters()
                    var seen = Set<String>()
                    for part in parts {
                        let pair = part.split(separator: "=", maxSplits: 1).map {
                            $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                        }
                        let key = pair[0].lowercased()
                        guard seen.insert(key).inserted else {
                            throw Failure.refused("the server repeated the permessage-deflate parameter \(key)")
                        }
                        let bits = pair.count == 2 ? Int(pair[1]) : nil
                        switch key {
                        case "server_no_context_takeover" where pair.count == 1:
                            parameters.serverNoContextTakeover = true
                        case "client_no_context_takeover" where pair.count == 1:
                            parameters.clientNoContextTakeover = true
                        case "server_max_window_bits":
                            guard let bits, (8...15).contains(bits) else {
                                throw Failure.refused("the server's server_max_window_bits is not 8 to 15")
                            }
                            parameters.serverMaxWindowBits = bits
                        case "client_max_window_bits":
                            guard let bits, (8...15).contains(bits) else {
                                throw Failure.refused("the server's client_max_window_bits is not 8 to 15")
                            }
                            parameters.clientMaxWindowBits = bits
                        default:
                            throw Failure.refused("the server's permessage-deflate parameter \(part) is not RFC 7692's")
                        }
                    }
                    found = parameters
                }
            }
            return found
        }
    }

    enum Failure: Error, CustomStringConvertible {
        case refused(String)
        case tooLarge
        case zlib(Int32)

        var description: String {
            switch self {
            case .refused(let reason): reason
            case .tooLarge: "the message inflates past the size allowed"
            case .zlib(let status): "zlib error \(status)"
            }
        }
    }

    let parameters: Parameters
    private var inflater = z_stream()
    private var deflater = z_stream()
    private var inflaterReady = false
    private var deflaterReady = false

    init(_ parameters: Parameters) {
        self.parameters = parameters
    }

    deinit {
        if inflaterReady { inflateEnd(&inflater) }
        if deflaterReady { deflateEnd(&deflater) }
    }

    /// The message's bytes from its compressed payload (the frames' joined content).
    func inflate(_ payload: ByteBuffer, limit: Int) throws -> ByteBuffer {
        if !inflaterReady {
            // Always the largest window: a smaller server_max_window_bits only promises less.
            guard inflateInit2_(&inflater, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
                throw Failure.zlib(Z_STREAM_ERROR)
            }
            inflaterReady = true
        }
        // §7.2.2: the sender removed the empty block's tail; it goes back before inflating.
        var input = Array(payload.readableBytesView)
        input += [0x00, 0x00, 0xFF, 0xFF]
        var output = ByteBuffer()
        try input.withUnsafeMutableBufferPointer { source in
            inflater.next_in = source.baseAddress
            inflater.avail_in = uInt(source.count)
            while true {
                var status: Int32 = Z_OK
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: max(4096, min(65536, source.count * 4))) { target in
                    inflater.next_out = target.baseAddress?.assumingMemoryBound(to: UInt8.self)
                    inflater.avail_out = uInt(target.count)
                    status = CFerryZlib.inflate(&inflater, Z_SYNC_FLUSH)
                    return target.count - Int(inflater.avail_out)
                }
                if output.readableBytes > limit { throw Failure.tooLarge }
                switch status {
                case Z_OK where inflater.avail_in > 0 || inflater.avail_out == 0:
                    continue
                case Z_OK, Z_BUF_ERROR:
                    guard inflater.avail_in == 0 else { throw Failure.zlib(status) }
                    return
                case Z_STREAM_END:
                    // A final block (BFINAL): the next message starts a new stream.
                    inflateReset(&inflater)
                    return
                default:
                    throw Failure.zlib(status)
                }
            }
        }
        if parameters.serverNoContextTakeover { inflateReset(&inflater) }
        return output
    }

    /// The compressed payload for a message's bytes (to send with RSV1 set).
    func deflate(_ message: ByteBuffer) throws -> ByteBuffer {
        if !deflaterReady {
            // zlib takes 9 for 8 (its smallest raw window); a window of 512 bytes is what it can do.
            let bits = Int32(max(9, parameters.clientMaxWindowBits))
            guard
                deflateInit2_(
                    &deflater,
                    Z_DEFAULT_COMPRESSION,
                    Z_DEFLATED,
                    -bits,
                    8,
                    Z_DEFAULT_STRATEGY,
                    zlibVersion(),
                    Int32(MemoryLayout<z_stream>.size)
                ) == Z_OK
            else { throw Failure.zlib(Z_STREAM_ERROR) }
            deflaterReady = true
        }
        var input = Array(message.readableBytesView)
        var output = ByteBuffer()
        try input.withUnsafeMutableBufferPointer { source in
            deflater.next_in = source.baseAddress
            deflater.avail_in = uInt(source.count)
            while true {
                var status: Int32 = Z_OK
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: max(64, source.count / 2 + 64)) { target in
                    deflater.next_out = target.baseAddress?.assumingMemoryBound(to: UInt8.self)
                    deflater.avail_out = uInt(target.count)
                    status = CFerryZlib.deflate(&deflater, Z_SYNC_FLUSH)
                    return target.count - Int(deflater.avail_out)
                }
                guard status == Z_OK || status == Z_BUF_ERROR else { throw Failure.zlib(status) }
                if deflater.avail_out != 0 { break }
            }
        }
        // §7.2.1: the sync flush's empty block tail (00 00 FF FF) is not sent.
        if output.readableBytes >= 4, output.readableBytesView.suffix(4).elementsEqual([0x00, 0x00, 0xFF, 0xFF]) {
            output.moveWriterIndex(to: output.writerIndex - 4)
        }
        if parameters.clientNoContextTakeover { deflateReset(&deflater) }
        return output
    }
}
