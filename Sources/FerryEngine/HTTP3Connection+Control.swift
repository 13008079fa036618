import FerryCore
import FerryQUIC
import NIOCore

/// The server's unidirectional streams (RFC 9114 §6.2): its control stream read for GOAWAY (§5.2),
/// its QPACK encoder stream into the dynamic table (RFC 9204 §4.2), the others (its QPACK decoder
/// stream, unknown types) read and set aside so their windows move.
extension HTTP3Connection {
    /// The most bytes of the control stream kept while a frame is incomplete.
    static let controlBufferLimit = 64 << 10

    /// Data on a server stream that carries no request.
    func serverStreamData(_ id: UInt64, _ data: [UInt8]) {
        transmit(quic.consume(data.count, on: id))
        guard id & 0x03 == 0x03, !otherServerStreams.contains(id) else { return }
        if id == encoderStreamID { return encoderStreamData(data) }
        var buffer = (serverStreamBuffers[id] ?? []) + data
        if controlStreamID != id {
            // The stream's type comes first: 0x00 is the control stream, 0x02 QPACK's encoder stream;
            // any other is set aside.
            var reader = QUICReader(buffer)
            guard let type = try? reader.readVarint() else {
                serverStreamBuffers[id] = buffer
                return
            }
            serverStreamBuffers[id] = nil
            buffer.removeFirst(reader.offset)
            if type == 0x02, encoderStreamID == nil {
                encoderStreamID = id
                return encoderStreamData(buffer)
            }
            guard type == 0x00, controlStreamID == nil else {
                otherServerStreams.insert(id)
                return
            }
            controlStreamID = id
        }
        do {
            let (frames, consumed) = try HTTP3Frame.parse(buffer)
            buffer.removeFirst(consumed)
            guard buffer.count <= Self.controlBufferLimit else { throw QUICError.malformed("a control frame past 64 KiB") }
            serverStreamBuffers[id] = buffer
            for case .goAway(let last) in frames { goAway(last) }
        } catch {
            fail(FerryError(.badServerResponse, "the server's HTTP/3 control stream is malformed: \(error)"))
        }
    }

    /// Bytes of the server's QPACK encoder stream: its inserts go into the table, and the streams whose
    /// heads waited for them go on.
    private func encoderStreamData(_ data: [UInt8]) {
        let unblocked: [UInt64]
        do {
            unblocked = try qpack.encoderStream(data)
        } catch {
            let words = "the server's QPACK encoder stream is malformed (QPACK_ENCODER_STREAM_ERROR): \(error)"
            transmit(quic.close(errorCode: 0x201, reason: words))
            return fail(FerryError(.badServerResponse, words))
        }
        sendDecoderInstructions()
        for id in unblocked {
            guard let exchange = exchanges.removeValue(forKey: id) else { continue }
            process(exchange, id: id)
        }
    }

    /// The server is going away (GOAWAY): no new request goes on this connection (the transport opens
    /// another), and requests on streams from `last` on still waiting for their answer were not
    /// processed: they are refused, so the transport sends them again. The others finish.
    func goAway(_ last: UInt64) {
        markUnusable()
        let reason = "it is closing the connection (HTTP/3 GOAWAY) and took no stream from \(last) on"
        for id in Array(exchanges.keys) where id >= last {
            // A request waiting for its answer is refused (the transport sends it again elsewhere).
            // One whose answer has begun was processed whatever the GOAWAY says: it goes on.
            guard exchanges[id]?.machine.receivedAnything == false else { continue }
            fail(id, ConnectionError.refused(reason))
        }
        let refused = waiting
        waiting = []
        for request in refused { request.promise.fail(ConnectionError.refused("it is closing the HTTP/3 connection (GOAWAY)")) }
    }
}
