/// Byte counts, rates and durations as people read them, and rates as people write them
/// (`--limit-rate 500K`). Pure functions.
///
/// One convention in and out: IEC units, powers of 1024 (KiB, MiB, GiB). `--limit-rate 5M` is 5 MiB a
/// second and is shown as `5.0 MiB/s` (it had been shown as `5.2 MB/s`, decimal, while read in powers of
/// 1024).
public enum ByteFormat {
    /// `1.5 MiB`, `512 B`.
    public static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(max(count, 0))
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(Int64(value)) B" }
        return value >= 100 ? "\(Int(value.rounded())) \(units[unit])" : "\(oneDecimal(value)) \(units[unit])"
    }

    /// `12.3 MiB/s`.
    public static func rate(_ bytesPerSecond: Double) -> String {
        guard bytesPerSecond.isFinite, bytesPerSecond >= 0 else { return "-" }
        return bytes(Int64(bytesPerSecond)) + "/s"
    }

    /// `45s`, `3m05s`, `2h01m`; `-` when unknown.
    public static func duration(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return "-" }
        let total = Int(seconds.rounded())
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)m\(twoDigits(total % 60))s" }
        return "\(total / 3600)h\(twoDigits(total / 60 % 60))m"
    }

    /// Parses a rate: a number with an optional suffix `K`, `M`, `G`, `T` (powers of 1024, as curl's
    /// `--limit-rate`; `Ki`, `Mi`, … as printed), optionally followed by `B` and `/s`. Nil for anything
    /// else or a value ≤ 0.
    public static func parseRate(_ text: String) -> Int64? {
        var body = text.trimmingCharacters(in: " ")
        for suffix in ["/s", "B", "b", "i"] where body.hasSuffix(suffix) { body.removeLast(suffix.count) }
        var multiplier: Double = 1
        if let last = body.last, let power = ["k": 1, "m": 2, "g": 3, "t": 4][last.lowercased()] {
            multiplier = pow1024(power)
            body.removeLast()
        }
        guard let number = Double(body.trimmingCharacters(in: " ")), number.isFinite, number > 0 else { return nil }
        let value = number * multiplier
        guard value >= 1, value < 9e18 else { return nil }
        return Int64(value)
    }

    private static func pow1024(_ power: Int) -> Double {
        (0..<power).reduce(1.0) { value, _ in value * 1024 }
    }

    private static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var result = Substring(self)
        while result.first == set { result.removeFirst() }
        while result.last == set { result.removeLast() }
        return String(result)
    }
}
