/// A token bucket that lets a taker go into debt: bytes already moved are taken whole, and the taker
/// waits the debt off before it moves more. So a limit holds for chunks of any size (a 64 KiB read at
/// 10 KiB/s is paid for by a 6 s wait), and the average over a window stays within the rate plus one
/// burst. Pure: the caller gives the time, in seconds on a monotonic clock.
public struct TokenBucket: Sendable, Hashable {
    /// Bytes a second, as given.
    public private(set) var bytesPerSecond: Int64
    /// Bytes a second.
    public private(set) var rate: Double
    /// The most tokens that can pile up while nothing is taken.
    public private(set) var burst: Double
    /// Tokens now; negative while in debt.
    public private(set) var level: Double
    private var last: Double?

    /// A bucket for `bytesPerSecond` (> 0), starting full; its burst is 50 ms of the rate, at least
    /// 16 KiB, so a long transfer's average stays within about 1 % of the rate over 10 s.
    public init(bytesPerSecond: Int64) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        rate = Double(max(1, bytesPerSecond))
        burst = Self.burst(for: rate)
        level = burst
    }

    private static func burst(for rate: Double) -> Double { max(16_384, rate * 0.05) }

    /// Changes the rate from `now` on (tokens earned so far at the old rate are kept, up to the new
    /// burst).
    public mutating func setRate(_ bytesPerSecond: Int64, now: Double) {
        refill(now: now)
        self.bytesPerSecond = max(1, bytesPerSecond)
        rate = Double(max(1, bytesPerSecond))
        burst = Self.burst(for: rate)
        level = min(level, burst)
    }

    /// Adds the tokens earned since the last call.
    public mutating func refill(now: Double) {
        if let last, now > last { level = min(burst, level + (now - last) * rate) }
        last = max(last ?? now, now)
    }

    /// Takes `count` bytes at `now` and returns the seconds to wait before the next take (0 unless the
    /// bucket is in debt).
    public mutating func take(_ count: Int, now: Double) -> Double {
        refill(now: now)
        level -= Double(count)
        return wait
    }

    /// Seconds until the bucket is out of debt (0 when it is not in debt).
    public var wait: Double { level < 0 ? -level / rate : 0 }
}

extension Optional where Wrapped == TokenBucket {
    /// Sets the limit from `now` on: nil removes the bucket, a first limit makes a full one, a new rate
    /// keeps the tokens earned so far (``TokenBucket/setRate(_:now:)``).
    public mutating func setLimit(_ bytesPerSecond: Int64?, now: Double) {
        guard let bytesPerSecond else {
            self = nil
            return
        }
        if self == nil {
            var bucket = TokenBucket(bytesPerSecond: bytesPerSecond)
            bucket.refill(now: now)
            self = bucket
        } else {
            self?.setRate(bytesPerSecond, now: now)
        }
    }
}

/// One bandwidth limit shared by many takers, weighted: while takers queue for it, each gets a share of
/// the rate in proportion to its weight (start-time fair queuing, as in Goyal, Vin and Cheng 1996: a
/// take is tagged with the later of the system's virtual time and the taker's last finish tag, and
/// served in tag order; a taker's tags advance by bytes ÷ weight; one that was away briefly keeps two
/// takes of credit). Capacity a taker does not use goes
/// to the others, so the total stays at the limit while any of them can use it. Pure: ``BandwidthPool``
/// (FerryEngine) keeps one behind a lock and resumes the takers it releases.
public struct SharedBandwidth: Sendable {
    /// A take's answer.
    public enum Answer: Sendable, Hashable {
        /// Go on now.
        case go
        /// Wait until ``release(now:)`` lists this ticket.
        case queued(ticket: Int)
    }

    /// The limit; nil: unlimited.
    public private(set) var bucket: TokenBucket?
    private var virtualTime: Double = 0
    private var finishTags: [Int: Double] = [:]
    private var queue: [(ticket: Int, member: Int, tag: Double, count: Int)] = []
    private var nextTicket = 0

    /// A share of `bytesPerSecond` (nil: unlimited).
    public init(bytesPerSecond: Int64?) {
        bucket = bytesPerSecond.map { TokenBucket(bytesPerSecond: $0) }
    }

    /// Takes waiting now.
    public var queued: Int { queue.count }

    /// Changes the limit (nil: none; every queued take may then go at the next ``release(now:)``).
    public mutating func setLimit(_ bytesPerSecond: Int64?, now: Double) {
        bucket.setLimit(bytesPerSecond, now: now)
    }

    /// `member` (any number that tells takers apart) moved `count` bytes and asks to go on, with
    /// `weight` (> 0).
    public mutating func take(member: Int, count: Int, weight: Double, now: Double) -> Answer {
        let weight = max(weight, 0.001)
        // A taker away for a moment (writing to disk between reads) keeps up to two takes of credit: in
        // plain start-time fair queuing it would lose its turn to the others, and the heaviest taker,
        // whose tags advance least, would lose most.
        let start: Double
        if let finish = finishTags[member] {
            start = max(virtualTime - 2 * Double(count) / weight, finish)
        } else {
            start = virtualTime
        }
        finishTags[member] = start + Double(count) / weight
        guard var bucket else { return .go }
        bucket.refill(now: now)
        if queue.isEmpty, bucket.level > 0 {
            _ = bucket.take(count, now: now)
            self.bucket = bucket
            virtualTime = start
            return .go
        }
        self.bucket = bucket
        nextTicket += 1
        let ticket = nextTicket
        queue.append((ticket, member, start, count))
        return .queued(ticket: ticket)
    }

    /// The queued tickets that may go now, in tag order, and the seconds after which to call again
    /// while some still wait (nil when none wait).
    public mutating func release(now: Double) -> (tickets: [Int], again: Double?) {
        guard !queue.isEmpty else { return ([], nil) }
        guard var bucket else {
            defer { queue = [] }
            return (queue.map(\.ticket), nil)
        }
        bucket.refill(now: now)
        var released: [Int] = []
        while bucket.level > 0, let index = queue.indices.min(by: { queue[$0].tag < queue[$1].tag }) {
            let next = queue.remove(at: index)
            _ = bucket.take(next.count, now: now)
            virtualTime = max(virtualTime, next.tag)
            released.append(next.ticket)
        }
        self.bucket = bucket
        return (released, queue.isEmpty ? nil : max(bucket.wait, 0.001))
    }

    /// Drops a queued ticket (its taker was cancelled).
    public mutating func withdraw(_ ticket: Int) {
        queue.removeAll { $0.ticket == ticket }
    }

    /// Forgets `member` (its transfer ended).
    public mutating func leave(_ member: Int) {
        finishTags[member] = nil
    }
}
