@testable import FerryEngine
import Foundation
import Synchronization
import Testing

/// The pool and throttles with real tasks and the real clock: shares by weight, a limit changed while
/// takers wait, cancellation. Bytes and ratios are asserted, with wide margins; timing claims are the
/// benchmarks'.
@Suite struct BandwidthPoolTests {
    /// Three takers paying for 64 KiB at a time for `seconds`; the bytes each moved.
    func run(_ pool: BandwidthPool, weights: [Double], seconds: Double) async -> [Int] {
        await withTaskGroup(of: (Int, Int).self) { group in
            for (index, weight) in weights.enumerated() {
                group.addTask {
                    let throttle = TaskThrottle(bytesPerSecond: nil, pool: pool, weight: weight)
                    let end = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
                    var moved = 0
                    while ContinuousClock.now < end {
                        try? await throttle.pay(65_536)
                        moved += 65_536
                    }
                    return (index, moved)
                }
            }
            var moved = Array(repeating: 0, count: weights.count)
            for await (index, bytes) in group { moved[index] = bytes }
            return moved
        }
    }

    @Test func takersShareByWeight() async {
        let pool = BandwidthPool(bytesPerSecond: 4_000_000)
        let moved = await run(pool, weights: [0.25, 0.5, 0.75], seconds: 3)
        // The limit is a ceiling whatever the load.
        let total = Double(moved.reduce(0, +))
        let ceiling: Double = 4_000_000 * 3 * 1.05 + 3 * 65_536
        #expect(total <= ceiling, "\(moved)")
        // The exact 1 : 2 : 3 is the pure rule's (NetworkPolicyTests, on a simulated clock). Here the
        // takers share two cores with the rest of the test run; shares can be judged only when they got
        // to run (most of the limit used): then more weight moved more bytes.
        if total >= 4_000_000 * 3 * 0.8 {
            #expect(moved[2] > moved[0], "\(moved)")
        } else {
            print("the takers were starved of CPU (\(moved)); shares not judged")
        }
    }

    @Test func aWaitingTakerIsCancelledAndAnEndedLimitReleasesTheOthers() async throws {
        let pool = BandwidthPool(bytesPerSecond: 1000)
        let throttle = TaskThrottle(bytesPerSecond: nil, pool: pool, weight: 0.5)
        try await throttle.pay(1_000_000)  // in debt for about 1000 s
        let waiting = Task { try await throttle.pay(1) }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        let other = Task { try await TaskThrottle(bytesPerSecond: nil, pool: pool, weight: 0.5).pay(1) }
        try await Task.sleep(for: .milliseconds(50))
        pool.setLimit(nil)
        try await other.value
        #expect(pool.limit == nil)
    }
}
