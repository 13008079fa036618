import FerryCore
import FerryQUIC
import NIOCore

/// Request bodies that stream (a file being uploaded) over HTTP/3: read a piece at a time, each sent
/// as a DATA frame once what was queued before has mostly gone out, so the body never sits in memory
/// beyond a window's worth, whatever flow control and the congestion window allow.
extension HTTP3Connection {
    /// At most this many bytes of a body wait in the connection's queue before the next piece is read.
    static let bodyQueueLimit = 256 << 10

    /// Sends `body` on stream `id`, ending the stream after it (with a length, the piece that
    /// completes it; a body shorter or longer than its length fails the exchange).
    func pump(_ body: TransportBodyStream, length: Int64?, on id: UInt64) async {
        do {
            var sent: Int64 = 0
            for try await chunk in body {
                sent += Int64(chunk.readableBytes)
                try NetworkTransport.checkBodyLength(sent: sent, of: length, ended: false)
                try await eventLoop.flatSubmit { self.send(chunk, end: false, on: id) }.get()
            }
            try NetworkTransport.checkBodyLength(sent: sent, of: length, ended: true)
            try await eventLoop.flatSubmit { self.send(ByteBuffer(), end: true, on: id) }.get()
        } catch let error as FerryError where error.code == .cancelled {
            // The exchange ended first (the server answered, or the caller went away): nothing to add.
        } catch {
            let failure = error as? FerryError ?? FerryError(.cannotDecodeContentData, "the request body could not be read: \(error)")
            eventLoop.execute { self.fail(id, failure) }
        }
    }

    /// One piece of a body on stream `id` (its end when `end`); done once the queue is short again.
    private func send(_ chunk: ByteBuffer, end: Bool, on id: UInt64) -> EventLoopFuture<Void> {
        guard var exchange = exchanges[id] else {
            return eventLoop.makeFailedFuture(FerryError(.cancelled, "the exchange ended before its request body was sent"))
        }
        let promise = eventLoop.makePromise(of: Void.self)
        exchange.bodyWaiter = promise
        if end {
            // Written only while the request is being sent (an answer that ended first removed it).
            _ = try? exchange.machine.requestSent()
        }
        exchanges[id] = exchange
        let frame = chunk.readableBytes > 0 ? HTTP3Frame.data(Array(chunk.readableBytesView)).encoded : []
        transmit(quic.send(frame, on: id, fin: end))
        return promise.futureResult
    }

    /// Body writers whose queue is short again may write the next piece.
    func releaseBodyWriters() {
        for (id, exchange) in exchanges where exchange.bodyWaiter != nil && quic.queuedBytes(on: id) <= Self.bodyQueueLimit {
            exchanges[id]?.bodyWaiter = nil
            exchange.bodyWaiter?.succeed()
        }
    }
}
