/// curl's `--speed-limit B --speed-time S`: a transfer that stays under B bytes a second for S seconds
/// fails. Pure: ``observe(time:bytes:)`` takes a sample (about one a second) and says when it is over.
public struct SpeedFloor: Sendable, Equatable {
    /// The lowest rate, in bytes a second.
    public let bytesPerSecond: Int64
    /// How long the rate may stay under it, in seconds.
    public let seconds: Double
    private var last: (time: Double, bytes: Int64)?
    /// When the rate went under the floor, if it is under it now.
    private var slowSince: Double?

    /// A floor of `bytesPerSecond` held for at most `seconds`.
    public init(bytesPerSecond: Int64, seconds: Double) {
        self.bytesPerSecond = bytesPerSecond
        self.seconds = seconds
    }

    public static func == (lhs: SpeedFloor, rhs: SpeedFloor) -> Bool {
        lhs.bytesPerSecond == rhs.bytesPerSecond && lhs.seconds == rhs.seconds
    }

    /// Takes the transfer's byte count at `time` (seconds, any origin); true when it has been under the
    /// floor for ``seconds``.
    public mutating func observe(time: Double, bytes: Int64) -> Bool {
        defer { last = (time, bytes) }
        guard let last, time > last.time else { return false }
        let rate = Double(bytes - last.bytes) / (time - last.time)
        guard rate < Double(bytesPerSecond) else {
            slowSince = nil
            return false
        }
        let since = slowSince ?? last.time
        slowSince = since
        return time - since >= seconds
    }
}
