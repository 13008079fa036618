import FerryCore
import Testing

@testable import FerryTestServer

@Suite struct ValidatorsTests {
    let validators = Validators(etag: "\"v1\"", lastModified: 1_704_067_200)
    var lastModified: String { HTTPDate.format(validators.lastModified) }

    func outcome(
        ifNoneMatch: String? = nil,
        ifModifiedSince: String? = nil,
        range: String? = nil,
        ifRange: String? = nil
    ) -> ConditionalOutcome {
        ConditionalOutcome(
            ifNoneMatch: ifNoneMatch,
            ifModifiedSince: ifModifiedSince,
            range: range,
            ifRange: ifRange,
            validators: validators,
            length: 1000
        )
    }

    @Test func ifNoneMatchComparesWeakly() {
        #expect(outcome(ifNoneMatch: "\"v1\"") == .notModified)
        #expect(outcome(ifNoneMatch: "W/\"v1\"") == .notModified)
        #expect(outcome(ifNoneMatch: "\"v0\", \"v1\"") == .notModified)
        #expect(outcome(ifNoneMatch: "*") == .notModified)
        #expect(outcome(ifNoneMatch: "\"v0\"") == .whole)
    }

    @Test func ifModifiedSinceIsIgnoredBesideIfNoneMatch() {
        #expect(outcome(ifModifiedSince: lastModified) == .notModified)
        #expect(outcome(ifModifiedSince: HTTPDate.format(validators.lastModified - 1)) == .whole)
        #expect(outcome(ifNoneMatch: "\"v0\"", ifModifiedSince: lastModified) == .whole)
    }

    @Test func ifRangeNeedsAStrongMatch() {
        let range = ByteRange(start: 10, end: 20)
        #expect(outcome(range: "bytes=10-19") == .partial(range))
        #expect(outcome(range: "bytes=10-19", ifRange: "\"v1\"") == .partial(range))
        #expect(outcome(range: "bytes=10-19", ifRange: "W/\"v1\"") == .whole)
        #expect(outcome(range: "bytes=10-19", ifRange: "\"v0\"") == .whole)
        #expect(outcome(range: "bytes=10-19", ifRange: lastModified) == .partial(range))
        #expect(outcome(range: "bytes=10-19", ifRange: HTTPDate.format(validators.lastModified + 1)) == .whole)
        #expect(outcome(range: "bytes=5000-") == .unsatisfiable)
    }
}
