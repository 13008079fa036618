import FerryCore
import FerryEngine
import FerryTestServer
import Foundation
import NIOCore
import Testing

@Suite struct ContentDecoderTests {
    func gzipHeaders(_ value: String = "gzip") -> Headers {
        var headers = Headers()
        headers.add(name: "Content-Encoding", value: value)
        return headers
    }

    @Test func gzipDecodesInAnyChunking() throws {
        let original = DeterministicBytes(seed: 5).bytes(offset: 0, count: 100_000)
        let compressed = try Gzip.compress(original)
        for size in [1, 7, 4096, compressed.count] {
            let decoder = try #require(ContentDecoder(headers: gzipHeaders()))
            var decoded: [UInt8] = []
            var offset = 0
            while offset < compressed.count {
                let end = min(compressed.count, offset + size)
                decoded += Array(try decoder.decode(ByteBuffer(bytes: compressed[offset..<end])).readableBytesView)
                offset = end
            }
            try decoder.finish()
            #expect(decoded == original, "chunks of \(size)")
        }
    }

    @Test func aCutOrWrongBodyIsAClearError() throws {
        let compressed = try Gzip.compress(Array("hello, hello, hello".utf8))
        let cut = try #require(ContentDecoder(headers: gzipHeaders()))
        _ = try cut.decode(ByteBuffer(bytes: compressed.prefix(compressed.count - 6)))
        #expect(throws: FerryError.self) { try cut.finish() }
        let wrong = try #require(ContentDecoder(headers: gzipHeaders("x-gzip")))
        #expect(throws: FerryError.self) { try wrong.decode(ByteBuffer(string: "not gzip at all")) }
        #expect(ContentDecoder(headers: gzipHeaders("br")) == nil, "left as it came")
        #expect(ContentDecoder(headers: Headers()) == nil)
    }
}
