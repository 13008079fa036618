import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Shows a transfer's progress on stderr: a bar redrawn in place on a terminal (at most 10 times a
/// second), nothing when quiet. Thread safe.
///
/// Not on a terminal (a log, a pipe), a file gets one line, the "saved" one its command prints with
/// the rate over the whole transfer: a plain line a second filled logs ("12 B of 12 B (100%) at 0 B/s,
/// ETA -" before every small file's; issue 41). Only a transfer that runs longer than a minute adds a
/// line once a minute while it runs, so that a log shows it is alive.
final class ProgressDisplay: Sendable {
    /// Seconds between plain lines (not on a terminal).
    static let plainInterval: Double = 60

    enum Style: Sendable { case bar, lines, none }

    private struct State {
        var name: String
        var done: Int64 = 0
        var total: Int64?
        var lastDraw: Double = -1
        var samples: [(time: Double, bytes: Int64)] = []
        var drawnDone: Int64 = -1
    }

    private let style: Style
    private let state: Mutex<State>
    /// With several transfers at once: the board this one shows on, and its place there.
    private let board: (ProgressBoard, Int)?
    /// Seconds on a monotonic clock.
    private let clock: @Sendable () -> Double
    private let write: @Sendable (String) -> Void

    /// A display for `name`; `quiet` shows nothing; with a `board`, the transfer shows there. `style`
    /// (a bar on a terminal, else lines), `clock` and `write` (stderr) are for tests.
    init(
        name: String,
        quiet: Bool,
        board: ProgressBoard? = nil,
        style: Style? = nil,
        clock: @escaping @Sendable () -> Double = ProgressDisplay.now,
        write: @escaping @Sendable (String) -> Void = { Console.error($0) }
    ) {
        let style = quiet || board != nil ? .none : style ?? (isatty(STDERR_FILENO) == 1 ? .bar : .lines)
        self.style = style
        self.clock = clock
        self.write = write
        // A bar draws at once; plain lines an interval in.
        state = Mutex(State(name: name, lastDraw: style == .lines ? clock() : -1))
        self.board = board.map { ($0, $0.add(name)) }
    }

    /// The name shown (e.g. once Content-Disposition gave the real one).
    func rename(_ name: String) {
        state.withLock { $0.name = name }
        if let (board, entry) = board { board.rename(entry, name) }
    }

    /// The transfer is at `done` of `total` bytes.
    func update(done: Int64, total: Int64?) {
        if let (board, entry) = board { board.update(entry, done: done, total: total) }
        guard style != .none else { return }
        let now = clock()
        let text: String? = state.withLock { state in
            state.done = done
            state.total = total
            Self.record((now, done), in: &state.samples)
            let interval = style == .bar ? 0.1 : Self.plainInterval
            guard now - state.lastDraw >= interval else { return nil }
            // A plain line says something a bar's redraw would not: a rate (two samples at least) for a
            // transfer still going (its end is ``finish()``'s), however slowly the process got here.
            if style == .lines, state.samples.count < 2 || total.map({ done >= $0 }) == true { return nil }
            state.lastDraw = now
            return render(&state)
        }
        if let text { write(text) }
    }

    /// The transfer ended (`failed`: without its file): on a terminal, the bar's last figures and the
    /// end of its line. Plain lines add nothing: the command's "saved" line (or its error) is the file's.
    func finish(failed: Bool = false) {
        if let (board, entry) = board { board.end(entry, failed: failed) }
        guard style == .bar else { return }
        let text: String? = state.withLock { state in
            // Nothing moved and nothing drawn: no line to end.
            guard state.done > 0 || state.drawnDone >= 0 else { return nil }
            return render(&state) + "\n"
        }
        if let text { write(text) }
    }

    private func render(_ state: inout State) -> String {
        state.drawnDone = state.done
        let line = ProgressLine(name: state.name, done: state.done, total: state.total, rate: Self.rate(state.samples))
        switch style {
        case .bar:
            return "\r" + line.bar(width: Self.terminalWidth()) + "\u{1B}[K"
        case .lines:
            return line.plain + "\n"
        case .none:
            return ""
        }
    }

    /// Adds `sample` to `samples`, keeping the last 3 seconds of them (at least two): what ``rate(_:)``
    /// is measured over.
    static func record(_ sample: (time: Double, bytes: Int64), in samples: inout [(time: Double, bytes: Int64)]) {
        samples.append(sample)
        while let first = samples.first, sample.time - first.time > 3, samples.count > 2 {
            samples.removeFirst()
        }
    }

    /// Bytes a second over `samples` (first to last); 0 with fewer than two.
    static func rate(_ samples: [(time: Double, bytes: Int64)]) -> Double {
        guard let first = samples.first, let last = samples.last, last.time > first.time else { return 0 }
        return Double(last.bytes - first.bytes) / (last.time - first.time)
    }

    /// Columns of the terminal stderr is on (80 when it cannot be told).
    static func terminalWidth() -> Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 else { return 80 }
        return Int(size.ws_col)
    }

    static func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }
}
