/// One progress report as text: name, bytes of total, percentage, rate, ETA. Pure.
public struct ProgressLine: Sendable, Hashable {
    /// What moves (a file name).
    public var name: String
    /// Bytes done.
    public var done: Int64
    /// Bytes expected, when known.
    public var total: Int64?
    /// Bytes a second, recently.
    public var rate: Double

    /// A report.
    public init(name: String, done: Int64, total: Int64?, rate: Double) {
        self.name = name
        self.done = done
        self.total = total
        self.rate = rate
    }

    /// Seconds left at the current rate, when the total is known and something moves.
    public var secondsLeft: Double? {
        guard let total, rate > 0 else { return nil }
        return Double(max(total - done, 0)) / rate
    }

    /// The percentage done (0...100), when the total is known.
    public var percent: Int? {
        guard let total, total > 0 else { return nil }
        return Int(min(100, Double(done) * 100 / Double(total)))
    }

    /// A line for a log or a pipe: `name: 4.2 MB of 10.0 MB (42%) at 1.1 MB/s, ETA 5s`.
    public var plain: String {
        var text = "\(name): \(ByteFormat.bytes(done))"
        if let total { text += " of \(ByteFormat.bytes(total))" }
        if let percent { text += " (\(percent)%)" }
        text += " at \(ByteFormat.rate(rate))"
        if total != nil { text += ", ETA \(ByteFormat.duration(secondsLeft))" }
        return text
    }

    /// A bar for a terminal `width` columns wide:
    /// `name  42% [=======>          ] 4.2 MB/10.0 MB 1.1 MB/s ETA 5s`.
    public func bar(width: Int) -> String {
        let numbers: String
        if let total {
            numbers =
                " \(ByteFormat.bytes(done))/\(ByteFormat.bytes(total)) \(ByteFormat.rate(rate)) ETA \(ByteFormat.duration(secondsLeft))"
        } else {
            numbers = " \(ByteFormat.bytes(done)) \(ByteFormat.rate(rate))"
        }
        let percentText = percent.map { String(repeating: " ", count: 3 - String($0).count) + "\($0)%" } ?? "  ?%"
        // Name, a space, the percentage, " [", the bar, "]", the numbers: the name and the bar share
        // what is left; on a narrow terminal the bar goes first, then the name.
        let available = width - numbers.count - percentText.count - 1
        guard available >= 4 else { return percentText + numbers }
        guard available >= 16 else { return Self.truncated(name, to: available) + " " + percentText + numbers }
        let shownName = Self.truncated(name, to: min(name.count, available / 3))
        let barWidth = available - shownName.count - 3
        var cells = ""
        if let total, total > 0 {
            let filled = Int(Double(barWidth) * min(1, Double(done) / Double(total)))
            cells = String(repeating: "=", count: filled)
            if filled < barWidth { cells += ">" + String(repeating: " ", count: barWidth - filled - 1) }
        } else {
            cells = String(repeating: "-", count: barWidth)
        }
        return "\(shownName) \(percentText) [\(cells)]\(numbers)"
    }

    private static func truncated(_ text: String, to width: Int) -> String {
        guard text.count > width else { return text }
        return width > 1 ? String(text.prefix(width - 1)) + "…" : String(text.prefix(width))
    }
}
