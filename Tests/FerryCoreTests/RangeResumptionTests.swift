import FerryCore
import Testing

@Suite struct RangeResumptionTests {
    let resumption = RangeResumption(offset: 1000, expectedLength: 5000, entityTag: "\"v1\"", lastModified: nil)

    func judge(_ status: Int, _ headers: [(String, String)]) -> RangeResumption.Decision {
        resumption.judge(status: status, headers: Headers(headers))
    }

    @Test func asksForTheRestGuardedByTheValidator() {
        #expect(resumption.canResume)
        #expect(resumption.requestHeaders.map(\.name) == ["Range", "If-Range"])
        #expect(resumption.requestHeaders.map(\.value) == ["bytes=1000-", "\"v1\""])
    }

    @Test func prefersAStrongTagAndFallsBackToTheDate() {
        let date = "Mon, 01 Jan 2024 00:00:00 GMT"
        #expect(
            RangeResumption(offset: 5, expectedLength: nil, entityTag: "W/\"weak\"", lastModified: date).validator
                == date
        )
        #expect(
            RangeResumption(offset: 5, expectedLength: nil, entityTag: "\"s\"", lastModified: date).validator == "\"s\""
        )
    }

    @Test func withoutAValidatorItStartsOver() {
        let unguarded = RangeResumption(offset: 1000, expectedLength: 5000, entityTag: "W/\"weak\"", lastModified: nil)
        #expect(!unguarded.canResume)
        #expect(unguarded.requestHeaders.isEmpty)
        #expect(!RangeResumption(offset: 0, expectedLength: nil, entityTag: "\"a\"", lastModified: nil).canResume)
    }

    @Test func aMatchingPartialResponseIsAppended() {
        #expect(
            judge(206, [("Content-Range", "bytes 1000-4999/5000"), ("ETag", "\"v1\"")]) == .append(totalLength: 5000)
        )
        #expect(
            judge(206, [("Content-Range", "bytes 1000-1999/*"), ("Content-Length", "1000")])
                == .append(totalLength: 5000)
        )
    }

    @Test func aFullResponseStartsOver() {
        guard case .startOver = judge(200, [("ETag", "\"v2\"")]) else {
            Issue.record("a 200 must start over")
            return
        }
    }

    /// A 200 says why in words: the same version (the server does not continue downloads) is not
    /// "another file" (issue 41).
    @Test func aFullResponseSaysWhetherTheFileChanged() {
        func reason(_ resumption: RangeResumption, _ headers: [(String, String)]) -> String {
            guard case .startOver(let reason) = resumption.judge(status: 200, headers: Headers(headers)) else { return "" }
            return reason
        }
        let date = "Mon, 01 Jan 2024 00:00:00 GMT"
        let byDate = RangeResumption(offset: 1000, expectedLength: 5000, entityTag: nil, lastModified: date)
        #expect(reason(resumption, [("ETag", "\"v1\"")]).contains("the same version (it does not continue downloads)"))
        #expect(reason(byDate, [("Last-Modified", date)]).contains("the same version"))
        #expect(reason(resumption, [("ETag", "\"v2\"")]) == "the server's file changed (ETag \"v2\", was \"v1\")")
        #expect(reason(byDate, [("Last-Modified", "Tue, 02 Jan 2024 00:00:00 GMT")]).contains("changed (modified Tue"))
        #expect(reason(resumption, []).contains("it ignores ranges, or its file changed"))
    }

    @Test func a416SaysWhatTheServerClaims() {
        func reason(_ headers: [(String, String)]) -> String {
            guard case .discardAndRefetch(let reason) = judge(416, headers) else { return "" }
            return reason
        }
        #expect(reason([("Content-Range", "bytes */600")]).hasSuffix("its file is 600 bytes, shorter than the 1000 already received"))
        #expect(reason([("Content-Range", "bytes */1000")]).hasSuffix("its file is 1000 bytes and 1000 were already received"))
        #expect(reason([]) == "the server refused the range (416)")
    }

    @Test(arguments: [
        [("Content-Range", "bytes 1001-4999/5000")],  // wrong start: the server lies
        [("Content-Range", "bytes 0-3999/5000")],
        [("Content-Range", "bytes 1000-5999/6000")],  // the resource grew
        [],  // no Content-Range
        [("Content-Range", "bytes 1000-4999/5000"), ("ETag", "\"v2\"")],  // another version
        [("Content-Range", "bytes 1000-4999/5000"), ("Content-Length", "10")],
        [("Content-Range", "bytes 1000-4999/5000"), ("Content-Type", "multipart/byteranges; boundary=x")],
    ])
    func untrustworthyPartialsAreRefetched(headers: [(String, String)]) {
        guard case .discardAndRefetch = judge(206, headers) else {
            Issue.record("\(headers) must not be appended")
            return
        }
    }

    @Test func errorsKeepThePartialData() {
        #expect(judge(503, []) == .httpError(status: 503))
        #expect(judge(404, []) == .httpError(status: 404))
        guard case .discardAndRefetch = judge(416, [("Content-Range", "bytes */5000")]) else {
            Issue.record("416 must refetch")
            return
        }
    }

    @Test func parsesContentRange() {
        #expect(ContentRange("bytes 0-99/100") == ContentRange("bytes 0-99/100"))
        #expect(ContentRange("bytes 0-99/100")?.total == 100)
        #expect(ContentRange("bytes 5-9/*")?.total == nil)
        #expect(ContentRange("bytes 9-5/100") == nil)
        #expect(ContentRange("bytes 0-100/100") == nil)
        #expect(ContentRange("bytes */100") == nil)
        #expect(ContentRange("items 0-1/2") == nil)
    }
}
