import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The progress of several transfers at once (`ferry get -Z`), on stderr. On a terminal: a bar for each
/// running transfer and a total line, redrawn in place at most 10 times a second. Otherwise: one total
/// line a second, and a line for each transfer as it ends. Thread safe.
final class ProgressBoard: Sendable {
    private struct Entry {
        var name: String
        var done: Int64 = 0
        var total: Int64?
        var ended = false
        /// It ended without its file (an error status, a failed transfer).
        var failed = false
        /// Its last line was printed (plain lines: once, when it ends).
        var shown = false
        /// Its recent byte counts, for its own rate.
        var samples: [(time: Double, bytes: Int64)] = []
    }

    private struct State {
        var entries: [Entry] = []
        var samples: [(time: Double, bytes: Int64)] = []
        var lastDraw: Double = -1
        /// Lines the last drawing left on a terminal (the cursor is below them).
        var drawnLines = 0
    }

    private let style: ProgressDisplay.Style
    private let state = Mutex(State())

    init(quiet: Bool) {
        style = quiet ? .none : (isatty(STDERR_FILENO) == 1 ? .bar : .lines)
        if style == .bar { Self.drawing.withLock { $0 = self } }
    }

    /// The board drawn on the terminal now, if any: error lines and notes go above it
    /// (``Console/errorLine(_:)``), not into its last line.
    static let drawing = Mutex<ProgressBoard?>(nil)

    /// Prints `line` (ending with a newline) above the board and draws the board again below it.
    func message(_ line: String) {
        let text = state.withLock { state -> String in
            guard style == .bar else { return line }
            // Up to the drawing's first line, everything below cleared, the line, the board anew.
            var text = state.drawnLines > 1 ? "\u{1B}[\(state.drawnLines - 1)A" : ""
            text += "\r\u{1B}[J" + line
            state.drawnLines = 0
            return text + render(&state, total: true)
        }
        Console.error(text)
    }

    /// A transfer joins the board; its number is for the calls below.
    func add(_ name: String) -> Int {
        state.withLock { state in
            state.entries.append(Entry(name: name))
            return state.entries.count - 1
        }
    }

    func rename(_ entry: Int, _ name: String) {
        state.withLock { $0.entries[entry].name = name }
    }

    func update(_ entry: Int, done: Int64, total: Int64?) {
        guard style != .none else { return }
        let now = ProgressDisplay.now()
        let text: String? = state.withLock { state in
            state.entries[entry].done = done
            state.entries[entry].total = total
            ProgressDisplay.record((now, done), in: &state.entries[entry].samples)
            let sum = state.entries.reduce(Int64(0)) { $0 + $1.done }
            ProgressDisplay.record((now, sum), in: &state.samples)
            guard now - state.lastDraw >= (style == .bar ? 0.1 : 1.0) else { return nil }
            state.lastDraw = now
            return render(&state, total: true)
        }
        if let text { Console.error(text) }
    }

    /// A transfer ended (saved or failed).
    func end(_ entry: Int, failed: Bool = false) {
        guard style != .none else { return }
        let text = state.withLock { state in
            state.entries[entry].ended = true
            state.entries[entry].failed = failed
            return render(&state, total: style == .bar)
        }
        if !text.isEmpty { Console.error(text) }
    }

    /// Every transfer ended: the last figures.
    func close() {
        Self.drawing.withLock { if $0 === self { $0 = nil } }
        guard style != .none else { return }
        let text = state.withLock { state in
            var text = render(&state, total: true)
            if style == .bar { text += "\n" }
            return text
        }
        Console.error(text)
    }

    /// What to draw now; `total` adds the total line (plain lines: the ended transfers alone otherwise).
    private func render(_ state: inout State, total: Bool) -> String {
        switch style {
        case .none:
            return ""
        case .lines:
            // Each transfer once, when it ends; the total each time.
            var text = ""
            for index in state.entries.indices where state.entries[index].ended && !state.entries[index].shown {
                let entry = state.entries[index]
                text += "\(entry.name): \(ByteFormat.bytes(entry.done))" + (entry.total.map { " of \(ByteFormat.bytes($0))" } ?? "") + "\n"
                state.entries[index].shown = true
            }
            return total ? text + Self.totalLine(state) + "\n" : text
        case .bar:
            let width = ProgressDisplay.terminalWidth()
            var lines: [String] = []
            for entry in state.entries where !entry.ended && entry.done > 0 {
                let rate = ProgressDisplay.rate(entry.samples)
                lines.append(ProgressLine(name: entry.name, done: entry.done, total: entry.total, rate: rate).bar(width: width))
            }
            lines.append(Self.totalLine(state))
            // Up to the first line drawn last time, then each line cleared and drawn, then what is left
            // of the old drawing cleared.
            var text = state.drawnLines > 1 ? "\u{1B}[\(state.drawnLines - 1)A" : ""
            text += "\r" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\n")
            if state.drawnLines > lines.count {
                text += "\n\u{1B}[J"
                text += "\u{1B}[1A"
            }
            state.drawnLines = lines.count
            return text
        }
    }

    /// `total: 2 of 5 done, 12.0 MiB of 40.0 MiB (30%) at 5.0 MiB/s`; with failures, `total: 3 of 5 done,
    /// 1 failed, …` (issue 41: a 404 among five once counted as done).
    private static func totalLine(_ state: State) -> String {
        let done = state.entries.reduce(Int64(0)) { $0 + $1.done }
        let totals = state.entries.map(\.total)
        let total: Int64? = totals.allSatisfy { $0 != nil } ? totals.reduce(Int64(0)) { $0 + ($1 ?? 0) } : nil
        let ended = state.entries.filter { $0.ended && !$0.failed }.count
        let failed = state.entries.filter(\.failed).count
        let rate = ProgressDisplay.rate(state.samples)
        var text = "total: \(ended) of \(state.entries.count) done, \(failed > 0 ? "\(failed) failed, " : "")\(ByteFormat.bytes(done))"
        if let total {
            text += " of \(ByteFormat.bytes(total))"
            if total > 0 { text += " (\(Int(min(100, Double(done) * 100 / Double(total))))%)" }
        }
        return text + " at \(ByteFormat.rate(rate))"
    }
}
