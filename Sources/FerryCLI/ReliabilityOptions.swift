import ArgumentParser
import FerryCore

/// `get`'s options for getting the whole file right: continuing, retries, the speed floor, the checksum, connections and `--fail`.
///
/// Shown under "Continuing, retrying, checking" in `ferry get --help`. Each value is checked on its own here, and against the
/// other groups in ``GetCommand/validate()``.
struct ReliabilityOptions: ParsableArguments {
    @Flag(
        name: [.customShort("C"), .customLong("continue")],
        help: "Continue an interrupted download (checked with If-Range)."
    )
    var resume = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Try again this many times after a network error or a 408, 429, 500, 502, 503 or 504 (Retry-After honoured). With --background: ferryd's tries, after network errors and busy servers (429, 503), with its backoff.",
            valueName: "n"
        )
    )
    var retry = 0

    @Option(
        name: .customLong("retry-delay"),
        help: ArgumentHelp(
            "Wait this many seconds before each --retry try instead of the doubling backoff (a Retry-After still decides), as curl; 0 keeps the backoff.",
            valueName: "seconds"
        )
    )
    var retryDelay: Double?

    @Option(
        name: .customLong("tries"),
        help: ArgumentHelp("wget's --tries: this many tries in all (the same as --retry N-1).", valueName: "n")
    )
    var tries: Int?

    @Option(
        name: .customLong("speed-limit"),
        help: ArgumentHelp("Fail a download slower than this (bytes a second; K, M as --limit-rate) for --speed-time seconds, as curl. With --background the try fails and ferryd tries again (--tries).", valueName: "rate")
    )
    var speedLimit: String?

    @Option(
        name: .customLong("speed-time"),
        help: ArgumentHelp("Seconds a download may stay under --speed-limit (default 30; with it alone the limit is 1 byte a second), as curl.", valueName: "seconds")
    )
    var speedTime: Double?

    /// The throughput floor `--speed-limit` and `--speed-time` ask for, as curl reads them.
    var speedFloor: SpeedFloor? {
        guard speedLimit != nil || speedTime != nil else { return nil }
        let rate = speedLimit.flatMap(ByteFormat.parseRate) ?? 1
        return SpeedFloor(bytesPerSecond: rate, seconds: speedTime ?? 30)
    }

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Verify the file before success: sha256, sha384, sha512, sha1 or md5, then = and the hex digest.",
            valueName: "algorithm=hex"
        )
    )
    var checksum: String?

    @Option(
        name: [.customShort("x"), .customLong("connections")],
        help: ArgumentHelp(
            "Connections per download (1-32): a large file is fetched in segments over several at once.",
            valueName: "n"
        )
    )
    var connectionCount = "1"

    /// `-x`'s number (checked in ``validate()``).
    var connections: Int { Int(connectionCount) ?? 1 }

    @Flag(
        name: .customLong("fail-with-body"),
        help: "On an HTTP error status, save its body to the file all the same, and fail (as curl)."
    )
    var failWithBody = false

    @Flag(
        name: [.customShort("f"), .customLong("fail")],
        help: "Fail on an HTTP error status, as curl -f (ferry always does: nothing is saved; accepted for curl's habit)."
    )
    var fail = false

    mutating func validate() throws {
        if let speedLimit, ByteFormat.parseRate(speedLimit) == nil {
            throw ValidationError("--speed-limit takes a rate such as 1000, 100K or 1M, not '\(speedLimit)'")
        }
        if let speedTime, !(speedTime >= 1) { throw ValidationError("--speed-time takes 1 or more seconds") }
        if let tries {
            guard tries >= 1 else { throw ValidationError("--tries takes 1 or more") }
            if retry > 0 { throw ValidationError("give --tries or --retry, not both") }
        }
        if let retryDelay, !(retryDelay >= 0 && retryDelay <= 3600) { throw ValidationError("--retry-delay takes 0 to 3600 seconds") }
        guard retry >= 0 else { throw ValidationError("--retry must be 0 or more") }
        guard let count = Int(connectionCount) else {
            if connectionCount.contains("://") || connectionCount.contains(":") {
                throw ValidationError(
                    "-x is a number of connections (1-\(Request.maximumConnections)), as with aria2c, not a proxy; give a proxy with --proxy \(connectionCount)"
                )
            }
            throw ValidationError("-x/--connections takes a number from 1 to \(Request.maximumConnections), not '\(connectionCount)'")
        }
        guard (1...Request.maximumConnections).contains(count) else {
            throw ValidationError("--connections takes 1 to \(Request.maximumConnections)")
        }
        if let checksum, ContentDigest(checksum) == nil {
            throw ValidationError(
                "--checksum takes an algorithm (sha256, sha384, sha512, sha1, md5), =, and its hex digest"
            )
        }
    }
}
