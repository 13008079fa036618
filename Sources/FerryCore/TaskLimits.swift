/// A background task's own limits, as curl's flags set them for one transfer (`ferry get --background`
/// with `--max-redirs`, `--retry`/`--tries`, `--speed-limit`/`--speed-time`). An absent value takes
/// ferryd's: 16 redirects, ``RetryPolicy``'s tries, the daemon's throughput floor.
public struct TaskLimits: Sendable, Hashable, Codable {
    /// Redirects followed at most (curl's `--max-redirs`); more fail the task with
    /// `httpTooManyRedirects`.
    public var maximumRedirects: Int?
    /// Tries in all, the first included (curl's `--retry N` is N + 1; wget's `--tries N` is N): how
    /// often ferryd tries again after a network error or a busy server, with its backoff.
    public var maximumAttempts: Int?
    /// A try that stays under this many bytes a second for ``lowSpeedTime`` seconds fails with
    /// `timedOut` (curl's `--speed-limit`), keeping its partial data; it counts as a failed try.
    public var lowSpeedLimit: Int64?
    /// See ``lowSpeedLimit`` (curl's `--speed-time`); default 30 seconds.
    public var lowSpeedTime: Double?

    /// Limits; nil values take ferryd's.
    public init(
        maximumRedirects: Int? = nil,
        maximumAttempts: Int? = nil,
        lowSpeedLimit: Int64? = nil,
        lowSpeedTime: Double? = nil
    ) {
        self.maximumRedirects = maximumRedirects
        self.maximumAttempts = maximumAttempts
        self.lowSpeedLimit = lowSpeedLimit
        self.lowSpeedTime = lowSpeedTime
    }

    /// The most redirects a task may allow.
    public static let redirectLimit = 1000
    /// The most tries a task may ask for.
    public static let attemptLimit = 1000

    /// The throughput floor, when ``lowSpeedLimit`` sets one.
    public var speedFloor: SpeedFloor? {
        lowSpeedLimit.map { SpeedFloor(bytesPerSecond: $0, seconds: lowSpeedTime ?? 30) }
    }

    /// Checks the ranges: redirects 0 to 1000, tries 1 to 1000, a speed limit above 0 with a time of
    /// 1 second to a day (and no time without a limit).
    /// - Throws: ``FerryError/Code/invalidOperation`` saying which value is out of range.
    public func validate() throws {
        if let maximumRedirects, !(0...Self.redirectLimit).contains(maximumRedirects) {
            throw FerryError(.invalidOperation, "maximumRedirects takes 0 to \(Self.redirectLimit), not \(maximumRedirects)")
        }
        if let maximumAttempts, !(1...Self.attemptLimit).contains(maximumAttempts) {
            throw FerryError(.invalidOperation, "maximumAttempts takes 1 to \(Self.attemptLimit), not \(maximumAttempts)")
        }
        if let lowSpeedLimit, lowSpeedLimit < 1 {
            throw FerryError(.invalidOperation, "lowSpeedLimit is bytes a second, 1 or more")
        }
        if let lowSpeedTime {
            guard lowSpeedLimit != nil else {
                throw FerryError(.invalidOperation, "lowSpeedTime needs lowSpeedLimit, the rate it is measured against")
            }
            guard lowSpeedTime >= 1, lowSpeedTime <= 86_400 else {
                throw FerryError(.invalidOperation, "lowSpeedTime takes 1 to 86400 seconds")
            }
        }
    }
}
