#if canImport(Glibc)
import Glibc
#endif

/// A QUIC client connection (RFC 9000) as a state machine without I/O: datagrams in, datagrams out.
/// It runs the TLS handshake over CRYPTO frames at each encryption level, acknowledges what it
/// receives, and carries stream data both ways within the peer's flow-control limits; its extensions
/// add sending (`+Sending`: packets, congestion control and pacing), receiving (`+Receiving`), loss
/// recovery (``QUICRecovery``), connection IDs and migration (`+Migration`), Retry and Version
/// Negotiation (`+Retry`), cancelled streams (`+Cancel`) and key updates (`+KeyUpdate`).
/// docs/HTTP3.md lists what is not there yet (0-RTT, ECN).
public struct QUICClientConnection: Sendable {
    /// What the owner of the connection hears.
    public enum Event: Sendable, Hashable {
        /// The handshake is complete: streams may be used; the ALPN the server chose.
        case handshakeComplete(applicationProtocol: String?)
        /// Bytes of a stream, in order; `fin` when the stream ends with them.
        case streamData(streamID: UInt64, data: [UInt8], fin: Bool)
        /// The peer reset a stream.
        case streamReset(streamID: UInt64, errorCode: UInt64)
        /// The connection is closed: by the peer, or by this side for `reason`.
        case closed(errorCode: UInt64, reason: String, byPeer: Bool)
        /// The server's certificate chain (DER, leaf first) waits for ``finishVerification(accepted:)``
        /// (a connection made without a `verify` closure).
        case certificateChain([[UInt8]])
        /// The path ``migrate()`` moved to answered its PATH_CHALLENGE (RFC 9000 §8.2): validated.
        case pathValidated
        /// The server no longer has the connection's state (it restarted, or lost it) and said so with
        /// a stateless reset (RFC 9000 §10.3): the connection is over, without a CONNECTION_CLOSE.
        case statelessReset
    }

    /// One packet number space's state (RFC 9000 §12.3).
    struct Space: Sendable {
        var read: QUICPacketProtection?
        var write: QUICPacketProtection?
        var nextPacketNumber: UInt64 = 0
        var largestReceived: UInt64?
        /// Packet numbers received, largest range first.
        var received: [ClosedRange<UInt64>] = []
        var ackNeeded = false
        var cryptoOut: [UInt8] = []
        var cryptoSendOffset: UInt64 = 0
        var cryptoIn = QUICReassembly(limit: 65_536)
        /// Frames of lost packets (CRYPTO, STREAM) to send before anything new.
        var retransmit: [QUICFrame] = []
    }

    /// One stream's state.
    struct Stream: Sendable {
        var incoming = QUICReassembly(limit: QUICClientConnection.streamWindow)
        var finalSize: UInt64?
        var finDelivered = false
        /// The most the peer may send, as last advertised.
        var receiveLimit: UInt64 = QUICClientConnection.streamWindow
        /// The highest offset received (for the connection's flow control), and the bytes the owner has
        /// taken (``QUICClientConnection/consume(_:on:)``): the window moves with those.
        var highestReceived: UInt64 = 0
        var consumed: UInt64 = 0
        /// Bytes queued and not yet sent: a slice, so sending from its front moves an index instead
        /// of the bytes behind it.
        var outgoing = ArraySlice<UInt8>()
        var sendOffset: UInt64 = 0
        var finPending = false
        var finSent = false
        /// The most this side may send, as the peer allows.
        var sendLimit: UInt64 = 0
    }

    /// The unidirectional streams the server may open (HTTP/3 needs three: control and QPACK's two).
    static let peerUnidirectionalStreams: UInt64 = 100
    /// The flow-control window offered per stream and for the connection.
    static let streamWindow: UInt64 = 16 << 20
    static let connectionWindow: UInt64 = 64 << 20
    /// The largest packet this side sends: the size every QUIC path carries (RFC 9000 §14).
    public static let packetSize = 1_200

    let tls: QUICTLS
    public internal(set) var destinationConnectionID: [UInt8]
    public let sourceConnectionID: [UInt8]
    let originalDestinationConnectionID: [UInt8]
    var spaces = [Space(), Space(), Space()]
    var events: [Event] = []
    /// The open streams; one this side opened is dropped once both directions are done, so a
    /// connection that carries 20,000 requests holds only those in flight.
    var streams: [UInt64: Stream] = [:]
    /// Streams with bytes or an end to send, in the order they asked.
    var sendQueue: [UInt64] = []
    var nextBidirectionalStream: UInt64 = 0
    var nextUnidirectionalStream: UInt64 = 2
    public internal(set) var peerParameters: QUICTransportParameters?
    public internal(set) var isClosed = false
    public internal(set) var isHandshakeComplete = false
    var sawServerInitial = false
    var pendingControlFrames: [QUICFrame] = []
    /// Datagrams made while absorbing (a CONNECTION_CLOSE), for ``pendingDatagrams()``.
    var outbox: [[UInt8]] = []
    var peerMaxData: UInt64 = 0
    var dataSent: UInt64 = 0
    var dataReceived: UInt64 = 0
    var dataConsumed: UInt64 = 0
    /// How many streams of each kind the peer allows this side to open (cumulative, RFC 9000 §4.6).
    public internal(set) var peerMaxBidirectionalStreams: UInt64 = 0
    public internal(set) var peerMaxUnidirectionalStreams: UInt64 = 0
    /// The limits STREAMS_BLOCKED was last sent for (bidirectional, unidirectional).
    var blockedAt: [UInt64?] = [nil, nil]
    var receiveLimit: UInt64 = QUICClientConnection.connectionWindow
    /// Loss detection and probe timeouts (RFC 9002).
    public internal(set) var recovery = QUICRecovery()
    /// Nanoseconds on a monotonic clock.
    let clock: @Sendable () -> UInt64
    /// Whether a Handshake packet went out (the Initial keys are then dropped, RFC 9001 §4.9.1).
    var sentHandshake = false
    /// The 1-RTT key phase (RFC 9001 §6): flipped each time the peer updates its keys.
    var keyPhase = false
    /// The 1-RTT read keys of the phase before, for packets sent before the update that arrive after it.
    var previousReadKeys: QUICPacketProtection?
    /// The first packet number this side sent (or will send) in the current key phase.
    var keyPhaseFirstPacket: UInt64 = 0
    /// After this many 1-RTT packets in one key phase, this side updates its keys (RFC 9001 §6.6: AES-GCM
    /// may seal at most 2^23 packets under one key; half that leaves room). 0: never.
    public var keyUpdateInterval: UInt64 = 1 << 22
    /// Key updates this side started.
    public internal(set) var keyUpdatesStarted = 0
    /// When the pacer lets the next packet go, while packets wait for it.
    var pacingDue: UInt64?
    /// How many more packets may go past the congestion window: a probe's (RFC 9002 §7.5).
    var probeAllowance = 0
    /// The connection IDs the server issued, by sequence number (0: its handshake's), and the one in use.
    var peerConnectionIDs: [UInt64: [UInt8]] = [:]
    /// The stateless reset tokens of the server's connection IDs (0's from its transport parameters),
    /// by sequence number; dropped with the ID when it is retired.
    var peerResetTokens: [UInt64: [UInt8]] = [:]
    var destinationSequence: UInt64 = 0
    /// Sequence numbers below this are retired.
    var retiredBelow: UInt64 = 0
    /// The PATH_CHALLENGE data the new path has yet to echo.
    var pathChallengeData: [UInt8]?
    /// Streams this side cancelled whose final size has not arrived: the highest offset seen of each.
    var cancelled: [UInt64: UInt64] = [:]
    /// A Retry's token, sent in every Initial after it, and the connection ID the Retry came from
    /// (the server's transport parameters must name it).
    var retryToken: [UInt8]?
    var retrySourceConnectionID: [UInt8]?
    /// Paths moved to and validated.
    public internal(set) var validatedMigrations = 0

    /// A connection to `serverName` offering `applicationProtocols`, the server's certificate chain
    /// judged by `verify` (DER, leaf first), or, without it, handed out as
    /// ``Event/certificateChain(_:)`` for an asynchronous verdict. The connection IDs are random unless
    /// given (for tests).
    public init(
        serverName: String?,
        applicationProtocols: [String],
        verify: (@Sendable ([[UInt8]]) -> Bool)? = nil,
        destinationConnectionID: [UInt8]? = nil,
        sourceConnectionID: [UInt8]? = nil,
        clock: @escaping @Sendable () -> UInt64 = QUICClientConnection.monotonicNanoseconds
    ) throws(QUICError) {
        self.clock = clock
        var generator = SystemRandomNumberGenerator()
        let destination = destinationConnectionID ?? (0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let source = sourceConnectionID ?? (0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) }
        self.destinationConnectionID = destination
        self.sourceConnectionID = source
        originalDestinationConnectionID = destination
        var parameters = QUICTransportParameters()
        parameters.maxIdleTimeout = 30_000
        parameters.initialMaxData = Self.connectionWindow
        parameters.initialMaxStreamDataBidiLocal = Self.streamWindow
        parameters.initialMaxStreamDataBidiRemote = Self.streamWindow
        parameters.initialMaxStreamDataUni = Self.streamWindow
        parameters.initialMaxStreamsBidi = 0
        parameters.initialMaxStreamsUni = Self.peerUnidirectionalStreams
        parameters.initialSourceConnectionID = source
        parameters.activeConnectionIDLimit = Self.connectionIDLimit
        var configuration = QUICTLS.Configuration(
            isClient: true, serverName: serverName, applicationProtocols: applicationProtocols, transportParameters: parameters.encoded()
        )
        configuration.verify = verify
        tls = try QUICTLS(configuration)
        let initial = QUICInitialSecrets(destinationConnectionID: destination)
        spaces[0].write = QUICPacketProtection(keys: initial.client)
        spaces[0].read = QUICPacketProtection(keys: initial.server)
    }

    /// The first flight: the ClientHello in a padded Initial.
    public mutating func start() throws(QUICError) -> [[UInt8]] {
        try apply(tls.start())
        return flush()
    }

    /// Nanoseconds since an arbitrary start, never going back.
    public static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// When ``handleTimeout()`` is next due (nanoseconds on the clock), nil when no timer runs.
    public func nextTimeout() -> UInt64? {
        guard !isClosed else { return nil }
        guard let pacingDue else { return recovery.nextTimeout() }
        return min(pacingDue, recovery.nextTimeout() ?? .max)
    }

    /// Timers that are due: lost packets' frames are sent again, or a probe goes out (RFC 9002 §6.2.4),
    /// or the pacer lets the next packets go.
    public mutating func handleTimeout() -> [[UInt8]] {
        guard !isClosed else { return [] }
        let now = clock()
        if let due = pacingDue, due <= now { pacingDue = nil }
        switch recovery.timeout(now: now) {
        case .lost(let space, let frames)?:
            requeue(frames, space: space)
        case .probe(let space, let frames)?:
            requeue(frames, space: space)
            if frames.isEmpty { spaces[space].retransmit.append(.ping) }
            // One or two probe packets go out whatever the congestion window says (RFC 9002 §7.5).
            probeAllowance = 2
            defer { probeAllowance = 0 }
            return flush()
        case nil:
            break
        }
        return flush()
    }

    /// Frames of lost packets, queued again: CRYPTO and STREAM in their space, control frames with the
    /// others.
    mutating func requeue(_ frames: [QUICFrame], space: Int) {
        for frame in frames {
            switch frame {
            case .crypto, .stream, .ping: spaces[space].retransmit.append(frame)
            case .ack, .padding, .connectionClose: break
            default: pendingControlFrames.append(frame)
            }
        }
    }

    /// The events since the last call.
    public mutating func takeEvents() -> [Event] {
        defer { events = [] }
        return events
    }

    /// Whether the peer allows one more stream of this side's of that kind now (its MAX_STREAMS, RFC
    /// 9000 §4.6); when not, wait for the peer to raise it (opening one anyway would be a
    /// STREAM_LIMIT_ERROR the server closes the connection for).
    public func canOpenStream(bidirectional: Bool) -> Bool {
        bidirectional ? nextBidirectionalStream / 4 < peerMaxBidirectionalStreams : nextUnidirectionalStream / 4 < peerMaxUnidirectionalStreams
    }

    /// Tells the peer this side waits for more streams (STREAMS_BLOCKED, RFC 9000 §4.6), once per limit:
    /// a frame it must acknowledge, so a peer that raises its limit only when it next writes does.
    public mutating func streamsBlocked(bidirectional: Bool) -> [[UInt8]] {
        let limit = bidirectional ? peerMaxBidirectionalStreams : peerMaxUnidirectionalStreams
        guard blockedAt[bidirectional ? 0 : 1] != limit else { return [] }
        blockedAt[bidirectional ? 0 : 1] = limit
        pendingControlFrames.append(.streamsBlocked(bidirectional: bidirectional, maximum: limit))
        return flush()
    }

    /// A PING (RFC 9000 §19.2): an ack-eliciting packet the peer answers, for when this side needs the
    /// peer to write (a server that raises its stream limit only when it next sends).
    public mutating func ping() -> [[UInt8]] {
        guard isHandshakeComplete, !isClosed else { return [] }
        spaces[2].retransmit.append(.ping)
        return flush()
    }

    /// Whether the connection keeps state for `streamID`: a stream this side opened is let go once
    /// its request is sent and its answer delivered to the end.
    public func holdsState(for streamID: UInt64) -> Bool { streams[streamID] != nil }

    /// A new stream of this side's (client-initiated), its ID.
    public mutating func openStream(bidirectional: Bool) -> UInt64 {
        let id: UInt64
        if bidirectional {
            id = nextBidirectionalStream
            nextBidirectionalStream += 4
        } else {
            id = nextUnidirectionalStream
            nextUnidirectionalStream += 4
        }
        var stream = Stream()
        stream.sendLimit =
            bidirectional ? (peerParameters?.initialMaxStreamDataBidiRemote ?? 0) : (peerParameters?.initialMaxStreamDataUni ?? 0)
        streams[id] = stream
        return id
    }

    /// Bytes queued on `streamID` that have not gone out yet (flow control, the congestion window or
    /// the pacer holds them): an owner that streams a body writes more when this is low.
    public func queuedBytes(on streamID: UInt64) -> Int { streams[streamID]?.outgoing.count ?? 0 }

    /// Queues `data` on `streamID` (and its end when `fin`); the datagrams that can go now.
    public mutating func send(_ data: [UInt8], on streamID: UInt64, fin: Bool = false) -> [[UInt8]] {
        // Taken out while it changes, so appending does not copy the queue.
        guard var stream = streams.removeValue(forKey: streamID) else { return [] }
        guard !stream.finPending else {
            streams[streamID] = stream
            return []
        }
        stream.outgoing += data
        stream.finPending = fin
        streams[streamID] = stream
        if !sendQueue.contains(streamID) { sendQueue.append(streamID) }
        return flush()
    }

    /// The verdict on the chain of ``Event/certificateChain(_:)``: the handshake goes on, or ends with
    /// `bad_certificate`; the datagrams to send.
    public mutating func finishVerification(accepted: Bool) -> [[UInt8]] {
        guard !isClosed else { return [] }
        do {
            try apply(tls.finishVerification(accepted: accepted))
        } catch {
            return fail(errorCode: 0x0100 + UInt64(tls.alert ?? 42), reason: "\(error)")
        }
        return flush()
    }

    /// The owner took `count` bytes of `streamID`'s data: once half a window is taken, the peer may
    /// send a window more (MAX_STREAM_DATA, MAX_DATA). Flow control follows the reader, so a slow one
    /// holds the peer back instead of filling memory.
    public mutating func consume(_ count: Int, on streamID: UInt64) -> [[UInt8]] {
        // (A stream already done still counts for the connection's window.)
        dataConsumed += UInt64(count)
        if var stream = streams[streamID] {
            stream.consumed += UInt64(count)
            if stream.finalSize == nil, stream.consumed + Self.streamWindow / 2 > stream.receiveLimit {
                stream.receiveLimit = stream.consumed + Self.streamWindow
                pendingControlFrames.append(.maxStreamData(streamID: streamID, maximum: stream.receiveLimit))
            }
            streams[streamID] = stream
        }
        if dataConsumed + Self.connectionWindow / 2 > receiveLimit {
            receiveLimit = dataConsumed + Self.connectionWindow
            pendingControlFrames.append(.maxData(receiveLimit))
        }
        return pendingControlFrames.isEmpty ? [] : flush()
    }

    /// Closes the connection with an application error: the datagram that says so.
    public mutating func close(errorCode: UInt64 = 0, reason: String = "") -> [[UInt8]] {
        guard !isClosed else { return [] }
        pendingControlFrames.append(.connectionClose(errorCode: errorCode, frameType: nil, reason: reason))
        let datagrams = flush()
        isClosed = true
        events.append(.closed(errorCode: errorCode, reason: reason, byPeer: false))
        return datagrams
    }
}
