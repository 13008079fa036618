import FerryCore
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP1

/// The streams' ends and their content: handing heads and bodies over, failing and removing
/// streams, flow control for what the readers took, and request content within the server's windows.
extension HTTP2ClientHandler {
    /// The server ended stream `id`'s response.
    func responseEnded(_ id: UInt32, context: ChannelHandlerContext) {
        guard let stream = streams[id] else { return }
        let end: ExchangeStateMachine.End
        do {
            end = try stream.machine.responseEnded()
        } catch {
            fail(id, error.error, reset: nil)
            return
        }
        if end.requestAbandoned {
            // An answer before the whole request (an early 413, say): the rest is not sent (RFC 9113 §8.1).
            for pending in stream.outbound { pending.promise?.fail(FerryError(.cancelled, "the server answered before the whole request")) }
            stream.outbound = []
            queue(context: context) { $0.writeHTTP2ResetStream(stream: id, code: .noError) }
        }
        finish(id, head: end.answerWithHead)
    }

    /// Ends stream `id` with its response complete; `head` when the caller has not been given it yet.
    func finish(_ id: UInt32, head: HTTPResponseHead?) {
        guard let stream = remove(id) else { return }
        let pieces = stream.takeBatch()
        stream.shared.finished()
        if let head, pieces.count <= 1 {
            // The whole answer came in this read: it goes with its content, no sequence needed.
            let promise = stream.answer
            stream.answer = nil
            promise?.succeed(ExchangeAnswer(head: head, body: .complete(pieces.first ?? ByteBuffer())))
            return
        }
        if let head { startStreaming(stream, head: head) }
        if !pieces.isEmpty { _ = stream.source?.yield(contentsOf: pieces) }
        stream.source?.finish()
    }

    /// Hands stream `id`'s response head over with a sequence its content streams through (its read is
    /// done and the stream goes on).
    func startStreaming(_ id: UInt32) {
        guard let stream = streams[id], let head = stream.machine.handOverHead() else { return }
        startStreaming(stream, head: head)
    }

    func startStreaming(_ stream: HTTP2Stream, head: HTTPResponseHead) {
        // Pieces are up to 64 KiB (content is copied into buffers of that size): up to 4 MiB, the
        // stream's window, waits for the reader. With 2 and 4, as over HTTP/1.1, the reader paused and
        // resumed thousands of times a GiB when pieces were 8 KiB DATA frames, each a wake-up of the
        // loop (4,029 eventfd writes for 1 GiB, measured).
        let made = ResponseBody.make(
            slot: stream.slot,
            shared: stream.shared,
            id: stream.exchange,
            watermarks: (16, 64)
        )
        let promise = stream.answer
        stream.answer = nil
        stream.source = made.source
        promise?.succeed(ExchangeAnswer(head: head, body: .streaming(made.sequence)))
    }

    /// Ends stream `id` with `error`, telling the server with RST_STREAM `reset` when given.
    func fail(_ id: UInt32, _ error: any Error, reset code: HTTP2Frame.ErrorCode?) {
        guard let stream = remove(id) else { return }
        if let code, let context, !closed {
            queue(context: context) { $0.writeHTTP2ResetStream(stream: id, code: code) }
            flushIfNeeded(context: context)
        }
        for pending in stream.outbound { pending.promise?.fail(error) }
        stream.shared.finished()
        switch stream.machine.fail() {
        case .failAnswer: stream.answer?.fail(error)
        case .failBody: stream.source?.finish(error)
        case .nothing: break
        }
    }

    func remove(_ id: UInt32) -> HTTP2Stream? {
        guard let stream = streams.removeValue(forKey: id) else { return nil }
        exchanges[stream.exchange] = nil
        events.streamClosed()
        if let context { closeIfDrained(context: context) }
        return stream
    }

    /// After GOAWAY, the connection closes once its last stream has ended.
    func closeIfDrained(context: ChannelHandlerContext) {
        guard goingAway, streams.isEmpty, !closed else { return }
        closed = true
        flushIfNeeded(context: context)
        context.close(promise: nil)
    }

    /// Gives each reader what arrived for it in this read, and the server window for what it took.
    func handOverBatches() {
        for id in batched {
            guard let stream = streams[id] else { continue }
            let pieces = stream.takeBatch()
            guard !pieces.isEmpty else { continue }
            if stream.source?.yield(contentsOf: pieces) == .stopProducing { stream.paused = true }
            acknowledge(id)
        }
        batched.removeAll(keepingCapacity: true)
    }

    /// Gives the server window again for what stream `id` received, unless its reader is full, once a
    /// quarter of the window is owed (fewer frames; the server still has three quarters to send into).
    func acknowledge(_ id: UInt32) {
        guard let stream = streams[id], !stream.paused, stream.machine.response != .complete, stream.unacknowledged > 0,
            stream.unacknowledged >= settings.streamWindow / 4, let context
        else { return }
        let increment = stream.unacknowledged
        stream.unacknowledged = 0
        stream.receiveWindow += increment
        queue(context: context) { $0.writeHTTP2WindowUpdate(stream: id, increment: increment) }
    }

    /// Writes what the windows allow of every stream's waiting content (a window grew).
    func sendAllOutbound(context: ChannelHandlerContext) {
        for id in Array(streams.keys) { sendOutbound(id, context: context) }
    }

    /// Writes what the windows allow of stream `id`'s waiting content.
    func sendOutbound(_ id: UInt32, context: ChannelHandlerContext) {
        guard let stream = streams[id] else { return }
        while let (waiting, end, given) = stream.outbound.first {
            var bytes = waiting
            var promise = given
            let allowed = min(stream.sendWindow, connectionSendWindow, peerMaximumFrameSize)
            if bytes.readableBytes > 0, allowed <= 0 { break }
            let count = min(allowed, bytes.readableBytes)
            let last = count == bytes.readableBytes
            let piece = bytes.readSlice(length: count)!
            stream.sendWindow -= count
            connectionSendWindow -= count
            var frame = takeOutbox(context: context, capacity: HTTP2Frame.headerLength)
            frame.writeHTTP2FrameHeader(
                length: count,
                kind: .data,
                flags: last && end ? HTTP2Frame.Flag.endStream : 0,
                stream: id
            )
            context.write(wrapOutboundOut(frame), promise: nil)
            if last {
                stream.outbound.removeFirst()
                if end {
                    // (Written only while the request is being sent: ``send(exchange:_:end:promise:)``'s guard.)
                    _ = try? stream.machine.requestSent()
                    let shared = stream.shared
                    let written = context.eventLoop.makePromise(of: Void.self)
                    written.futureResult.whenSuccess { shared.timing.withLockedValue { $0.requestEnd = Date() } }
                    if let promise { written.futureResult.cascade(to: promise) }
                    promise = written
                }
                context.write(wrapOutboundOut(piece), promise: promise)
            } else {
                stream.outbound[0].bytes = bytes
                context.write(wrapOutboundOut(piece), promise: nil)
            }
            needsFlush = true
        }
    }
}
