import FerryCore
import FerryQUIC
import Foundation
import NIOCore
import NIOHTTP1

/// Request streams' answers: frames read in order (a head that waits for QPACK inserts holds the
/// frames behind it), each exchange's ``ExchangeStateMachine`` fed with heads, body bytes, trailers and
/// the end, and a broken rule ending the exchange or the connection (``HTTP3Violation``).
extension HTTP3Connection {
    func streamData(_ id: UInt64, _ data: [UInt8], fin: Bool) {
        // Taken out and put back, so the dictionary's copy does not force one of the exchange's buffers.
        guard var exchange = exchanges.removeValue(forKey: id) else {
            serverStreamData(id, data)
            return
        }
        do {
            let parts = try exchange.reader.feed(data)
            var bodyBytes = 0
            for case .data(let bytes) in parts { bodyBytes += bytes.count }
            // Frame overhead counts as read once acted on; body bytes as the reader takes them (flow
            // control follows the reader).
            exchange.unconsumed += data.count - bodyBytes
            if exchange.queued.isEmpty { exchange.queued = parts } else { exchange.queued += parts }
            exchange.finReceived = exchange.finReceived || fin
        } catch {
            exchanges[id] = exchange
            return violated(HTTP3Violation(stream: "the server's HTTP/3 answer is malformed: \(error)"), on: id)
        }
        process(exchange, id: id)
    }

    /// Acts on exchange `id`'s frames in order, up to a head that waits for QPACK inserts.
    /// (`consuming`: the exchange is moved in, not copied, so its body buffer stays uniquely held and
    /// grows in place. Borrowed and copied, 256 MiB from caddy took 1.65–1.79 CPU s; moved, 1.42–1.60.)
    func process(_ taken: consuming Exchange, id: UInt64) {
        var exchange = taken
        var done = 0
        do throws(HTTP3Violation) {
            frames: for part in exchange.queued {
                if exchange.trailersReceived, case .other = part {} else if exchange.trailersReceived {
                    throw HTTP3Violation(stream: "the server sent a frame after the response's trailers")
                }
                switch part {
                case .headers(let section):
                    guard try receivedFields(section, exchange: &exchange, id: id) else { break frames }
                case .data(let bytes):
                    do {
                        try exchange.machine.receivedBody(count: bytes.count)
                    } catch {
                        throw HTTP3Violation(error.error)
                    }
                    #if DEBUG
                    bodyBytesReceived += bytes.count
                    #endif
                    exchange.unread.writeBytes(bytes)
                case .other(let type, _):
                    if let violation = HTTP3Frame.violationOnRequestStream(type: type) {
                        throw HTTP3Violation(connection: violation.code, violation.words)
                    }
                }
                done += 1
            }
        } catch {
            exchanges[id] = exchange
            return violated(error, on: id)
        }
        exchange.queued.removeFirst(done)
        sendDecoderInstructions()
        guard exchange.queued.isEmpty else {
            // Blocked: nothing more is read as done until the inserts arrive.
            exchanges[id] = exchange
            return
        }
        if exchange.unconsumed > 0 {
            transmit(quic.consume(exchange.unconsumed, on: id))
            exchange.unconsumed = 0
        }
        guard exchange.finReceived else {
            exchanges[id] = exchange
            return
        }
        ended(exchange, id: id)
    }

    /// What QPACK's decoding side has to tell the server, on this side's decoder stream.
    func sendDecoderInstructions() {
        let instructions = qpack.takeInstructions()
        guard !instructions.isEmpty, let decoderStreamID else { return }
        transmit(quic.send(instructions, on: decoderStreamID))
    }

    /// The server ended stream `id`'s response (its FIN arrived).
    private func ended(_ taken: consuming Exchange, id: UInt64) {
        var exchange = taken
        let end: ExchangeStateMachine.End
        do throws(ExchangeStateMachine.Failure) {
            guard exchange.reader.isAtFrameBoundary else {
                throw ExchangeStateMachine.Failure(
                    FerryError(.networkConnectionLost, "the server ended the HTTP/3 stream in the middle of a frame")
                )
            }
            end = try exchange.machine.responseEnded()
        } catch {
            exchanges[id] = exchange
            return fail(id, error.error, code: 0x10e)
        }
        exchange.deadlineTimer?.cancel()
        if end.requestAbandoned {
            // An answer before the whole request (an early 413, say): it stands, and the rest of the
            // request is not sent (RFC 9114 §4.1: RESET_STREAM with H3_NO_ERROR).
            exchange.bodyWaiter?.fail(FerryError(.cancelled, "the server answered before the request body was sent"))
            exchange.bodyWaiter = nil
            transmit(quic.cancel(stream: id, errorCode: 0x100))
        }
        // Requests waiting for a stream: the server raises its limit as streams end, but some servers
        // (aioquic) only say so when they next write; a PING makes them.
        if !waiting.isEmpty { transmit(quic.ping()) }
        if let head = end.answerWithHead {
            // The whole answer came in this read: it goes with its body, no sequence needed.
            exchange.head?.succeed(response(head, id: id, body: TransportBodyStream(buffer: exchange.unread)))
            exchange.head = nil
            return
        }
        deliver(&exchange, id: id)
        exchange.source?.finish()
    }

    /// A header section on a request stream: the response's head (an informational one is passed
    /// over; the final one is held until the read batch ends) or its trailers. The fields follow RFC
    /// 9114 §4.2-4.3, the rules HTTP/2 has. False when the section waits for QPACK inserts.
    private func receivedFields(_ section: [UInt8], exchange: inout Exchange, id: UInt64) throws(HTTP3Violation) -> Bool {
        let fields: [(name: String, value: String)]
        do {
            switch try qpack.decode(section, stream: id) {
            case .fields(let decoded): fields = decoded
            case .blocked: return false
            }
        } catch {
            throw HTTP3Violation(connection: 0x200, "the server's QPACK field section cannot be decoded (QPACK_DECOMPRESSION_FAILED): \(error)")
        }
        let isTrailers = exchange.machine.response != .awaitingHead
        if let problem = HTTP2ResponseFields.problem(fields, trailers: isTrailers) {
            throw HTTP3Violation(stream: "the server sent a malformed HTTP/3 response: \(problem)")
        }
        do throws(ExchangeStateMachine.Failure) {
            if isTrailers {
                try exchange.machine.receivedTrailers(endsResponse: true)
                exchange.trailersReceived = true
                return true
            }
            var headers = HTTPHeaders()
            var status: Int?
            for field in fields {
                if field.name == ":status" { status = Int(field.value) } else { headers.add(name: field.name, value: field.value) }
            }
            guard let status, (100...999).contains(status) else {
                throw ExchangeStateMachine.Failure("the server's HTTP/3 response has no valid :status")
            }
            guard status != 101 else {
                throw ExchangeStateMachine.Failure("the server answered 101 over HTTP/3, which has no protocol switch (RFC 9114 §4.4)")
            }
            let head = HTTPResponseHead(version: .init(major: 3, minor: 0), status: .init(statusCode: status), headers: headers)
            if try exchange.machine.receivedHead(head) == .final { heldHeads.append(id) }
            return true
        } catch {
            throw HTTP3Violation(error.error)
        }
    }

    /// Hands over exchange `id`'s response `head` with a sequence its body streams through.
    func startStreaming(_ exchange: inout Exchange, id: UInt64, head: HTTPResponseHead) {
        let sequence = ResponseBodyProducer.makeSequence(
            elementType: ByteBuffer.self,
            backPressureStrategy: .init(lowWatermark: 8, highWatermark: 64),
            finishOnDeinit: false,
            delegate: HTTP3BodyDemand(connection: self, id: id)
        )
        exchange.source = sequence.source
        exchange.head?.succeed(response(head, id: id, body: TransportBodyStream(sequence.sequence)))
        exchange.head = nil
        deliver(&exchange, id: id)
    }

    private func response(_ head: HTTPResponseHead, id: UInt64, body: TransportBodyStream) -> TransportResponse {
        var headers = Headers()
        for (name, value) in head.headers { headers.add(name: name, value: value) }
        var timing = TransportTiming(responseStart: Date(), reusedConnection: false)
        timing.tlsVersion = "TLS 1.3"
        timing.remoteAddress = remote.ipAddress.map { "\($0):\(port)" }
        return TransportResponse(
            status: Int(head.status.code),
            headers: headers,
            protocolName: "h3",
            body: body,
            timing: timing,
            cancel: { [self] in eventLoop.execute { self.fail(id, FerryError(.cancelled, "the transfer was cancelled")) } }
        )
    }

    /// What a broken rule ends: the exchange (H3_MESSAGE_ERROR on the stream) or the connection.
    private func violated(_ violation: HTTP3Violation, on id: UInt64) {
        guard let code = violation.connectionCode else { return fail(id, violation.error, code: 0x10e) }
        transmit(quic.close(errorCode: code, reason: violation.error.message))
        fail(violation.error)
    }
}
