import Testing

@testable import FerryTestServer

@Suite struct HTTPDateTests {
    @Test func formatsTheRFCExample() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(1_709_210_096) == "Thu, 29 Feb 2024 12:34:56 GMT")
    }

    @Test func parsesWhatItFormats() {
        for seconds: Int64 in [0, 784_111_777, 1_704_067_200, 1_709_210_096, 4_102_444_799] {
            #expect(HTTPDate.parse(HTTPDate.format(seconds)) == seconds)
        }
    }

    @Test func refusesOtherForms() {
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 25:49:37 GMT") == nil)
        #expect(HTTPDate.parse("") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 9223372036854775807 08:49:37 GMT") == nil)
    }
}
