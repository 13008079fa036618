import FerryCore
import Testing

@Suite struct DurationTextTests {
    @Test func durationsAsPeopleTypeThem() {
        #expect(DurationText.seconds("90") == 90)
        #expect(DurationText.seconds("90s") == 90)
        #expect(DurationText.seconds("30m") == 1800)
        #expect(DurationText.seconds("1.5h") == 5400)
        #expect(DurationText.seconds("7d") == 604_800)
        #expect(DurationText.seconds("2W") == 1_209_600)
        for refused in ["", "-1", "7x", "d", "nan", "inf", "1e999h"] {
            #expect(DurationText.seconds(refused) == nil, "\(refused)")
        }
    }

    @Test func aDurationIsDescribedInItsLargestUnit() {
        #expect(DurationText.describe(45) == "45s")
        #expect(DurationText.describe(1800) == "30m")
        #expect(DurationText.describe(5400) == "1.5h")
        #expect(DurationText.describe(604_800) == "7d")
    }
}
