import FerryCore
import Foundation
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP1
import Testing

@testable import FerryEngine

/// Ferry's HTTP/2 client connection on an embedded channel: the test plays the server frame by frame
/// and moves the clock. On the main actor: the embedded loop may be used only from one thread, and the
/// tests that read a body await.
@MainActor @Suite struct HTTP2ClientHandlerTests {
    private final class Seen: @unchecked Sendable {
        var maximumStreams: [Int] = []
        var goAways = 0
        var closedStreams = 0
        var idle = true
    }

    /// One frame the client sent (DATA content joined per frame).
    private struct Sent {
        var type: UInt8
        var flags: UInt8
        var stream: UInt32
        var payload: [UInt8]

        var integer: UInt64 {
            payload.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
        }
    }

    private struct Exchange {
        let answer: EventLoopFuture<ExchangeAnswer>
        let shared: ExchangeContext

        /// The response head (once the read that brought it is done).
        var head: EventLoopFuture<HTTPResponseHead> { answer.map(\.head) }

        /// The body, once the answer has come.
        var body: TransportBodyStream {
            get throws { try answer.wait().bodyStream }
        }
        /// What the body reader asked of the handler, to be run on the test's thread (the embedded loop
        /// may be used only there).
        let demands: Demands
    }

    private final class Demands: @unchecked Sendable {
        private let lock = NSLock()
        private var calls: [@Sendable (any ExchangeDriver) -> Void] = []

        func record(_ call: @escaping @Sendable (any ExchangeDriver) -> Void) {
            lock.withLock { calls.append(call) }
        }

        func run(on handler: HTTP2ClientHandler) {
            for call in lock.withLock({ defer { calls = [] }; return calls }) { call(handler) }
        }
    }

    /// A body reader kept across calls (its iterator lives as long as the reader).
    private final class Reader {
        var iterator: TransportBodyStream.AsyncIterator

        init(_ body: TransportBodyStream) { iterator = body.makeAsyncIterator() }

        /// The sizes of the next `count` pieces (all of them when nil), and how the body ended.
        func take(_ count: Int? = nil) async -> (sizes: [Int], failure: (any Error)?) {
            var result: (sizes: [Int], failure: (any Error)?) = ([], nil)
            do {
                while count.map({ result.sizes.count < $0 }) ?? true, let piece = try await iterator.next() {
                    result.sizes.append(piece.readableBytes)
                }
            } catch {
                result.failure = error
            }
            return result
        }
    }

    private final class Server {
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        let channel: EmbeddedChannel

        init(_ channel: EmbeddedChannel) { self.channel = channel }

        func send(_ write: (inout ByteBuffer) -> Void) throws {
            var bytes = ByteBuffer()
            write(&bytes)
            try channel.writeInbound(bytes)
        }

        func headers(_ stream: UInt32, _ fields: [(String, String)], endStream: Bool = false) throws {
            var block = ByteBuffer()
            try encoder.encode(headers: HPACKHeaders(fields), to: &block)
            try send { $0.writeHTTP2Headers(stream: stream, block: block, endStream: endStream, maximumFrameSize: 16384) }
        }

        func data(_ stream: UInt32, count: Int, endStream: Bool = false) throws {
            try send {
                $0.writeHTTP2FrameHeader(length: count, kind: .data, flags: endStream ? 1 : 0, stream: stream)
                $0.writeBytes([UInt8](repeating: 1, count: count))
            }
        }
    }

    private func connected(
        _ seen: Seen,
        _ change: (inout HTTP2Settings) -> Void = { _ in }
    ) throws -> (EmbeddedChannel, HTTP2ClientHandler, Server) {
        var settings = HTTP2Settings()
        change(&settings)
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let handler = HTTP2ClientHandler(settings: settings, idleTimeout: .seconds(30))
        handler.events = .init(
            maximumStreams: { seen.maximumStreams.append($0) },
            goAway: { seen.goAways += 1 },
            streamClosed: { seen.closedStreams += 1 },
            isIdle: { seen.idle }
        )
        try channel.pipeline.syncOperations.addHandler(handler)
        return (channel, handler, Server(channel))
    }

    /// Every frame written since the last call (the connection preface skipped).
    private func sent(_ channel: EmbeddedChannel) throws -> [Sent] {
        var bytes = ByteBuffer()
        while var piece = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&piece) }
        if bytes.readableBytesView.starts(with: Array(HTTP2Frame.preface.utf8)) {
            bytes.moveReaderIndex(forwardBy: HTTP2Frame.preface.utf8.count)
        }
        // Parsed here by hand, not with the reader under test elsewhere.
        var frames: [Sent] = []
        while bytes.readableBytes >= 9 {
            let length = Int(bytes.readInteger(as: UInt8.self)!) << 16 | Int(bytes.readInteger(as: UInt16.self)!)
            let type = bytes.readInteger(as: UInt8.self)!
            let flags = bytes.readInteger(as: UInt8.self)!
            let stream = bytes.readInteger(as: UInt32.self)! & 0x7FFF_FFFF
            let payload = bytes.readBytes(length: length) ?? []
            frames.append(Sent(type: type, flags: flags, stream: stream, payload: payload))
        }
        #expect(bytes.readableBytes == 0)
        return frames
    }

    private func windowIncrements(_ frames: [Sent], stream: UInt32) -> [Int] {
        frames.filter { $0.type == 8 && $0.stream == stream }.map { Int($0.integer) }
    }

    private func start(
        _ handler: HTTP2ClientHandler,
        _ channel: EmbeddedChannel,
        exchange: Int,
        method: String = "GET",
        body: HTTP2ClientHandler.Request.Body = .none
    ) -> Exchange {
        let loop = channel.embeddedEventLoop
        let shared = ExchangeContext()
        let demands = Demands()
        let answer = AnswerPromise()
        let fields = [(":method", method), (":scheme", "https"), (":authority", "example.test"), (":path", "/")]
        handler.start(
            .init(headers: HPACKHeaders(fields), isHead: method == "HEAD", body: body),
            exchange: exchange,
            answer: answer,
            slot: HandlerSlot { demands.record($0) },
            shared: shared,
            deadline: .distantFuture,
            idleTimeout: nil
        )
        return Exchange(answer: answer.future(on: loop), shared: shared, demands: demands)
    }

    /// How a head that has completed failed (nil: it succeeded).
    private func error(of future: EventLoopFuture<HTTPResponseHead>) -> (any Error)? {
        do {
            _ = try future.wait()
            return nil
        } catch {
            return error
        }
    }

    @Test func theConnectionOpensWithLargeWindowsAndAnswersSettingsAndPing() throws {
        let seen = Seen()
        let (channel, _, server) = try connected(seen)
        let opening = try sent(channel)
        #expect(opening.map(\.type) == [4, 8])
        // enable_push 0, initial window 4 MiB; the connection's window raised to 16 MiB at once.
        let settings = opening[0].payload
        let pairs = stride(from: 0, to: settings.count, by: 6).map {
            (Int(settings[$0]) << 8 | Int(settings[$0 + 1]), settings[($0 + 2)..<($0 + 6)].reduce(0) { $0 << 8 | Int($1) })
        }
        #expect(pairs.contains { $0 == (2, 0) } && pairs.contains { $0 == (4, 4 << 20) })
        #expect(opening[1].stream == 0 && Int(opening[1].integer) == (16 << 20) - 65535)

        try server.send { $0.writeHTTP2Settings([(.maximumConcurrentStreams, 7)]) }
        try server.send { $0.writeHTTP2Ping(99, ack: false) }
        let answers = try sent(channel)
        #expect(seen.maximumStreams == [7])
        #expect(answers.map(\.type) == [4, 6])
        #expect(answers[0].flags == 1 && answers[0].payload.isEmpty)
        #expect(answers[1].flags == 1 && answers[1].integer == 99)
    }

    @Test func aResponseReachesTheReaderAndItsWindowIsGivenBack() async throws {
        let seen = Seen()
        let (channel, handler, server) = try connected(seen) { $0.streamWindow = 64 << 10 }
        _ = try sent(channel)
        let exchange = start(handler, channel, exchange: 1)
        let request = try sent(channel)
        // A GET is one HEADERS frame with END_STREAM and END_HEADERS.
        #expect(request.map(\.type) == [1] && request[0].flags == 0x5 && request[0].stream == 1)
        try server.headers(1, [(":status", "200"), ("content-length", "40000"), ("x-test", "yes")])
        let head = try exchange.head.wait()
        #expect(head.status.code == 200 && head.headers["x-test"] == ["yes"])
        try server.data(1, count: 20000)
        // A quarter of the stream's window or more was taken: given back.
        #expect(windowIncrements(try sent(channel), stream: 1) == [20000])
        try server.data(1, count: 20000, endStream: true)
        let read = await Reader(try exchange.body).take()
        #expect(read.sizes == [20000, 20000] && read.failure == nil)
        #expect(seen.closedStreams == 1)
        // No window for a stream that ended.
        #expect(windowIncrements(try sent(channel), stream: 1).isEmpty)
    }

    @Test func aResponseHeadInContinuationFramesIsJoined() throws {
        let seen = Seen()
        let (channel, handler, server) = try connected(seen)
        let exchange = start(handler, channel, exchange: 1)
        let big = String(repeating: "y", count: 40000)
        // About 35 KB of header block: HEADERS and two CONTINUATION frames (16 KiB each at most).
        try server.headers(1, [(":status", "200"), ("x-big", big), ("content-length", "0")], endStream: true)
        let head = try exchange.head.wait()
        #expect(head.status.code == 200 && head.headers["x-big"] == [big])
        #expect(channel.isActive && seen.closedStreams == 1)
    }

    @Test func aFullReaderHoldsTheServerBackUntilItReadsAgain() async throws {
        let seen = Seen()
        let (channel, handler, server) = try connected(seen) { $0.streamWindow = 64 << 10 }
        let exchange = start(handler, channel, exchange: 1)
        try server.headers(1, [(":status", "200")])
        _ = try exchange.head.wait()
        _ = try sent(channel)
        // 64 reads of 16 KiB fill the reader's buffer (high watermark 64 pieces): each is given back
        // while the reader wants more, the 64th is not.
        for _ in 0..<64 { try server.data(1, count: 16 << 10) }
        #expect(windowIncrements(try sent(channel), stream: 1) == Array(repeating: 16 << 10, count: 63))
        // The server may send what is left of the window; none of it is given back while the reader is full.
        for _ in 0..<3 { try server.data(1, count: 16 << 10) }
        #expect(windowIncrements(try sent(channel), stream: 1).isEmpty)
        // Reading down below the low watermark (16) asks for more.
        let reader = Reader(try exchange.body)
        #expect(await reader.take(52).sizes.count == 52)
        exchange.demands.run(on: handler)
        // Reading again gives back everything owed, in one update.
        #expect(windowIncrements(try sent(channel), stream: 1) == [64 << 10])
        try server.data(1, count: 10, endStream: true)
        #expect(await reader.take().sizes == Array(repeating: 16 << 10, count: 15) + [10])
    }

    @Test func anAnswerThatEndsInTheReadOfItsHeadComesWithItsContent() async throws {
        let seen = Seen()
        let (channel, handler, server) = try connected(seen)
        let exchange = start(handler, channel, exchange: 1)
        var block = ByteBuffer()
        try server.encoder.encode(headers: HPACKHeaders([(":status", "200"), ("content-length", "5")]), to: &block)
        try server.send {
            $0.writeHTTP2Headers(stream: 1, block: block, endStream: false, maximumFrameSize: 16384)
            $0.writeHTTP2FrameHeader(length: 5, kind: .data, flags: 1, stream: 1)
            $0.writeString("hello")
        }
        let answer = try exchange.answer.wait()
        guard case .complete(let content) = answer.body else {
            Issue.record("a complete answer streamed")
            return
        }
        #expect(String(buffer: content) == "hello")
        #expect(seen.closedStreams == 1)
        // Its head alone in a read: the content streams.
        let second = start(handler, channel, exchange: 2)
        try server.headers(3, [(":status", "200")])
        guard case .streaming = try second.answer.wait().body else {
            Issue.record("an unfinished answer came as complete")
            return
        }
        try server.data(3, count: 7, endStream: true)
        #expect(await Reader(try second.body).take().sizes == [7])
    }

    @Test func aQuietStreamTimesOutAndABusyOneLivesOn() async throws {
        let seen = Seen()
        let (channel, handler, server) = try connected(seen)
        let quiet = start(handler, channel, exchange: 1)
        let busy = start(handler, channel, exchange: 2)
        try server.headers(3, [(":status", "200")])
        _ = try busy.answer.wait()
        _ = try sent(channel)
        // The connection's idle timeout is 30 s: bytes on stream 3 every 20 s keep it going.
        for _ in 0..<2 {
            channel.embeddedEventLoop.advanceTime(by: .seconds(20))
            try server.data(3, count: 1)
        }
        let failure = try #require(error(of: quiet.head) as? FerryError)
        #expect(failure.code == .timedOut)
        #expect(try sent(channel).contains { $0.type == 3 && $0.stream == 1 }, "RST_STREAM for the quiet stream")
        #expect(error(of: busy.head) == nil)
        try server.data(3, count: 1, endStream: true)
        #expect(await Reader(try busy.body).take().sizes == [1, 1, 1])
    }

    @Test func aServerThatOverstepsTheWindowFailsTheStream() throws {
        let seen = Seen()
        let (channel, handler, server) = try connected(seen) { $0.streamWindow = 16 << 10 }
        let exchange = start(handler, channel, exchange: 1)
        try server.headers(1, [(":status", "200")])
        _ = try exchange.head.wait()
        _ = try sent(channel)
        try server.data(1, count: (16 << 10) + 1)
        let reset = try sent(channel).filter { $0.type == 3 }
        #expect(reset.count == 1 && reset[0].integer == 3)  // FLOW_CONTROL_ERROR
        #expect(seen.closedStreams == 1)
    }

    @Test func goAwayRefusesTheStreamsAboveTheLastProcessedAndDrains() throws {
        let seen = Seen()
        let (channel, handler, server) = try connected(seen)
        let first = start(handler, channel, exchange: 1)
        let second = start(handler, channel, exchange: 2)
        try server.send { $0.writeHTTP2GoAway(lastStream: 1, code: .noError) }
        #expect(seen.goAways == 1)
        let refused = try #require(error(of: second.head) as? ConnectionError)
        guard case .refused = refused else {
            Issue.record("\(refused)")
            return
        }
        // No new stream after GOAWAY.
        let third = start(handler, channel, exchange: 3)
        #expect(error(of: third.head) != nil)
        // The processed stream completes; then the connection closes.
        try server.headers(1, [(":status", "204")], endStream: true)
        #expect(try first.head.wait().status.code == 204)
        #expect(!channel.isActive)
        #expect(seen.closedStreams == 3)
    }

    @Test func resetsAndBrokenLengthsFailOnlyTheirStream() async throws {
        let seen = Seen()
        let (channel, handler, server) = try connected(seen)
        let reset = start(handler, channel, exchange: 1)
        try server.send { $0.writeHTTP2ResetStream(stream: 1, code: .cancel) }
        let resetError = try #require(error(of: reset.head) as? FerryError)
        #expect(resetError.code == .networkConnectionLost && resetError.message.contains("reset the HTTP/2 stream (CANCEL)"))

        let refused = start(handler, channel, exchange: 2)
        try server.send { $0.writeHTTP2ResetStream(stream: 3, code: .refusedStream) }
        #expect(error(of: refused.head) is ConnectionError)

        let short = start(handler, channel, exchange: 3)
        try server.headers(5, [(":status", "200"), ("content-length", "10")])
        _ = try short.head.wait()
        try server.data(5, count: 5, endStream: true)
        let lengthError = try #require(await Reader(try short.body).take().failure as? FerryError)
        #expect(lengthError.message.contains("after 5 of the 10 bytes"))
        #expect(channel.isActive)
    }

    @Test func whenStreamIdsRunOutTheConnectionRetires() throws {
        let seen = Seen()
        let (channel, handler, _) = try connected(seen)
        handler.nextStream = UInt32(Int32.max)
        let exchange = start(handler, channel, exchange: 1)
        // Refused (sent again on a new connection), the pool told, and the idle connection closed.
        #expect(error(of: exchange.head) is ConnectionError)
        #expect(seen.goAways == 1)
        #expect(!channel.isActive)
    }

    @Test func aProtocolBreachEndsTheConnectionWithGoAway() throws {
        let seen = Seen()
        let (channel, handler, server) = try connected(seen)
        let exchange = start(handler, channel, exchange: 1)
        _ = try sent(channel)
        // DATA on a stream this client never opened.
        try server.data(2, count: 3)
        let frames = try sent(channel)
        #expect(frames.last?.type == 7 && (frames.last.map { $0.integer & 0xFFFF_FFFF } == 1))  // PROTOCOL_ERROR
        let failure = try #require(error(of: exchange.head) as? FerryError)
        #expect(failure.code == .badServerResponse && failure.message.contains("HTTP/2 protocol"))
        #expect(!channel.isActive)
    }

    @Test func requestContentWaitsForTheServersWindow() throws {
        let seen = Seen()
        let (channel, handler, server) = try connected(seen)
        _ = start(handler, channel, exchange: 1, method: "POST", body: .streamed)
        _ = try sent(channel)
        let written = channel.embeddedEventLoop.makePromise(of: Void.self)
        var done = false
        written.futureResult.whenSuccess { done = true }
        handler.send(exchange: 1, ByteBuffer(repeating: 2, count: 100_000), end: true, promise: written)
        // The protocol's initial window: 65,535 bytes, in frames of at most 16,384.
        let first = try sent(channel).filter { $0.type == 0 }
        #expect(first.map(\.payload.count).reduce(0, +) == 65535 && first.allSatisfy { $0.payload.count <= 16384 })
        #expect(!done)
        try server.send {
            $0.writeHTTP2WindowUpdate(stream: 1, increment: 100_000)
            $0.writeHTTP2WindowUpdate(stream: 0, increment: 100_000)
        }
        let rest = try sent(channel).filter { $0.type == 0 }
        #expect(rest.map(\.payload.count).reduce(0, +) == 100_000 - 65535)
        #expect(rest.last?.flags == 1 && done)
        // The whole request went: the answer ends the stream without a reset.
        try server.headers(1, [(":status", "201")], endStream: true)
        #expect(try sent(channel).filter { $0.type == 3 }.isEmpty)
    }

    @Test func anAnswerBeforeTheWholeRequestStopsTheRestWithAReset() throws {
        let seen = Seen()
        let (channel, handler, server) = try connected(seen)
        let exchange = start(handler, channel, exchange: 1, method: "POST", body: .bytes(ByteBuffer(repeating: 3, count: 100_000)))
        #expect(try sent(channel).filter { $0.type == 0 }.map(\.payload.count).reduce(0, +) == 65535)
        try server.headers(1, [(":status", "413")], endStream: true)
        #expect(try exchange.head.wait().status.code == 413)
        // RST_STREAM NO_ERROR: the server need not wait for the rest (RFC 9113 §8.1), which is not sent.
        let reset = try sent(channel)
        #expect(reset.map(\.type) == [3] && reset[0].integer == 0)
        try server.send { $0.writeHTTP2WindowUpdate(stream: 0, increment: 100_000) }
        #expect(try sent(channel).filter { $0.type == 0 }.isEmpty)
    }

    @Test func anIdleConnectionIsPingedAndClosedWhenAPingGoesUnanswered() throws {
        let seen = Seen()
        let (channel, _, server) = try connected(seen)
        _ = try sent(channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        let ping = try #require(try sent(channel).first { $0.type == 6 })
        try server.send { $0.writeHTTP2Ping(ping.integer, ack: true) }
        // Answered: checked again, not closed.
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(try sent(channel).contains { $0.type == 6 })
        #expect(channel.isActive)
        // Unanswered: closed at the next check, with GOAWAY.
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(try sent(channel).contains { $0.type == 7 })
        #expect(!channel.isActive && seen.goAways == 1)
    }

    @Test func busyConnectionsAreNotPingedAndIdleOnesCloseAfterTheirIdleTime() throws {
        let seen = Seen()
        let (channel, _, server) = try connected(seen)
        _ = try sent(channel)
        seen.idle = false
        channel.embeddedEventLoop.advanceTime(by: .seconds(100))
        #expect(try sent(channel).isEmpty && channel.isActive)
        seen.idle = true
        for _ in 0..<2 {
            channel.embeddedEventLoop.advanceTime(by: .seconds(20))
            let ping = try #require(try sent(channel).first { $0.type == 6 })
            try server.send { $0.writeHTTP2Ping(ping.integer, ack: true) }
        }
        #expect(channel.isActive)
        // Idle for 60 s: closed though every PING was answered.
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(!channel.isActive)
    }
}
