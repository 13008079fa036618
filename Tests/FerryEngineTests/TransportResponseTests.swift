import FerryCore
import FerryEngine
import NIOCore
import Testing

/// A transport response keeps its fields in one copy-on-write box (a copy is one retain, not one per
/// field that holds a reference): it must still behave as a value.
@Suite struct TransportResponseTests {
    @Test func aCopyChangesApart() async throws {
        let original = TransportResponse(
            status: 200,
            headers: ["Content-Length": "3"],
            protocolName: "http/1.1",
            body: TransportBodyStream(buffer: ByteBuffer(string: "abc"))
        )
        var copy = original
        copy.status = 404
        copy.headers["Content-Length"] = "4"
        copy.body = TransportBodyStream(buffer: ByteBuffer(string: "abcd"))
        copy.timing.proxy = "http://proxy.example:3128"
        copy.cancel = {}
        #expect(original.status == 200)
        #expect(original.headers["content-length"] == "3")
        #expect(original.timing.proxy == nil)
        #expect(original.cancel == nil && original.detach == nil && original.latestTiming == nil)
        #expect(original.body.completeBody == ByteBuffer(string: "abc"))
        #expect(copy.status == 404 && copy.headers["content-length"] == "4")
        #expect(copy.body.completeBody == ByteBuffer(string: "abcd"))
        #expect(copy.cancel != nil)
    }
}
