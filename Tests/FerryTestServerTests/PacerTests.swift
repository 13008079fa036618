import Testing

@testable import FerryTestServer

@Suite struct PacerTests {
    @Test func quantumIsATwentiethOfASecond() {
        #expect(Pacer(rate: 20_000).quantum(chunkSize: 524_288) == 1000)
        #expect(Pacer(rate: 5).quantum(chunkSize: 524_288) == 1)
        #expect(Pacer(rate: 1_000_000_000).quantum(chunkSize: 524_288) == 524_288)
    }

    @Test func waitsOnlyWhenAhead() {
        let pacer = Pacer(rate: 1000)
        #expect(pacer.delay(sent: 0, count: 100, elapsed: 0.2) == nil)
        #expect(pacer.delay(sent: 1000, count: 100, elapsed: 1.1) == nil)
        let wait = pacer.delay(sent: 1000, count: 100, elapsed: 1.0)
        #expect(wait != nil && abs(wait! - 0.1) < 1e-9)
    }

    @Test func highRatesAndLongRunsDoNotOverflow() {
        // 4 GB/s for an hour: rate × nanoseconds would be far past Int64.max.
        let pacer = Pacer(rate: 4_000_000_000)
        #expect(pacer.delay(sent: 14_400_000_000_000, count: 524_288, elapsed: 3600) != nil)
        #expect(pacer.delay(sent: 14_000_000_000_000, count: 524_288, elapsed: 3600) == nil)
    }
}
