#if canImport(Glibc)
import Glibc
#endif

/// A QUIC client connection (RFC 9000) as a state machine without I/O: datagrams in, datagrams out.
/// It runs the TLS handshake over CRYPTO frames at each encryption level, acknowledges what it
/// receives, and carries stream data both ways within the peer's flow-control limits.
///
/// Not yet (issue 42 continues): loss detection and retransmission (RFC 9002), congestion control,
/// connection migration, key updates, 0-RTT, and Retry and Version Negotiation handling beyond refusal.
/// On a loopback link nothing is lost; elsewhere a lost packet stalls the connection.
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
    public private(set) var peerParameters: QUICTransportParameters?
    public internal(set) var isClosed = false
    public private(set) var isHandshakeComplete = false
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

// MARK: Receiving

extension QUICClientConnection {
    /// A datagram from the server: its packets opened and acted on; the datagrams to send in answer.
    public mutating func receive(_ datagram: [UInt8]) -> [[UInt8]] {
        absorb(datagram)
        return pendingDatagrams()
    }

    /// The datagrams to send now: what ``absorb(_:)`` owes the peer (its acknowledgements, a
    /// CONNECTION_CLOSE), with whatever else is ready.
    public mutating func pendingDatagrams() -> [[UInt8]] {
        defer { outbox = [] }
        return isClosed ? outbox : outbox + flush()
    }

    /// A datagram from the server, its packets opened and acted on, without answering yet: an owner
    /// that reads datagrams in batches calls ``pendingDatagrams()`` once after each, so one
    /// acknowledgement covers the batch (RFC 9000 §13.2.2 asks for one every two packets at least).
    public mutating func absorb(_ datagram: [UInt8]) {
        guard !isClosed else { return }
        if isStatelessReset(datagram) {
            // Draining at once: nothing more is sent (RFC 9000 §10.3.1).
            isClosed = true
            events.append(.statelessReset)
            return
        }
        var offset = 0
        while offset < datagram.count {
            guard let header = try? QUICPacketHeader.parse(datagram, at: offset, shortConnectionIDLength: sourceConnectionID.count),
                header.packetLength > 0, offset + header.packetLength <= datagram.count
            else { break }
            defer { offset += header.packetLength }
            if header.kind == .retry {
                receivedRetry(Array(datagram[offset..<(offset + header.packetLength)]), header: header)
                return
            }
            if header.kind == .versionNegotiation {
                receivedVersionNegotiation(header)
                return
            }
            guard let level = header.level, level != .earlyData else { continue }
            do {
                try receivePacket(Array(datagram[offset..<(offset + header.packetLength)]), header: header, level: level)
            } catch {
                outbox += fail(errorCode: 0x0a, reason: "\(error)")
                return
            }
            if isClosed { return }
        }
    }

    private mutating func receivePacket(_ packet: [UInt8], header: QUICPacketHeader, level: QUICEncryptionLevel) throws(QUICError) {
        let index = Self.spaceIndex(level)
        guard let protection = spaces[index].read else { return }  // keys not yet (or no longer) here
        let largest = spaces[index].largestReceived
        // A packet these keys do not open is dropped, as RFC 9001 §5.5 says: it may be forged, or
        // (1-RTT) sealed with the next key phase or the one before.
        var opened = try? protection.unprotect(packet, packetNumberOffset: header.packetNumberOffset, largestReceived: largest)
        if opened == nil, level == .application {
            opened = keyPhaseChange(packet, header: header, largest: largest)
        }
        guard let opened else { return }
        if level == .initial, !sawServerInitial {
            // The server's connection ID is the destination from now on (RFC 9000 §7.2).
            sawServerInitial = true
            destinationConnectionID = header.sourceConnectionID
        }
        record(opened.packetNumber, in: index)
        for frame in try QUICFrame.decodeAll(opened.payload) {
            if frame.isAckEliciting { spaces[index].ackNeeded = true }
            try handle(frame, at: level)
            if isClosed { return }
        }
    }

    /// A 1-RTT packet the current keys did not open: sealed with the next key phase (the peer updated
    /// its keys, RFC 9001 §6: this side follows, reading and writing with the next keys from now on), or
    /// with the previous phase (a packet that was on its way during the update). Nil: neither.
    private mutating func keyPhaseChange(_ packet: [UInt8], header: QUICPacketHeader, largest: UInt64?) -> QUICPacketProtection.Opened? {
        if let previous = previousReadKeys,
            let opened = try? previous.unprotect(packet, packetNumberOffset: header.packetNumberOffset, largestReceived: largest)
        {
            return opened
        }
        guard let current = spaces[2].read, let write = spaces[2].write else { return nil }
        let next = QUICPacketProtection(keys: current.keys.updated())
        guard let opened = try? next.unprotect(packet, packetNumberOffset: header.packetNumberOffset, largestReceived: largest),
            opened.header[0] & 0x04 != 0 ? !keyPhase : keyPhase
        else { return nil }
        previousReadKeys = current
        spaces[2].read = next
        spaces[2].write = QUICPacketProtection(keys: write.keys.updated())
        keyPhase.toggle()
        keyPhaseFirstPacket = spaces[2].nextPacketNumber
        return opened
    }

    private mutating func record(_ packetNumber: UInt64, in index: Int) {
        spaces[index].largestReceived = max(spaces[index].largestReceived ?? 0, packetNumber)
        var ranges = spaces[index].received
        ranges.append(packetNumber...packetNumber)
        ranges.sort { $0.lowerBound > $1.lowerBound }
        var merged: [ClosedRange<UInt64>] = []
        for range in ranges {
            if let last = merged.last, range.upperBound + 1 >= last.lowerBound {
                merged[merged.count - 1] = min(range.lowerBound, last.lowerBound)...max(range.upperBound, last.upperBound)
            } else {
                merged.append(range)
            }
        }
        // Only the newest ranges are kept: an ACK frame need not name old ones again.
        spaces[index].received = Array(merged.prefix(32))
    }

    private mutating func handle(_ frame: QUICFrame, at level: QUICEncryptionLevel) throws(QUICError) {
        switch frame {
        case .crypto(let offset, let data):
            let index = Self.spaceIndex(level)
            let ready = try spaces[index].cryptoIn.add(data, at: offset)
            if !ready.isEmpty { try apply(tls.receive(ready, at: level)) }
        case .stream(let id, let offset, let data, let fin):
            try receive(stream: id, offset: offset, data: data, fin: fin)
        case .ack(let ranges, let delay, _):
            let index = Self.spaceIndex(level)
            requeue(recovery.acknowledged(ranges, ackDelay: delay, in: index, now: clock()), space: index)
        case .maxData(let maximum):
            peerMaxData = max(peerMaxData, maximum)
        case .maxStreamData(let id, let maximum):
            if var stream = streams[id] {
                stream.sendLimit = max(stream.sendLimit, maximum)
                streams[id] = stream
            }
        case .resetStream(let id, let code, let finalSize):
            if absorbCancelled(id, upTo: finalSize, final: true) { break }
            if let stream = streams[id] {
                // What it sent and what it will not send count as received and read (RFC 9000 §4.5).
                let final = max(finalSize, stream.highestReceived)
                dataReceived += final - stream.highestReceived
                dataConsumed += final - min(stream.consumed, final)
            }
            events.append(.streamReset(streamID: id, errorCode: code))
            streams[id] = nil
        case .pathChallenge(let data):
            pendingControlFrames.append(.pathResponse(data))
        case .connectionClose(let code, _, let reason):
            isClosed = true
            events.append(.closed(errorCode: code, reason: reason, byPeer: true))
        case .handshakeDone:
            // Handshake confirmed (RFC 9001 §4.1.2): the Handshake keys go.
            spaces[1].read = nil
            spaces[1].write = nil
            spaces[1].retransmit = []
            recovery.discard(space: 1)
            recovery.handshakeConfirmed = true
        case .maxStreams(let bidirectional, let maximum):
            if bidirectional { peerMaxBidirectionalStreams = max(peerMaxBidirectionalStreams, maximum) }
            else { peerMaxUnidirectionalStreams = max(peerMaxUnidirectionalStreams, maximum) }
        case .newConnectionID(let sequence, let retirePriorTo, let connectionID, let token):
            try received(connectionID: connectionID, sequence: sequence, retirePriorTo: retirePriorTo, resetToken: token)
        case .pathResponse(let data):
            receivedPathResponse(data)
        case .padding, .ping, .newToken, .retireConnectionID, .dataBlocked, .streamDataBlocked, .streamsBlocked, .stopSending:
            break
        }
    }

    private mutating func receive(stream id: UInt64, offset: UInt64, data: [UInt8], fin: Bool) throws(QUICError) {
        // Server-initiated bidirectional streams are not allowed (initial_max_streams_bidi 0).
        guard id & 0x03 != 0x01 else { throw .malformed("a server-initiated bidirectional stream") }
        if id & 0x03 == 0x00, streams[id] == nil {
            guard id < nextBidirectionalStream else { throw .malformed("data on stream \(id), which this side has not opened") }
            // A stream this side cancelled: its bytes still count for the connection; else a late copy.
            _ = absorbCancelled(id, upTo: offset + UInt64(data.count), final: fin)
            guard dataReceived <= receiveLimit else { throw .malformed("more data than the connection's flow-control limit") }
            return
        }
        // A server's unidirectional stream past the limit this side announced (RFC 9000 §4.6): a
        // STREAM_LIMIT_ERROR, before anything is kept for it.
        guard id & 0x03 != 0x03 || id / 4 < Self.peerUnidirectionalStreams else {
            throw .malformed("the server opened more unidirectional streams than the \(Self.peerUnidirectionalStreams) allowed")
        }
        // Taken out while it changes, so its reassembly buffer is not copied (a throw below closes the
        // connection anyway).
        var stream = streams.removeValue(forKey: id) ?? Stream()
        let end = offset + UInt64(data.count)
        // Flow control (RFC 9000 §4): no byte past what this side allowed, on the stream or in all.
        guard end <= stream.receiveLimit else { throw .malformed("stream \(id) data past its flow-control limit") }
        if end > stream.highestReceived {
            dataReceived += end - stream.highestReceived
            stream.highestReceived = end
        }
        guard dataReceived <= receiveLimit else { throw .malformed("more data than the connection's flow-control limit") }
        if fin { stream.finalSize = end }
        let ready = try stream.incoming.add(data, at: offset)
        let ends = stream.finalSize.map { stream.incoming.delivered == $0 } ?? false
        if !ready.isEmpty || (ends && !stream.finDelivered) {
            events.append(.streamData(streamID: id, data: ready, fin: ends))
            stream.finDelivered = ends
        }
        streams[id] = id & 0x03 == 0x00 && stream.finDelivered && stream.finSent ? nil : stream
    }

    /// What the TLS handshake asks for.
    mutating func apply(_ tlsEvents: [QUICTLS.Event]) throws(QUICError) {
        for event in tlsEvents {
            switch event {
            case .send(let level, let bytes):
                spaces[Self.spaceIndex(level)].cryptoOut += bytes
            case .readKeys(let level, let keys):
                spaces[Self.spaceIndex(level)].read = QUICPacketProtection(keys: keys)
            case .writeKeys(let level, let keys):
                spaces[Self.spaceIndex(level)].write = QUICPacketProtection(keys: keys)
            case .verifyPeer(let chain):
                events.append(.certificateChain(chain))
            case .handshakeComplete:
                try adoptPeerParameters()
                isHandshakeComplete = true
                issueConnectionID()
                events.append(.handshakeComplete(applicationProtocol: tls.applicationProtocol))
            }
        }
    }

    /// The server's transport parameters, checked against the connection IDs actually used (RFC 9000
    /// §7.3: otherwise an attacker could have changed them).
    private mutating func adoptPeerParameters() throws(QUICError) {
        guard let encoded = tls.peerTransportParameters else { throw .malformed("the server sent no transport parameters") }
        let parameters = try QUICTransportParameters.decode(encoded)
        guard parameters.originalDestinationConnectionID == originalDestinationConnectionID else {
            throw .malformed("original_destination_connection_id does not match the first Initial")
        }
        guard parameters.initialSourceConnectionID == destinationConnectionID else {
            throw .malformed("initial_source_connection_id does not match the server's")
        }
        guard parameters.retrySourceConnectionID == retrySourceConnectionID else {
            throw .malformed("retry_source_connection_id does not match the Retry (RFC 9000 §7.3)")
        }
        peerParameters = parameters
        if let token = parameters.statelessResetToken { peerResetTokens[0] = token }
        peerMaxData = parameters.initialMaxData
        peerMaxBidirectionalStreams = max(peerMaxBidirectionalStreams, parameters.initialMaxStreamsBidi)
        peerMaxUnidirectionalStreams = max(peerMaxUnidirectionalStreams, parameters.initialMaxStreamsUni)
        recovery.maximumAckDelay = parameters.maxAckDelay * QUICRecovery.millisecond
        recovery.ackDelayExponent = parameters.ackDelayExponent
        for (id, var stream) in streams where stream.sendLimit == 0 {
            stream.sendLimit = id & 0x02 == 0 ? parameters.initialMaxStreamDataBidiRemote : parameters.initialMaxStreamDataUni
            streams[id] = stream
        }
    }

    mutating func fail(errorCode: UInt64, reason: String) -> [[UInt8]] {
        pendingControlFrames = [.connectionClose(errorCode: errorCode, frameType: 0, reason: reason)]
        let datagrams = flush()
        isClosed = true
        events.append(.closed(errorCode: errorCode, reason: reason, byPeer: false))
        return datagrams
    }

    static func spaceIndex(_ level: QUICEncryptionLevel) -> Int {
        switch level {
        case .initial: 0
        case .handshake: 1
        case .earlyData, .application: 2
        }
    }
}
