import FerryCore
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP1

/// Writing frames (control frames gathered in an outbox, flushed once per read), connection errors,
/// and the timers: every stream's idle and resource timeouts, and the idle connection's PING.
extension HTTP2ClientHandler {
    /// Appends a control frame to the outbox (written with the next write, or at the end of the read).
    func queue(context: ChannelHandlerContext, _ write: (inout ByteBuffer) -> Void) {
        if outbox == nil { outbox = context.channel.allocator.buffer(capacity: 64) }
        write(&outbox!)
        needsFlush = true
    }

    /// The outbox's frames, to be written ahead of a frame of `capacity` more bytes.
    func takeOutbox(context: ChannelHandlerContext, capacity: Int) -> ByteBuffer {
        if var frames = outbox {
            outbox = nil
            frames.reserveCapacity(minimumWritableBytes: capacity)
            return frames
        }
        return context.channel.allocator.buffer(capacity: capacity)
    }

    func flushIfNeeded(context: ChannelHandlerContext) {
        if let frames = outbox {
            outbox = nil
            context.write(wrapOutboundOut(frames), promise: nil)
            needsFlush = true
        }
        if needsFlush {
            needsFlush = false
            context.flush()
        }
    }

    /// Counts an answer (PING or SETTINGS acknowledgement) queued while the connection cannot write:
    /// a server that sends frames to be answered and reads none of the answers makes them pile up
    /// (370 MB under a PING flood before this). Past ``maximumUnwrittenAnswers`` it is a flood:
    /// ENHANCE_YOUR_CALM, as nghttp2 answers it.
    /// Also past ``maximumAnswersInARow`` PING and SETTINGS frames with nothing else between them (no
    /// response, no data, no request of ours): a loopback socket's buffers hold hundreds of thousands of
    /// answers before the connection stops being writable, each costing a moment of a core.
    func countAnswer(context: ChannelHandlerContext, _ frame: String) throws {
        answersInARow += 1
        guard answersInARow <= Self.maximumAnswersInARow else {
            throw HTTP2Frame.Violation(
                code: .enhanceYourCalm,
                message: "more than \(Self.maximumAnswersInARow) PING and SETTINGS frames in a row with nothing else (a flood)"
            )
        }
        guard !context.channel.isWritable else { return }
        unwrittenAnswers += 1
        guard unwrittenAnswers <= Self.maximumUnwrittenAnswers else {
            throw HTTP2Frame.Violation(
                code: .enhanceYourCalm,
                message: "more than \(Self.maximumUnwrittenAnswers) \(frame) frames to answer while it reads none of the answers (a flood)"
            )
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { unwrittenAnswers = 0 }
        context.fireChannelWritabilityChanged()
    }

    /// A protocol breach by the server: GOAWAY names it, every stream fails, the connection closes.
    func connectionError(_ violation: HTTP2Frame.Violation, context: ChannelHandlerContext) {
        guard !closed else { return }
        goingAway = true
        queue(context: context) {
            $0.writeHTTP2GoAway(lastStream: 0, code: violation.code, message: violation.message)
        }
        flushIfNeeded(context: context)
        let failure = FerryError(.badServerResponse, "the server broke the HTTP/2 protocol: \(violation.message)")
        for id in Array(streams.keys) { fail(id, failure, reset: nil) }
        closed = true
        context.close(promise: nil)
    }

    func checkServerStream(_ id: UInt32, _ frame: String) throws {
        guard id != 0 else {
            throw HTTP2Frame.Violation(code: .protocolError, message: "\(frame) on stream 0")
        }
        guard id & 1 == 1, id < nextStream else {
            throw HTTP2Frame.Violation(code: .protocolError, message: "\(frame) on stream \(id), which this client never opened")
        }
    }

    static func unpadded(_ payload: ByteBuffer, _ frame: String) throws -> ByteBuffer {
        var payload = payload
        guard let padding = payload.readInteger(as: UInt8.self), Int(padding) <= payload.readableBytes else {
            throw HTTP2Frame.Violation(code: .protocolError, message: "a \(frame) frame's padding is longer than the frame")
        }
        return payload.readSlice(length: payload.readableBytes - Int(padding))!
    }

    // MARK: Timers

    /// Makes the stream watchdog fire by `due` (sooner if it already would).
    func armStreamWatchdog(_ due: NIODeadline, context: ChannelHandlerContext) {
        streamWatchdog.arm(due, on: context.eventLoop) { [self] in streamWatchdogFired() }
    }

    /// Ends the streams past their resource timeout or quiet for their idle timeout, and sets the
    /// watchdog for the next moment that matters to the others.
    func streamWatchdogFired() {
        streamWatchdog.reset()
        guard let context else { return }
        let now = context.eventLoop.now
        var next = NIODeadline.distantFuture
        for (id, stream) in streams.sorted(by: { $0.key < $1.key }) {
            switch ExchangeEnds.check(
                deadline: stream.deadline,
                paused: stream.paused,
                lastActivity: stream.lastActivity,
                idle: stream.idle,
                now: now
            ) {
            case .ended(let error): fail(id, error, reset: .cancel)
            case .checkAgain(let due): next = min(next, due)
            }
        }
        if next < .distantFuture, self.context != nil { armStreamWatchdog(next, context: context) }
    }

    func arm(context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: settings.pingInterval) { [self] in
            tick(context: context)
        }
    }

    /// Every `pingInterval`: an idle connection is pinged, and closed when the previous PING went
    /// unanswered (its peer is gone) or once it has been idle for `idleTimeout`.
    func tick(context: ChannelHandlerContext) {
        guard context.channel.isActive, !closed else { return }
        guard streams.isEmpty, events.isIdle() else {
            // Streams are open: their own timeouts watch the connection.
            idleTicks = 0
            unansweredPing = nil
            arm(context: context)
            return
        }
        idleTicks += 1
        if unansweredPing != nil || settings.pingInterval * idleTicks >= settings.idleTimeout {
            announceGoAway()
            queue(context: context) { $0.writeHTTP2GoAway(lastStream: 0, code: .noError) }
            closed = true
            flushIfNeeded(context: context)
            context.close(promise: nil)
            return
        }
        pingsSent += 1
        unansweredPing = pingsSent
        queue(context: context) { [pingsSent] in $0.writeHTTP2Ping(pingsSent, ack: false) }
        flushIfNeeded(context: context)
        arm(context: context)
    }
}
