@testable import FerryEngine
import Testing

/// RFC 9113 §8.2–8.3 for response header blocks: one `:status`, first; no request pseudo-fields; lower
/// case names; no connection-specific fields; trailers without pseudo-fields.
@Suite struct HTTP2ResponseFieldsTests {
    func problem(_ fields: [(String, String)], trailers: Bool = false) -> String? {
        HTTP2ResponseFields.problem(fields.map { (name: $0.0, value: $0.1) }, trailers: trailers)
    }

    @Test func aWellFormedHeadAndTrailersPass() {
        #expect(problem([(":status", "200"), ("content-length", "5"), ("te", "trailers")]) == nil)
        #expect(problem([("grpc-status", "0")], trailers: true) == nil)
    }

    @Test func eachBreachIsNamed() {
        #expect(problem([(":status", "500"), (":status", "200")])?.contains("second :status") == true)
        #expect(problem([("content-length", "5"), (":status", "200")])?.contains("after regular fields") == true)
        #expect(problem([(":status", "200"), (":path", "/")])?.contains(":path") == true)
        #expect(problem([(":status", "200"), ("Content-Length", "5")])?.contains("upper case") == true)
        for field in ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"] {
            #expect(problem([(":status", "200"), (field, "x")])?.contains("connection-specific") == true, "\(field)")
        }
        #expect(problem([(":status", "200"), ("te", "gzip")]) != nil)
        #expect(problem([("content-length", "5")])?.contains("without :status") == true)
        #expect(problem([(":status", "200")], trailers: true)?.contains("trailers") == true)
    }
}
