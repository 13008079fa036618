/// Loss detection and probe timeouts (RFC 9002 §5, §6) as a value: the ack-eliciting packets in
/// flight per packet number space with the frames they carried, the round-trip estimate, and the
/// timers. What it finds lost or probes with is handed back as frames to send again; the connection
/// decides how. Times are nanoseconds on a monotonic clock the owner passes in.
public struct QUICRecovery: Sendable {
    /// A packet sent, until it is acknowledged or lost.
    public struct SentPacket: Sendable {
        public var number: UInt64
        public var time: UInt64
        public var ackEliciting: Bool
        public var size: Int
        /// The frames to send again if it is lost: CRYPTO, STREAM and control frames (never ACK or
        /// PADDING).
        public var frames: [QUICFrame]

        public init(number: UInt64, time: UInt64, ackEliciting: Bool, size: Int, frames: [QUICFrame]) {
            self.number = number
            self.time = time
            self.ackEliciting = ackEliciting
            self.size = size
            self.frames = frames
        }
    }

    struct SpaceState: Sendable {
        var sent: [UInt64: SentPacket] = [:]
        var largestAcknowledged: UInt64?
        var lossTime: UInt64?
        var lastAckElicitingTime: UInt64?
        /// When the latest packet acknowledged so far was sent (for persistent congestion, §7.6).
        var latestAcknowledgedSentTime: UInt64?
        var discarded = false
    }

    static let millisecond: UInt64 = 1_000_000
    /// RFC 9002 §6.1: three packets, or 9/8 of the round trip.
    static let packetThreshold: UInt64 = 3
    static let granularity: UInt64 = millisecond

    var spaces = [SpaceState(), SpaceState(), SpaceState()]
    public private(set) var latestRTT: UInt64 = 0
    /// RFC 9002 §6.2.2's initial estimate: 333 ms, half of it as the variation.
    public internal(set) var smoothedRTT: UInt64 = 333 * millisecond
    public internal(set) var rttVariation: UInt64 = 333 * millisecond / 2
    public private(set) var minimumRTT: UInt64 = .max
    var hasSample = false
    /// Probe timeouts in a row without an acknowledgement (the timeout doubles each time).
    public private(set) var probeCount = 0
    /// The peer's max_ack_delay and ack_delay_exponent (transport parameters).
    public var maximumAckDelay: UInt64 = 25 * millisecond
    public var ackDelayExponent: UInt64 = 3
    /// Whether the handshake is confirmed: until then no probe timer runs for 1-RTT packets.
    public var handshakeConfirmed = false
    /// NewReno and pacing (RFC 9002 §7), fed by what is sent, acknowledged and lost here.
    public internal(set) var congestion = QUICCongestion()

    public init() {}

    /// Bytes in ack-eliciting packets not yet acknowledged or lost.
    /// The largest packet number the peer acknowledged in `space`, if any.
    public func largestAcknowledged(in space: Int) -> UInt64? { spaces[space].largestAcknowledged }

    public var bytesInFlight: Int { spaces.reduce(0) { $0 + $1.sent.values.reduce(0) { $0 + ($1.ackEliciting ? $1.size : 0) } } }

    /// The connection moved to a new path (RFC 9002 §9.4): the round-trip estimate and the congestion
    /// controller start afresh; what is in flight stays in flight.
    public mutating func newPath() {
        let inFlight = congestion.bytesInFlight
        congestion = QUICCongestion(maximumDatagramSize: congestion.maximumDatagramSize)
        congestion.sent(inFlight)
        (smoothedRTT, rttVariation, minimumRTT, hasSample) = (333 * Self.millisecond, 333 * Self.millisecond / 2, .max, false)
    }

    /// `packet` went out in `space` (0 Initial, 1 Handshake, 2 application).
    public mutating func sent(_ packet: SentPacket, in space: Int) {
        guard !spaces[space].discarded else { return }
        guard packet.ackEliciting else { return }
        spaces[space].sent[packet.number] = packet
        spaces[space].lastAckElicitingTime = packet.time
        congestion.sent(packet.size)
    }

    /// What `space` has in flight, taken out of flight (not lost, not acknowledged; no sample): the
    /// frames it carried, oldest first. A Retry does this to the first Initials.
    public mutating func abandon(space: Int) -> [QUICFrame] {
        let packets = spaces[space].sent.values.sorted { $0.number < $1.number }
        congestion.discarded(packets.reduce(0) { $0 + $1.size })
        spaces[space].sent = [:]
        spaces[space].lossTime = nil
        spaces[space].lastAckElicitingTime = nil
        return packets.flatMap(\.frames)
    }

    /// The keys of `space` are gone: nothing there is in flight any more, nor will be.
    public mutating func discard(space: Int) {
        congestion.discarded(spaces[space].sent.values.reduce(0) { $0 + $1.size })
        spaces[space] = SpaceState(discarded: true)
        probeCount = 0
    }

    /// An ACK frame for `space` arrived at `now`: the packets it names are done, the round trip is
    /// sampled from the largest when it is new, and the frames of packets now deemed lost come back.
    public mutating func acknowledged(_ ranges: [ClosedRange<UInt64>], ackDelay: UInt64, in space: Int, now: UInt64) -> [QUICFrame] {
        guard let largest = ranges.first?.upperBound, !spaces[space].discarded else { return [] }
        var newlyAcked: [SentPacket] = []
        // Only packets actually in flight are looked at, each against the ranges (largest first) by
        // binary search: a peer's many ranges, or one of 2^62, cost little.
        for number in Array(spaces[space].sent.keys) where Self.contains(ranges, number) {
            if let packet = spaces[space].sent.removeValue(forKey: number) { newlyAcked.append(packet) }
        }
        let previousLargest = spaces[space].largestAcknowledged
        spaces[space].largestAcknowledged = max(previousLargest ?? 0, largest)
        if let sampled = newlyAcked.first(where: { $0.number == largest }), previousLargest.map({ largest > $0 }) ?? true {
            updateRTT(sample: now > sampled.time ? now - sampled.time : 0, ackDelay: space == 2 ? ackDelay : 0)
        }
        if !newlyAcked.isEmpty { probeCount = 0 }
        for packet in newlyAcked {
            congestion.acknowledged(packet.size, sentTime: packet.time)
            spaces[space].latestAcknowledgedSentTime = max(spaces[space].latestAcknowledgedSentTime ?? 0, packet.time)
        }
        return detectLost(in: space, now: now)
    }

    /// Whether `number` is in `ranges` (largest first, not overlapping).
    static func contains(_ ranges: [ClosedRange<UInt64>], _ number: UInt64) -> Bool {
        var (low, high) = (0, ranges.count - 1)
        while low <= high {
            let middle = (low + high) / 2
            if ranges[middle].contains(number) { return true }
            if number > ranges[middle].upperBound { high = middle - 1 } else { low = middle + 1 }
        }
        return false
    }

    /// RFC 9002 §5.3.
    private mutating func updateRTT(sample: UInt64, ackDelay rawDelay: UInt64) {
        latestRTT = sample
        minimumRTT = min(minimumRTT, sample)
        guard hasSample else {
            hasSample = true
            smoothedRTT = sample
            rttVariation = sample / 2
            return
        }
        // The peer's ACK Delay, in its units (2^exponent microseconds), as nanoseconds; a huge one saturates.
        let (microseconds, overflow) = rawDelay.multipliedReportingOverflow(by: 1 << min(ackDelayExponent, 20))
        let scaled = overflow || microseconds > UInt64.max / 1_000 ? UInt64.max : microseconds * 1_000
        let delay = min(scaled, handshakeConfirmed ? maximumAckDelay : .max)
        let adjusted = sample >= minimumRTT + delay ? sample - delay : sample
        let difference = smoothedRTT > adjusted ? smoothedRTT - adjusted : adjusted - smoothedRTT
        rttVariation = (3 * rttVariation + difference) / 4
        smoothedRTT = (7 * smoothedRTT + adjusted) / 8
    }

    /// Packets below the largest acknowledged that are 3 packets or 9/8 of a round trip behind are lost
    /// (RFC 9002 §6.1); the loss timer is set for the next one that may be.
    private mutating func detectLost(in space: Int, now: UInt64) -> [QUICFrame] {
        guard let largest = spaces[space].largestAcknowledged else { return [] }
        let delay = max(max(latestRTT, smoothedRTT) * 9 / 8, Self.granularity)
        var lost: [QUICFrame] = []
        var (bytes, earliest, latest): (Int, UInt64, UInt64) = (0, .max, 0)
        spaces[space].lossTime = nil
        for number in spaces[space].sent.keys.sorted() where number < largest {
            guard let packet = spaces[space].sent[number] else { continue }
            if largest - number >= Self.packetThreshold || packet.time + delay <= now {
                lost += packet.frames
                spaces[space].sent[number] = nil
                (bytes, earliest, latest) = (bytes + packet.size, min(earliest, packet.time), max(latest, packet.time))
            } else {
                spaces[space].lossTime = min(spaces[space].lossTime ?? .max, packet.time + delay)
            }
        }
        guard bytes > 0 else { return lost }
        congestion.lost(bytes: bytes, latestSentTime: latest, now: now)
        // Persistent congestion (§7.6): what was lost spans three probe timeouts, and nothing sent in
        // that span (or after it began) was acknowledged.
        let persistent = (smoothedRTT + max(4 * rttVariation, Self.granularity) + maximumAckDelay) * 3
        if hasSample, latest - earliest > persistent, spaces[space].latestAcknowledgedSentTime.map({ $0 < earliest }) ?? true {
            congestion.persistentCongestion()
        }
        return lost
    }

    /// When a timer fires next: the earliest loss time, else the probe timeout of the space whose
    /// ack-eliciting packets are in flight; nil when nothing waits.
    public func nextTimeout() -> UInt64? {
        if let loss = spaces.compactMap(\.lossTime).min() { return loss }
        return probeTimeout()?.time
    }

    /// RFC 9002 §6.2.1: smoothed RTT, four variations (at least the granularity), and for 1-RTT the
    /// peer's max_ack_delay, doubled for each probe in a row.
    private func probeTimeout() -> (time: UInt64, space: Int)? {
        let base = smoothedRTT + max(4 * rttVariation, Self.granularity)
        var earliest: (time: UInt64, space: Int)?
        for space in 0..<3 where !spaces[space].discarded && !spaces[space].sent.isEmpty {
            if space == 2 && !handshakeConfirmed { continue }
            guard let last = spaces[space].lastAckElicitingTime else { continue }
            let duration = (base + (space == 2 ? maximumAckDelay : 0)) << min(probeCount, 16)
            if earliest.map({ last + duration < $0.time }) ?? true { earliest = (last + duration, space) }
        }
        return earliest
    }

    /// What a timer firing at `now` asks for: the frames of packets now lost, or a probe in a space
    /// (the frames of its oldest packet in flight, to send again; none: a PING).
    public enum Timeout: Sendable {
        case lost(space: Int, frames: [QUICFrame])
        case probe(space: Int, frames: [QUICFrame])
    }

    public mutating func timeout(now: UInt64) -> Timeout? {
        if let space = (0..<3).first(where: { spaces[$0].lossTime.map { $0 <= now } ?? false }) {
            return .lost(space: space, frames: detectLost(in: space, now: now))
        }
        guard let probe = probeTimeout(), probe.time <= now else { return nil }
        probeCount += 1
        // The timer restarts from now: the probe is itself ack-eliciting.
        spaces[probe.space].lastAckElicitingTime = now
        let oldest = spaces[probe.space].sent.keys.min().flatMap { spaces[probe.space].sent[$0]?.frames } ?? []
        return .probe(space: probe.space, frames: oldest)
    }
}
