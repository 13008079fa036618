import HTTPTypes
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOPosix

/// Sends one ``ResponsePlan`` on a channel: the optional delay, the head, then the body in large chunks
/// with backpressure (it writes only while the channel is writable), applying the plan's faults: throttle,
/// stall, close after N bytes, short body.
///
/// Lives on the channel's event loop, owned by ``RequestHandler``; its timers are cancelled when the
/// channel goes away.
final class ResponseWriter {
    /// Chunk size for unthrottled bodies: large writes keep syscalls and wake-ups per byte low.
    static let chunkSize = 512 * 1024

    private let plan: ResponsePlan
    private let context: ChannelHandlerContext
    private let state: TestServerState
    private let pool: NIOThreadPool
    private let counterPath: String
    /// The TCP connection: the channel itself for HTTP/1.1, the parent of an HTTP/2 stream.
    private let connection: any Channel
    private let onFinish: () -> Void

    /// Body bytes written so far.
    private var sent: Int64 = 0
    /// Where sending stops: the end of the range, less `short_by`, capped by `close_after`.
    private let limit: Int64
    private var stallPending: Bool
    private var started: NIODeadline = .now()
    private var busy = false
    /// `pump` is running: a flush inside it can report writability at once and call back in.
    private var pumping = false
    /// Someone asked to pump while `pump` was running; it goes round once more.
    private var pumpAgain = false
    private var finished = false
    private var timer: Scheduled<Void>?
    /// The last write handed to the channel; a cut waits for it so the bytes before the cut arrive.
    private var lastWrite: EventLoopFuture<Void>?

    init(
        plan: ResponsePlan,
        context: ChannelHandlerContext,
        state: TestServerState,
        pool: NIOThreadPool,
        counterPath: String,
        connection: any Channel,
        onFinish: @escaping () -> Void
    ) {
        self.plan = plan
        self.context = context
        self.state = state
        self.pool = pool
        self.counterPath = counterPath
        self.connection = connection
        self.onFinish = onFinish
        var limit = plan.omitsBody ? 0 : plan.range.count
        if let shortBy = plan.faults.shortBy { limit = max(0, limit - shortBy) }
        if let closeAfter = plan.faults.closeAfter { limit = min(limit, closeAfter) }
        if let resetAfter = plan.faults.resetAfter { limit = min(limit, resetAfter) }
        self.limit = limit
        self.stallPending = (plan.faults.stallMilliseconds != nil || plan.faults.gate != nil) && !plan.omitsBody
    }

    /// Starts sending.
    func start() {
        guard let headGate = plan.faults.headGate else {
            startHead()
            return
        }
        let loop = context.eventLoop
        let resume = NIOLoopBound(self, eventLoop: loop)
        busy = true
        state.whenGateOpens(headGate) {
            loop.execute {
                let writer = resume.value
                writer.busy = false
                guard !writer.finished else { return }
                writer.startHead()
            }
        }
    }

    private func startHead() {
        if let delay = plan.faults.delayMilliseconds {
            schedule(after: .milliseconds(delay)) { $0.writeHead() }
        } else {
            writeHead()
        }
    }

    /// The channel became writable again.
    func writabilityChanged() {
        if context.channel.isWritable { pump() }
    }

    /// The channel closed: stop timers, send nothing more.
    func cancel() {
        finished = true
        timer?.cancel()
        timer = nil
    }

    private func schedule(after delay: TimeAmount, _ body: @escaping (ResponseWriter) -> Void) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            self.timer = nil
            guard !self.finished else { return }
            body(self)
        }
    }

    private func writeHead() {
        for hint in stride(from: 1, through: plan.faults.earlyHints, by: 1) {
            var early = HTTPResponse(status: .init(code: 103))
            early.headerFields[HTTPField.Name("Link")!] = "</hint-\(hint).css>; rel=preload"
            context.write(NIOAny(HTTPResponsePart.head(early)), promise: nil)
        }
        var response = HTTPResponse(status: plan.status)
        response.headerFields = plan.headers
        if plan.declaresLength {
            if plan.status != .notModified && plan.status.code >= 200 && plan.status.code != 204 {
                response.headerFields[.contentLength] = String(plan.range.count)
            }
        }
        lastWrite = context.write(NIOAny(HTTPResponsePart.head(response)))
        context.flush()
        started = .now()
        pump()
    }

    /// Writes body chunks while the channel is writable. Never re-entered: a flush inside can fire
    /// `channelWritabilityChanged` synchronously, which must not start a second pass that writes the end
    /// twice; it only asks the running pass to go round again.
    private func pump() {
        if pumping {
            pumpAgain = true
            return
        }
        pumping = true
        defer { pumping = false }
        repeat {
            pumpAgain = false
            pumpOnce()
        } while pumpAgain
    }

    private func pumpOnce() {
        guard !busy, !finished, timer == nil else { return }
        let faults = plan.faults
        while context.channel.isWritable {
            if sent >= limit {
                finishBody()
                return
            }
            if stallPending, sent >= faults.stallAfter {
                stallPending = false
                context.flush()
                if let gate = faults.gate {
                    waitForGate(gate, then: faults.stallMilliseconds)
                } else if let stall = faults.stallMilliseconds {
                    schedule(after: .milliseconds(stall)) { $0.pump() }
                }
                return
            }
            var count = min(Int64(Self.chunkSize), limit - sent)
            if stallPending { count = min(count, faults.stallAfter - sent) }
            if let rate = faults.throttle {
                // Pace against the clock since the head went out.
                let pacer = Pacer(rate: rate)
                count = min(count, pacer.quantum(chunkSize: Int64(Self.chunkSize)))
                let elapsed = Double((NIODeadline.now() - started).nanoseconds) / 1e9
                if let wait = pacer.delay(sent: sent, count: count, elapsed: elapsed) {
                    context.flush()
                    schedule(after: .nanoseconds(max(1_000_000, Int64(wait * 1e9)))) { $0.pump() }
                    return
                }
            }
            let offset = plan.range.start + sent
            switch plan.source {
            case .buffer(let buffer):
                let slice = buffer.getSlice(at: buffer.readerIndex + Int(offset), length: Int(count))!
                write(slice)
            case .generated(let generator):
                var chunk = context.channel.allocator.buffer(capacity: Int(count))
                chunk.writeWithUnsafeMutableBytes(minimumWritableBytes: Int(count)) { pointer in
                    generator.fill(UnsafeMutableRawBufferPointer(rebasing: pointer[0..<Int(count)]), offset: offset)
                    return Int(count)
                }
                write(chunk)
            case .file(let file):
                busy = true
                context.flush()
                file.read(offset: offset, count: Int(count), pool: pool, eventLoop: context.eventLoop)
                    .assumeIsolated().whenComplete { [self] result in
                        self.busy = false
                        guard !self.finished else { return }
                        switch result {
                        case .success(let chunk):
                            self.write(chunk)
                            self.pump()
                        case .failure:
                            // The file vanished or shrank mid-response: the only honest signal is a cut.
                            self.finished = true
                            self.closeConnection()
                        }
                    }
                return
            }
        }
        context.flush()
    }

    /// Holds the body until the gate opens (then the `stall_ms` stall, if any, still follows).
    private func waitForGate(_ gate: String, then stall: Int64?) {
        busy = true
        let loop = context.eventLoop
        let resume = NIOLoopBound(self, eventLoop: loop)
        state.whenGateOpens(gate) {
            loop.execute {
                let writer = resume.value
                writer.busy = false
                guard !writer.finished else { return }
                if let stall {
                    writer.schedule(after: .milliseconds(stall)) { $0.pump() }
                } else {
                    writer.pump()
                }
            }
        }
    }

    private func write(_ chunk: ByteBuffer) {
        sent += Int64(chunk.readableBytes)
        state.bodyBytesSent(chunk.readableBytes, path: counterPath)
        lastWrite = context.write(NIOAny(HTTPResponsePart.body(chunk)))
        if !context.channel.isWritable { context.flush() }
    }

    private func finishBody() {
        let faults = plan.faults
        let bodyLength = plan.omitsBody ? 0 : plan.range.count
        let cutShort = sent < bodyLength
        finished = true
        if cutShort {
            // close_after, reset_after or short_by: the response stays incomplete and the connection (for
            // reset_after over HTTP/2, the stream) ends, once the bytes before the cut are on their way
            // (for HTTP/2 the stream's frames go through the parent).
            context.flush()
            let resetsStream = faults.resetAfter != nil && context.channel !== connection
            let cut: (ResponseWriter) -> Void = { writer in
                if resetsStream { writer.context.close(promise: nil) } else { writer.closeConnection() }
            }
            if let lastWrite {
                lastWrite.assumeIsolated().whenComplete { [self] _ in cut(self) }
            } else {
                cut(self)
            }
            return
        }
        let closeAfterwards = faults.closeAfter != nil
        let goAway = faults.goAway ? streamID() : nil
        context.writeAndFlush(NIOAny(HTTPResponsePart.end(nil))).assumeIsolated().whenComplete { [self] _ in
            if closeAfterwards { self.closeConnection() }
            if let goAway {
                let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: goAway, errorCode: .noError, opaqueData: nil))
                self.connection.writeAndFlush(frame, promise: nil)
            }
        }
        onFinish()
    }

    /// This response's HTTP/2 stream; nil over HTTP/1.1.
    private func streamID() -> HTTP2StreamID? {
        guard context.channel !== connection else { return nil }
        return try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
    }

    private func closeConnection() {
        connection.flush()
        connection.close(promise: nil)
    }
}
