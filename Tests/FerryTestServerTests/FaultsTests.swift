import HTTPTypes
import Testing

@testable import FerryTestServer

@Suite struct FaultsTests {
    @Test func readsQueryAndHeadersQueryFirst() {
        var headers = HTTPFields()
        headers[HTTPField.Name("X-Ferry-Throttle")!] = "500"
        headers[HTTPField.Name("X-Ferry-Close-After")!] = "10"
        headers.append(HTTPField(name: HTTPField.Name("X-Ferry-Set-Cookie")!, value: "a=1"))
        headers.append(HTTPField(name: HTTPField.Name("X-Ferry-Set-Cookie")!, value: "b=2"))
        let faults = Faults(query: Query(target: "/bytes/1?throttle=1000&ignore_range=1&fail=2"), headers: headers)
        #expect(faults.throttle == 1000)
        #expect(faults.closeAfter == 10)
        #expect(faults.ignoreRange)
        #expect(faults.failCount == 2)
        #expect(faults.failStatus == 503)
        #expect(faults.setCookies == ["a=1", "b=2"])
        #expect(!faults.gzip)
    }

    @Test func ignoresNonsense() {
        let faults = Faults(
            query: Query(target: "/x?throttle=-5&fail_status=42&change_after=0&bad_content_range=zero"),
            headers: [:]
        )
        #expect(faults.throttle == nil)
        #expect(faults.failStatus == 503)
        #expect(faults.changeAfter == nil)
        #expect(faults.badContentRangeShift == nil)
    }

    @Test func clampsWhatWouldOverflow() {
        let huge = Int64.max
        let faults = Faults(
            query: Query(target: "/x?stall_ms=\(huge)&delay_ms=\(huge)&expires=-\(huge)&bad_content_range=\(huge)"),
            headers: [:]
        )
        #expect(faults.stallMilliseconds == 86_400_000)
        #expect(faults.delayMilliseconds == 86_400_000)
        #expect(faults.expiresIn == -10 * 366 * 86_400)
        #expect(faults.badContentRangeShift == 1 << 40)
    }
}
