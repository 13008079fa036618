public import Foundation

/// When a background transfer that failed with a network error is tried again (S6.10): exponential
/// backoff from ``baseDelay``, doubling up to ``maximumDelay``, for at most ``maximumAttempts`` tries.
public struct RetryPolicy: Sendable, Hashable, Codable {
    /// The delay before the first retry, in seconds.
    public var baseDelay: Double
    /// The longest delay between tries, in seconds.
    public var maximumDelay: Double
    /// Tries in all, the first included; after them the task completes with its last error.
    public var maximumAttempts: Int

    /// A policy; the defaults retry for about half an hour.
    public init(baseDelay: Double = 1, maximumDelay: Double = 300, maximumAttempts: Int = 12) {
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.maximumAttempts = maximumAttempts
    }

    /// Whether an error of this code is worth another try: the network's faults, not the server's
    /// answers, the disk or the caller.
    public static func isRetryable(_ code: FerryError.Code) -> Bool {
        [.networkConnectionLost, .timedOut, .cannotConnectToHost, .cannotFindHost, .secureConnectionFailed]
            .contains(code)
    }

    /// The statuses whose `Retry-After` makes a background transfer wait and try again (RFC 9110
    /// §10.2.3): 503 Service Unavailable and 429 Too Many Requests.
    public static let busyStatuses: Set<Int> = [429, 503]

    /// The statuses a foreground `--retry` tries again, as curl's `--retry` does: 408, 429, 500, 502,
    /// 503 and 504.
    public static let transientStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

    /// The longest `Retry-After` honoured; a longer one is taken as the response it came with.
    public static let maximumRetryAfter = 3600.0

    /// Seconds to wait from a `Retry-After` value at `now`: delay-seconds or an HTTP-date; nil when it
    /// is neither, or further away than ``maximumRetryAfter``.
    public static func retryAfter(_ value: String, now: Date) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        let seconds: Double
        if !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Double(text) {
            seconds = number
        } else {
            guard let date = HTTPDate.date(text, now: now) else { return nil }
            seconds = max(0, date.timeIntervalSince(now))
        }
        return seconds <= maximumRetryAfter ? seconds : nil
    }

    /// The delay before try number `attempt + 1`, after `attempt` failed tries; nil when no try is left.
    public func delay(afterFailedAttempts attempt: Int) -> Double? {
        guard attempt >= 1, attempt < maximumAttempts else { return nil }
        let exponent = min(attempt - 1, 30)
        return min(maximumDelay, baseDelay * Double(1 << exponent))
    }
}
