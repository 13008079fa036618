import HTTPTypes
import Testing

@testable import FerryTestServer

@Suite struct QueryTests {
    @Test func decodesItems() {
        let query = Query(target: "/a%20b/c?x=1&y=a+b&z=%3D%26&x=2&flag")
        #expect(query.path == "/a b/c")
        #expect(query["x"] == "1")
        #expect(query.all("x") == ["1", "2"])
        #expect(query["y"] == "a b")
        #expect(query["z"] == "=&")
        #expect(query["flag"] == "")
        #expect(query["missing"] == nil)
    }

    @Test func keepsBrokenEscapes() {
        #expect(Query.percentDecode("100%", plusIsSpace: false) == "100%")
        #expect(Query.percentDecode("%zz", plusIsSpace: false) == "%zz")
    }
}
