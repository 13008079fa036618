import FerryCore
import FerryQUIC
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix


/// One QUIC connection carrying HTTP/3 requests: a ``QUICClientConnection`` driven on a datagram
/// channel's event loop, its events turned into responses. Every mutable property is touched on
/// `eventLoop` only.
final class HTTP3Connection: @unchecked Sendable {
    /// One request stream's state: its life as an ``ExchangeStateMachine`` (the same rules as over
    /// HTTP/1.1 and HTTP/2), and the I/O this connection does for it.
    struct Exchange {
        var url: URL
        /// Completed with the response once the read that brought its head is done; nil after.
        var head: EventLoopPromise<TransportResponse>?
        var machine: ExchangeStateMachine
        /// The stream's frames as they arrive.
        var reader = HTTP3StreamReader()
        /// Trailers arrived: nothing but the stream's end may follow (RFC 9114 §4.1).
        var trailersReceived = false
        /// Frames read and not yet acted on: the head waits for QPACK inserts (a blocked stream), and
        /// what followed it waits behind it.
        var queued: [HTTP3StreamReader.Part] = []
        /// The stream's end arrived (acted on once the queue is empty).
        var finReceived = false
        /// Bytes of frame overhead read while the stream was blocked: counted as read (its window
        /// moves) only once the head is decoded, so flow control bounds what a blocked stream holds.
        var unconsumed = 0
        var source: ResponseBodyProducer.Source?
        /// Body bytes handed to the reader whose window has not moved yet (the reader asked for less).
        var heldBack = 0
        var paused = false
        /// Body bytes of the current read batch, handed to the reader as one buffer when it ends.
        var unread = ByteBuffer()
        /// A streamed request body's writer, waiting for the bytes queued before to go out.
        var bodyWaiter: EventLoopPromise<Void>?
        var deadlineTimer: Scheduled<Void>?
    }

    typealias ResponseBodyProducer = NIOThrowingAsyncSequenceProducer<
        ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, HTTP3BodyDemand
    >

    let eventLoop: any EventLoop
    let host: String
    let port: Int
    private let tls: TLSClient
    var quic: QUICClientConnection
    var channel: (any Channel)?
    /// The socket of the path before a migration, read until the new path is validated.
    var previousChannel: (any Channel)?
    private(set) var remote: SocketAddress
    #if DEBUG
    /// Response body bytes received so far (for the test hook that migrates after some).
    var bodyBytesReceived = 0
    /// `FERRY_DEBUG_QUIC_MIGRATE=BYTES@ADDRESS`: after BYTES of bodies, the connection moves to a new
    /// socket bound to ADDRESS (a test's stand-in for a network change).
    var debugMigration: (bytes: Int, address: String)? = ProcessInfo.processInfo.environment["FERRY_DEBUG_QUIC_MIGRATE"].flatMap { text in
        let parts = text.split(separator: "@", maxSplits: 1)
        guard parts.count == 2, let bytes = Int(parts[0]) else { return nil }
        return (bytes, String(parts[1]))
    }
    #endif
    private var handshake: EventLoopPromise<Void>?
    var exchanges: [UInt64: Exchange] = [:]
    /// Exchanges whose final head arrived in the read batch still going: handed over when it ends.
    var heldHeads: [UInt64] = []
    private(set) var closedError: FerryError?
    private var idleTimer: Scheduled<Void>?
    private var recoveryTimer: Scheduled<Void>?
    /// Requests waiting for the server to allow another stream.
    var waiting: [(request: TransportRequest, deadline: NIODeadline, promise: EventLoopPromise<TransportResponse>)] = []
    /// The server's control stream, bytes of its unidirectional streams not read yet, and the ones
    /// that are not its control stream.
    var controlStreamID: UInt64?
    var serverStreamBuffers: [UInt64: [UInt8]] = [:]
    /// QPACK's decoding side: the server's encoder stream fills its dynamic table (RFC 9204).
    var qpack = QPACKDecoder(maximumCapacity: 4096, maximumBlockedStreams: 16)
    /// The server's QPACK encoder stream, and this side's decoder stream.
    var encoderStreamID: UInt64?
    var decoderStreamID: UInt64?
    var otherServerStreams: Set<UInt64> = []
    private var recoveryDue: UInt64?
    /// Seconds without a datagram after which the connection is given up (RFC 9000 §10.1).
    static let idleTimeout: Int64 = 30

    private init(host: String, port: Int, remote: SocketAddress, eventLoop: any EventLoop, tls: TLSClient) throws {
        self.host = host
        self.port = port
        self.remote = remote
        self.eventLoop = eventLoop
        self.tls = tls
        let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
        do {
            // NIO's deadlines and the connection's timers read the same monotonic clock.
            quic = try QUICClientConnection(
                serverName: isAddress ? nil : host, applicationProtocols: ["h3"], clock: { DispatchTime.now().uptimeNanoseconds }
            )
        } catch {
            throw FerryError(.secureConnectionFailed, "cannot set up QUIC's TLS: \(error)")
        }
        #if DEBUG
        // `FERRY_DEBUG_QUIC_KEY_UPDATE=N`: this side updates its keys every N packets (a test's way to
        // see many updates without sending 4 million packets).
        if let interval = ProcessInfo.processInfo.environment["FERRY_DEBUG_QUIC_KEY_UPDATE"].flatMap(UInt64.init) {
            quic.keyUpdateInterval = interval
        }
        #endif
    }

    /// Whether requests may still go on this connection (read from any thread).
    var isUsable: Bool { !closed.withLockedValue { $0 } }
    private let closed = NIOLockedValueBox(false)

    /// No new request goes on this connection (a GOAWAY): the transport opens another.
    func markUnusable() {
        closed.withLockedValue { $0 = true }
    }

    /// A connection to `host`:`port`, reached at `address` (the host, or a --resolve entry) in `family`
    /// when one is asked for, with its handshake done.
    static func connect(
        host: String,
        address: String,
        family: ConnectionSettings.AddressFamily?,
        port: Int,
        tls: TLSClient,
        deadline: NIODeadline
    ) async throws -> HTTP3Connection {
        let remote: SocketAddress
        do {
            // getaddrinfo blocks: on NIO's thread pool, not an event loop or the cooperative pool.
            if let family {
                // -4/-6: the TCP path's lookup, which says which family has no address.
                remote = try await ConnectionFactory.resolve(address, port: port, family: family, url: "https://\(host):\(port)")
            } else {
                remote = try await NIOThreadPool.singleton.runIfActive { try SocketAddress.makeAddressResolvingHost(address, port: port) }
            }
        } catch let error as FerryError {
            throw error
        } catch {
            throw FerryError(.cannotFindHost, "cannot find the host \(host)")
        }
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let connection = try HTTP3Connection(host: host, port: port, remote: remote, eventLoop: eventLoop, tls: tls)
        let channel = try await connection.makeChannel(local: nil).get()
        // A cancelled attempt (the transport shutting down while a raced handshake goes on) ends now.
        try await withTaskCancellationHandler {
            try await eventLoop.flatSubmit { connection.start(channel: channel, deadline: deadline) }.get()
        } onCancel: {
            eventLoop.execute { connection.fail(FerryError(.cancelled, "the transport was shut down")) }
        }
        return connection
    }

    /// A UDP socket for this connection, bound to `local` (nil: any address), connected to the
    /// server: the kernel then reports an ICMP "port unreachable" as ECONNREFUSED, so a server without
    /// HTTP/3 is known at once instead of by a timeout.
    func makeChannel(local: SocketAddress?) -> EventLoopFuture<any Channel> {
        var bootstrap = DatagramBootstrap(group: eventLoop)
            .channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: 4 << 20)
            .channelOption(ChannelOptions.maxMessagesPerRead, value: 64)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(HTTP3DatagramHandler(self)) }
            }
        if System.supportsUDPSegmentationOffload {
            // GSO: a write of several full-sized datagrams, back to back, leaves as that many
            // (``transmit(_:)`` groups them).
            bootstrap = bootstrap.channelOption(ChannelOptions.datagramSegmentSize, value: CInt(QUICClientConnection.packetSize))
        }
        if System.supportsUDPReceiveOffload {
            // GRO: the kernel hands over runs of the server's datagrams as one buffer, with their size.
            bootstrap = bootstrap.channelOption(ChannelOptions.datagramReceiveOffload, value: true)
                .channelOption(ChannelOptions.datagramReceiveSegmentSize, value: true)
                .channelOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
        }
        guard let local else { return bootstrap.connect(to: remote) }
        let remote = remote
        return bootstrap.bind(to: local).flatMap { channel in channel.connect(to: remote).map { channel } }
    }

    private func start(channel: any Channel, deadline: NIODeadline) -> EventLoopFuture<Void> {
        self.channel = channel
        if let closedError {
            channel.close(promise: nil)
            return eventLoop.makeFailedFuture(closedError)
        }
        let promise = eventLoop.makePromise(of: Void.self)
        handshake = promise
        let timer = eventLoop.scheduleTask(deadline: deadline) { [self] in
            fail(FerryError(.timedOut, "the QUIC handshake with \(host):\(port) took too long (is UDP port \(port) open there?)"))
        }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        do {
            transmit(try quic.start())
        } catch {
            fail(FerryError(.secureConnectionFailed, "the QUIC handshake could not start: \(error)"))
        }
        resetIdleTimer()
        return promise.futureResult
    }

    /// Sends `request` on a new stream; the response once its head arrives.
    func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        return try await eventLoop.flatSubmit { self.open(request, deadline: deadline) }.get()
    }

    private func open(_ request: TransportRequest, deadline: NIODeadline) -> EventLoopFuture<TransportResponse> {
        if let closedError { return eventLoop.makeFailedFuture(closedError) }
        let target: HTTPTarget
        do {
            target = try HTTPTarget(request.url)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        guard quic.canOpenStream(bidirectional: true) else {
            // The server's stream limit is reached: the request waits for a MAX_STREAMS (as the
            // requests before it end), within its deadline.
            let promise = eventLoop.makePromise(of: TransportResponse.self)
            waiting.append((request, deadline, promise))
            transmit(quic.streamsBlocked(bidirectional: true))
            let timer = eventLoop.scheduleTask(deadline: deadline) { [self] in
                waiting.removeAll { $0.promise.futureResult === promise.futureResult }
                promise.fail(FerryError(.timedOut, "no HTTP/3 stream free on \(host) in time", failingURL: request.url.absoluteString))
            }
            promise.futureResult.whenComplete { _ in timer.cancel() }
            return promise.futureResult
        }
        let id = quic.openStream(bidirectional: true)
        let promise = eventLoop.makePromise(of: TransportResponse.self)
        let streamsBody = if case .stream? = request.body { true } else { false }
        var exchange = Exchange(
            url: request.url,
            head: promise,
            machine: ExchangeStateMachine(isHeadRequest: request.method == "HEAD", requestSent: !streamsBody)
        )
        exchange.deadlineTimer = eventLoop.scheduleTask(deadline: deadline) { [self] in
            fail(id, FerryError(.timedOut, "the HTTP/3 exchange with \(host) did not finish in time", failingURL: request.url.absoluteString))
        }
        exchanges[id] = exchange
        var message = HTTP3Frame.headers(QPACK.encode(NetworkTransport.multiplexedFields(request, target: target))).encoded
        if case .bytes(let body)? = request.body, body.readableBytes > 0 {
            message += HTTP3Frame.data(Array(body.readableBytesView)).encoded
        }
        guard case .stream(let length, let body)? = request.body else {
            transmit(quic.send(message, on: id, fin: true))
            return promise.futureResult
        }
        transmit(quic.send(message, on: id))
        Task { await self.pump(body, length: length, on: id) }
        return promise.futureResult
    }

    /// Closes the connection (application NO_ERROR).
    func close() async {
        try? await eventLoop.submit { [self] in
            transmit(quic.close(errorCode: 0x100, reason: ""))
            fail(FerryError(.cancelled, "the transport was shut down"))
        }.get()
    }

    // MARK: On the event loop

    /// Whether datagrams are being read: answers and body bytes wait for ``readComplete()``.
    private var reading = false

    /// Datagrams from the server: one, or (with GRO) several of `segmentSize` bytes each, the last
    /// perhaps shorter.
    func received(_ buffer: ByteBuffer, segmentSize: Int?) {
        if !reading {
            reading = true
            resetIdleTimer()
        }
        let bytes = buffer.readableBytesView
        let step = max(segmentSize ?? bytes.count, 1)
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = min(start + step, bytes.endIndex)
            quic.absorb(Array(bytes[start..<end]))
            start = end
        }
        handleEvents()
    }

    /// An error from the socket: ECONNREFUSED is the server's ICMP "port unreachable" (nothing listens
    /// on that UDP port); before the handshake is done, anything else means the same to the caller.
    func socketError(_ error: any Error) {
        let refused = (error as? IOError)?.errnoCode == ECONNREFUSED
        if refused || handshake != nil {
            let words = refused ? "nothing answers on UDP port \(port) of \(host) (the port is closed)" : "the UDP socket failed: \(error)"
            fail(FerryError(.cannotConnectToHost, "HTTP/3 could not connect: \(words)"))
        }
    }

    /// The end of a batch of reads: one answer to the peer for all of it (acknowledgements, window
    /// updates), and each body's bytes to its reader as one buffer.
    func readComplete() {
        reading = false
        deliverBodies()
        transmit(quic.pendingDatagrams())
        migrateIfAsked()
    }

    /// Each exchange's body bytes of the batch, to its reader; its window moves when the reader
    /// keeps up.
    private func deliverBodies() {
        for id in heldHeads {
            guard var exchange = exchanges.removeValue(forKey: id) else { continue }
            if let head = exchange.machine.handOverHead() { startStreaming(&exchange, id: id, head: head) }
            exchanges[id] = exchange
        }
        heldHeads.removeAll(keepingCapacity: true)
        for id in Array(exchanges.keys) where exchanges[id]?.unread.readableBytes ?? 0 > 0 {
            guard var exchange = exchanges.removeValue(forKey: id) else { continue }
            deliver(&exchange, id: id)
            exchanges[id] = exchange
        }
    }

    func deliver(_ exchange: inout Exchange, id: UInt64) {
        let count = exchange.unread.readableBytes
        guard count > 0, let source = exchange.source else { return }
        let chunk = exchange.unread
        exchange.unread = ByteBuffer()
        exchange.heldBack += count
        if case .stopProducing = source.yield(chunk) { exchange.paused = true }
        if !exchange.paused {
            transmit(quic.consume(exchange.heldBack, on: id))
            exchange.heldBack = 0
        }
    }

    private func handleEvents() {
        defer {
            openWaiting()
            if !reading { deliverBodies() }
        }
        for event in quic.takeEvents() {
            switch event {
            case .certificateChain(let chain):
                let (tls, host, port) = (tls, host, port)
                // Judged off the loop (the first use loads the system's roots), then back on it.
                Task {
                    let failure = await tls.verdict(onDER: chain, host: host, port: port)
                    self.eventLoop.execute {
                        self.transmit(self.quic.finishVerification(accepted: failure == nil))
                        if let failure { self.fail(FerryError(failure.code, failure.message)) }
                        self.handleEvents()
                    }
                }
            case .statelessReset:
                fail(FerryError(
                    .networkConnectionLost,
                    "the server reset the QUIC connection (a stateless reset: it no longer has the connection, as after a restart)"
                ))
            case .pathValidated:
                previousChannel?.close(promise: nil)
                previousChannel = nil
            case .handshakeComplete:
                // This side's control stream (its type, and SETTINGS offering a QPACK dynamic
                // table), and its QPACK decoder stream.
                let control = quic.openStream(bidirectional: false)
                transmit(quic.send(HTTP3Frame.clientControlStreamOpening(for: qpack), on: control))
                let decoder = quic.openStream(bidirectional: false)
                decoderStreamID = decoder
                transmit(quic.send([0x03], on: decoder))
                handshake?.succeed()
                handshake = nil
            case .streamData(let id, let data, let fin):
                streamData(id, data, fin: fin)
            case .streamReset(let id, let code):
                fail(id, FerryError(.networkConnectionLost, "the server reset the request (HTTP/3 error 0x\(String(code, radix: 16)))"))
            case .closed(let code, let reason, let byPeer):
                let words = byPeer ? "the server closed the QUIC connection" : "the QUIC connection failed"
                fail(FerryError(.networkConnectionLost, "\(words) (error 0x\(String(code, radix: 16))\(reason.isEmpty ? "" : ": \(reason)"))"))
            }
        }
    }

    /// Requests that waited for a stream, opened as far as the server now allows.
    private func openWaiting() {
        while closedError == nil, !waiting.isEmpty, quic.canOpenStream(bidirectional: true) {
            let next = waiting.removeFirst()
            open(next.request, deadline: next.deadline).cascade(to: next.promise)
        }
    }

    /// The reader wants more of `id`'s body: the window moves for what it held back.
    func resume(_ id: UInt64) {
        guard var exchange = exchanges[id] else { return }
        exchange.paused = false
        if exchange.heldBack > 0 {
            transmit(quic.consume(exchange.heldBack, on: id))
            exchange.heldBack = 0
        }
        exchanges[id] = exchange
    }

    /// Ends exchange `id` with `error`, telling the server with STOP_SENDING and RESET_STREAM `code`
    /// (H3_REQUEST_CANCELLED by default, RFC 9114 §4.1.1; H3_MESSAGE_ERROR for a malformed answer).
    func fail(_ id: UInt64, _ error: any Error, code: UInt64 = 0x10c) {
        guard var exchange = exchanges.removeValue(forKey: id) else { return }
        if exchange.machine.response == .awaitingHead {
            // Its head was never decoded: QPACK's encoder may stop counting on it (Stream Cancellation).
            qpack.cancel(stream: id)
            sendDecoderInstructions()
        }
        transmit(quic.cancel(stream: id, errorCode: code))
        exchange.deadlineTimer?.cancel()
        exchange.bodyWaiter?.fail(error)
        switch exchange.machine.fail() {
        case .failAnswer: exchange.head?.fail(error)
        case .failBody: exchange.source?.finish(error)
        case .nothing: break
        }
    }

    /// Ends the connection and every exchange on it with `error`.
    func fail(_ error: FerryError) {
        guard closedError == nil else { return }
        closedError = error
        closed.withLockedValue { $0 = true }
        handshake?.fail(error)
        handshake = nil
        for id in Array(exchanges.keys) { fail(id, error) }
        for request in waiting { request.promise.fail(error) }
        waiting = []
        idleTimer?.cancel()
        recoveryTimer?.cancel()
        channel?.close(promise: nil)
        previousChannel?.close(promise: nil)
    }

    private func resetIdleTimer() {
        idleTimer?.cancel()
        idleTimer = eventLoop.scheduleTask(in: .seconds(Self.idleTimeout)) { [self] in
            fail(FerryError(.networkConnectionLost, "the QUIC connection to \(host) went idle for \(Self.idleTimeout) s"))
        }
    }

    func transmit(_ datagrams: [[UInt8]]) {
        if let channel, !datagrams.isEmpty {
            for run in Self.segmentRuns(datagrams, offload: segmentationOffload) {
                var buffer = channel.allocator.buffer(capacity: run.reduce(0) { $0 + datagrams[$1].count })
                for index in run { buffer.writeBytes(datagrams[index]) }
                channel.write(AddressedEnvelope(remoteAddress: remote, data: buffer), promise: nil)
            }
            channel.flush()
        }
        scheduleRecovery()
        releaseBodyWriters()
    }

    /// Whether the socket segments writes into datagrams of ``QUICClientConnection/packetSize`` (GSO).
    var segmentationOffload: Bool { System.supportsUDPSegmentationOffload }

    /// The most datagrams one segmented write carries (the kernel takes 64 segments and 64 KiB).
    static let segmentsPerWrite = 48

    /// `datagrams` (their indexes) in the writes they go as: with `offload`, runs of full-sized ones,
    /// each run perhaps ended by one shorter (the kernel cuts a write into segments of the full size,
    /// its last one shorter); without, one each.
    static func segmentRuns(_ datagrams: [[UInt8]], offload: Bool) -> [Range<Int>] {
        guard offload else { return datagrams.indices.map { $0..<($0 + 1) } }
        let full = QUICClientConnection.packetSize
        var runs: [Range<Int>] = []
        var start = 0
        for (index, datagram) in datagrams.enumerated() {
            let length = index + 1 - start
            if datagram.count != full || length == segmentsPerWrite || index == datagrams.count - 1 {
                runs.append(start..<(index + 1))
                start = index + 1
            }
        }
        return runs
    }

    /// The loss and probe timer (RFC 9002), set for whenever the connection next needs one.
    private func scheduleRecovery() {
        guard closedError == nil, let due = quic.nextTimeout() else {
            recoveryTimer?.cancel()
            recoveryTimer = nil
            recoveryDue = nil
            return
        }
        guard due != recoveryDue else { return }
        recoveryTimer?.cancel()
        recoveryDue = due
        recoveryTimer = eventLoop.scheduleTask(deadline: .uptimeNanoseconds(due)) { [self] in
            recoveryDue = nil
            recoveryTimer = nil
            transmit(quic.handleTimeout())
            handleEvents()
        }
    }
}
