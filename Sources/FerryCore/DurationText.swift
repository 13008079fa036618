import Foundation

/// Durations as people type them: `90` or `90s`, `30m`, `12h`, `7d`, `2w`, and decimals (`1.5h`).
public enum DurationText {
    /// Seconds in `text`, or nil when it is not a duration (negative, empty, an unknown unit).
    public static func seconds(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard let last = trimmed.last else { return nil }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        let (number, unit) = last.isLetter ? (String(trimmed.dropLast()), units[last]) : (trimmed, 1)
        guard let unit, let value = Double(number), value.isFinite, value >= 0 else { return nil }
        return value * unit
    }

    /// `seconds` in the largest unit that keeps it whole enough to read: `45s`, `30m`, `7d`.
    public static func describe(_ seconds: Double) -> String {
        for (unit, size) in [("d", 86_400.0), ("h", 3600), ("m", 60)] where seconds >= size {
            let value = seconds / size
            return value == value.rounded() ? "\(Int(value))\(unit)" : "\((value * 10).rounded() / 10)\(unit)"
        }
        return "\(Int(seconds.rounded()))s"
    }
}
