import FerryCore
import Testing

@Suite struct SpeedFloorTests {
    @Test func aSpeedFloorCountsTheTimeUnderItAsCurlDoes() {
        var floor = SpeedFloor(bytesPerSecond: 1000, seconds: 3)
        // fast, slow since 1, slow, fast again (the count starts over), slow since 4 … three seconds at 7.
        let samples: [(Double, Int64)] = [(0, 0), (1, 5000), (2, 5100), (3, 5200), (4, 9000), (5, 9100), (6, 9200), (7, 9300)]
        let verdicts = samples.map { floor.observe(time: $0.0, bytes: $0.1) }
        #expect(verdicts == [false, false, false, false, false, false, false, true])
    }
}
