@testable import FerryCLI
import Synchronization
import Testing

/// Progress not on a terminal: one line per file (the command's "saved" line), plus one a minute for a
/// transfer that runs longer (issue 41: a line a second, and "12 B of 12 B (100%) at 0 B/s, ETA -"
/// before every small file's "saved").
@Suite struct ProgressDisplayTests {
    final class Recorder: Sendable {
        let time = Mutex<Double>(1000)
        let lines = Mutex<[String]>([])
        func display(_ style: ProgressDisplay.Style) -> ProgressDisplay {
            ProgressDisplay(
                name: "big.iso",
                quiet: false,
                style: style,
                clock: { self.time.withLock { $0 } },
                write: { text in self.lines.withLock { $0.append(text) } }
            )
        }
        func advance(_ seconds: Double) { time.withLock { $0 += seconds } }
        var written: [String] { lines.withLock { $0 } }
    }

    @Test func aTransferOfLessThanAMinuteWritesNoLine() {
        let recorder = Recorder()
        let display = recorder.display(.lines)
        for second in 1...59 {
            recorder.advance(1)
            display.update(done: Int64(second) * 1_000_000, total: 100_000_000)
        }
        display.finish()
        #expect(recorder.written.isEmpty, "\(recorder.written)")
    }

    @Test func aLongTransferWritesALineAMinute() {
        let recorder = Recorder()
        let display = recorder.display(.lines)
        for second in 1...150 {
            recorder.advance(1)
            display.update(done: Int64(second) * 1_000_000, total: 1_000_000_000)
        }
        display.finish()
        #expect(recorder.written.count == 2, "\(recorder.written)")
        #expect(recorder.written.first?.hasPrefix("big.iso: 57.2 MiB of 954 MiB (6%) at 977 KiB/s, ETA 15m") == true, "\(recorder.written.first ?? "")")
    }

    @Test func aBarDrawsAtOnceAndEndsItsLine() {
        let recorder = Recorder()
        let display = recorder.display(.bar)
        recorder.advance(1)
        display.update(done: 12, total: 12)
        display.finish()
        #expect(recorder.written.count == 2)
        #expect(recorder.written.last?.hasSuffix("\n") == true)
    }
}
