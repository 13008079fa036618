/// NewReno congestion control (RFC 9002 §7) with pacing (§7.7), as a value: how many bytes may be in
/// flight, and when the next packet may leave. The connection asks ``canSend(_:)`` before each
/// ack-eliciting packet, and tells it what was sent, acknowledged and lost. Times are nanoseconds on
/// the connection's monotonic clock.
public struct QUICCongestion: Sendable {
    /// The largest datagram this side sends.
    public let maximumDatagramSize: Int
    /// Bytes that may be in flight (RFC 9002 §7.2: ten datagrams at first, never below two).
    public private(set) var window: Int
    public private(set) var slowStartThreshold = Int.max
    /// Bytes in ack-eliciting packets sent and not yet acknowledged or declared lost.
    public private(set) var bytesInFlight = 0
    /// The most bytes in flight past the window a send has left (probes may, RFC 9002 §7.5; a window
    /// halved by a loss is not counted): for tests and metrics.
    public private(set) var overshoot = Int.min
    /// When the current recovery period began: losses of packets sent before it do not shrink the
    /// window again (§7.3.2).
    var recoveryStart: UInt64?
    /// Pacing (§7.7): bytes that may leave now, refilled at 5/4 of the window per round trip, up to
    /// the initial window's worth.
    var tokens: Double
    var lastRefill: UInt64?

    public var minimumWindow: Int { 2 * maximumDatagramSize }

    public init(maximumDatagramSize: Int = 1_200) {
        self.maximumDatagramSize = maximumDatagramSize
        window = min(10 * maximumDatagramSize, max(14_720, 2 * maximumDatagramSize))
        tokens = Double(window)
    }

    /// Whether a packet of `size` bytes may be sent at `now` (`smoothedRTT` sets the pacing rate): the
    /// window has room and the pacer has the tokens.
    public mutating func canSend(_ size: Int, now: UInt64, smoothedRTT: UInt64) -> Bool {
        guard bytesInFlight + size <= window else { return false }
        refill(now: now, smoothedRTT: smoothedRTT)
        return tokens >= Double(size)
    }

    /// When the pacer will have `size` bytes of tokens (nil: now, or the window is what blocks).
    public func pacingDelay(for size: Int, now: UInt64, smoothedRTT: UInt64) -> UInt64? {
        guard bytesInFlight + size <= window, tokens < Double(size) else { return nil }
        let rate = Self.rate(window: window, smoothedRTT: smoothedRTT)
        let missing = Double(size) - tokens
        return now + UInt64((missing / rate).rounded(.up))
    }

    /// An ack-eliciting packet of `size` bytes left (probes included: they may exceed the window).
    public mutating func sent(_ size: Int) {
        bytesInFlight += size
        overshoot = max(overshoot, bytesInFlight - window)
        tokens = max(0, tokens - Double(size))
    }

    /// A packet of `size` bytes sent at `sentTime` was acknowledged (§7.3.1, §7.3.3).
    public mutating func acknowledged(_ size: Int, sentTime: UInt64) {
        bytesInFlight = max(0, bytesInFlight - size)
        // In recovery, a packet sent before it began does not grow the window.
        if let recoveryStart, sentTime <= recoveryStart { return }
        if window < slowStartThreshold {
            window += size
        } else {
            window += maximumDatagramSize * size / max(window, 1)
        }
    }

    /// Packets were declared lost: `sizes` in all, the latest sent at `latestSentTime` (§7.3.2). A
    /// new loss event halves the window (once per round trip: losses of packets sent before the
    /// recovery period began are part of the same event).
    public mutating func lost(bytes sizes: Int, latestSentTime: UInt64, now: UInt64) {
        bytesInFlight = max(0, bytesInFlight - sizes)
        if let recoveryStart, latestSentTime <= recoveryStart { return }
        recoveryStart = now
        slowStartThreshold = max(window / 2, minimumWindow)
        window = slowStartThreshold
    }

    /// Persistent congestion (§7.6): every packet over a long span was lost; the window falls to the
    /// minimum and slow start begins again.
    public mutating func persistentCongestion() {
        window = minimumWindow
        recoveryStart = nil
    }

    /// Packets that are no longer in flight without being acknowledged or lost (their keys discarded).
    public mutating func discarded(_ size: Int) {
        bytesInFlight = max(0, bytesInFlight - size)
    }

    private mutating func refill(now: UInt64, smoothedRTT: UInt64) {
        defer { lastRefill = now }
        guard let lastRefill, now > lastRefill else { return }
        let rate = Self.rate(window: window, smoothedRTT: smoothedRTT)
        tokens = min(Double(max(window, 10 * maximumDatagramSize)), tokens + Double(now - lastRefill) * rate)
    }

    /// Bytes a nanosecond: 5/4 of the window per smoothed round trip (§7.7's N = 1.25).
    static func rate(window: Int, smoothedRTT: UInt64) -> Double {
        1.25 * Double(window) / Double(max(smoothedRTT, 1_000))
    }
}
