import FerryCore
import Foundation
import Testing

/// HTTP dates as RFC 9110 §5.6.7 spells them, and nothing else: what the cache, retries, `-R` and the
/// test server read and write.
@Suite struct HTTPDateTests {
    @Test func formatsTheRFCExample() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(1_709_210_096) == "Thu, 29 Feb 2024 12:34:56 GMT")
        #expect(HTTPDate.format(-1) == "Wed, 31 Dec 1969 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777.9)) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test func parsesWhatItFormats() {
        for seconds: Int64 in [0, 784_111_777, 1_704_067_200, 1_709_210_096, 4_102_444_799, -86_400] {
            #expect(HTTPDate.parse(HTTPDate.format(seconds)) == seconds)
        }
    }

    @Test func readsTheTwoObsoleteFormsAsTheRFCAsks() {
        // The RFC's own examples, all the same moment.
        let now = Date(timeIntervalSince1970: 1_790_000_000)  // 2026
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == 784_111_777)
        let tenDaysLater: Int64 = 784_111_777 + 10 * 86_400
        #expect(HTTPDate.parse("Sun Nov 16 08:49:37 1994") == tenDaysLater)
        #expect(HTTPDate.date("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test func aTwoDigitYearIsNeverMoreThanFiftyYearsAhead() {
        let now = Date(timeIntervalSince1970: 1_790_000_000)  // 2026
        // 2076 is 50 years on: kept. 2077 would be 51: 1977.
        #expect(HTTPDate.date("Thursday, 01-Jan-76 00:00:00 GMT", now: now).map(year) == 2076)
        #expect(HTTPDate.date("Friday, 01-Jan-77 00:00:00 GMT", now: now).map(year) == 1977)
        #expect(HTTPDate.date("Tuesday, 01-Jan-26 00:00:00 GMT", now: now).map(year) == 2026)
    }

    private func year(_ date: Date) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        return calendar.component(.year, from: date)
    }

    /// What RFC 9111 §5.3 says a cache must take as already expired, with the forms seen in the wild
    /// (the cache-tests.fyi corpus has most of them).
    @Test(arguments: [
        "Thu, 18 Aug 50 02:01:18 GMT",  // a two-digit year in the first form
        "Thu, 18 Aug 2050 02:01:18 UTC",  // another zone
        "Thu, 18 Aug 2050 02:01:18 AEST",
        "Thu, 18 Aug 2050 02:01:18 +0000",
        "Thu 18 Aug 2050 02:01:18 GMT",  // no comma
        "Thu,  18 Aug 2050 02:01:18 GMT",  // doubled space
        "Thu, 18-Aug-2050 02:01:18 GMT",  // dashes
        "Thu, 18 Aug 2050 2:01:18 GMT",  // a one-digit hour
        "Thu, 18 Aug 2050 02:01:18 gmt",  // the zone in lower case
        "thu, 18 Aug 2050 02:01:18 GMT",  // the day in lower case
        "Thu, 18 AUG 2050 02:01:18 GMT",
        "Thu, 18 Aug 2050 02:01:18 GMT, Thu, 18 Aug 2050 02:01:18 GMT",  // two fields joined
        "Thu, 18 Aug 2050 02:01:18 GMT ",  // a trailing space
        " Thu, 18 Aug 2050 02:01:18 GMT",
        "Thu, 31 Feb 2050 02:01:18 GMT",  // past the month's end
        "Thu, 29 Feb 2100 02:01:18 GMT",  // 2100 is not a leap year
        "Sun, 06 Nov 1994 25:49:37 GMT",
        "Sun, 06 Nov 1994 08:60:37 GMT",
        "Sun, 06 Nov 0000 08:49:37 GMT",
        "Sun, 06 Nov 9223372036854775807 08:49:37 GMT",
        "Sunday, 06-Nov-1994 08:49:37 GMT",  // RFC 850 with four digits
        "Sun, 06-Nov-94 08:49:37 GMT",  // RFC 850 with a short day name
        "Sun Nov 6 08:49:37 1994",  // asctime without the day's padding
        "Sun Nov  6 08:49:37 94",
        "0",
        "",
        "-1",
        "Thu, 01 Jan 1970 00:00:00",
    ])
    func refusesEverythingElse(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func aLeapDayAndALeapSecondAreDates() {
        #expect(HTTPDate.parse("Tue, 29 Feb 2000 00:00:00 GMT") != nil)
        #expect(HTTPDate.parse("Sat, 31 Dec 2016 23:59:60 GMT") == HTTPDate.parse("Sun, 01 Jan 2017 00:00:00 GMT"))
    }
}
