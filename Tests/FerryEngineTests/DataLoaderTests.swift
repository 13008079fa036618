import FerryCore
import FerryEngine
import FerryTestServer
import Foundation
import NIOCore
import Testing

@Suite struct DataLoaderTests {
    func text(_ buffer: ByteBuffer) -> String { String(buffer: buffer) }

    @Test func loadsABody() async throws {
        try await withServerAndTransport { server, transport in
            let result = try await DataLoader(transport: transport).load(
                request(server.url("/bytes/100000?seed=2")),
                deadline: testDeadline
            )
            #expect(result.status == 200)
            #expect(sha256(Array(result.body.readableBytesView)) == expectedSHA256(100_000, seed: 2))
        }
    }

    @Test func sendsABodyAndKeepsItAcrossA307() async throws {
        try await withServerAndTransport { server, transport in
            var post = request(server.url("/redirect/1?code=307&to=/upload"))
            post.method = "POST"
            let body = ByteBuffer(bytes: DeterministicBytes(seed: 3).bytes(offset: 0, count: 5000))
            let result = try await DataLoader(transport: transport).load(
                post,
                body: .bytes(body),
                deadline: testDeadline
            )
            #expect(result.redirectCount == 1)
            #expect(text(result.body).contains("\"length\":5000"))

            // A 303 turns the POST into a GET without a body.
            var other = request(server.url("/redirect/1?code=303&to=/echo"))
            other.method = "POST"
            let echoed = try await DataLoader(transport: transport).load(
                other,
                body: .bytes(body),
                deadline: testDeadline
            )
            #expect(text(echoed.body).contains("\"method\":\"GET\""))
            #expect(text(echoed.body).contains("\"bodyLength\":0"))
        }
    }

    @Test func aShortBodyIsAnError() async throws {
        try await withServerAndTransport { server, transport in
            let error = try await #require(throws: FerryError.self) {
                try await DataLoader(transport: transport).load(
                    request(server.url("/bytes/10000?short_by=10")),
                    deadline: testDeadline
                )
            }
            #expect(error.code == .networkConnectionLost)
        }
    }

    @Test func aLimitStopsLargeBodies() async throws {
        try await withServerAndTransport { server, transport in
            var loader = DataLoader(transport: transport)
            loader.maximumBodyLength = 1000
            for url in ["/bytes/5000", "/bytes/5000?chunked=1"] {
                let error = try await #require(throws: FerryError.self) {
                    try await loader.load(request(server.url(url)), deadline: testDeadline)
                }
                #expect(error.code == .dataLengthExceedsMaximum)
            }
        }
    }

    @Test func httpsSpeaksWhatALPNPicksUnlessHTTP1IsAskedFor() async throws {
        try await withServerAndTransport { server, transport in
            let result = try await DataLoader(transport: transport).load(
                request(server.url("/bytes/1000?seed=4", on: .tls)),
                deadline: testDeadline
            )
            #expect(result.protocolName == "h2")
            #expect(sha256(Array(result.body.readableBytesView)) == expectedSHA256(1000, seed: 4))

            var options = StandardTransport.Options()
            options.additionalTrustRootsPEM = [server.certificates.trustRootPEM]
            options.httpVersion = .http1Only
            let h1 = try StandardTransport(options: options)
            defer { Task { try await h1.shutdown() } }
            let second = try await DataLoader(transport: h1).load(
                request(server.url("/bytes/1000?seed=4", on: .tls)),
                deadline: testDeadline
            )
            #expect(second.protocolName == "http/1.1")
            #expect(sha256(Array(second.body.readableBytesView)) == expectedSHA256(1000, seed: 4))
        }
    }

    @Test func connectionsAreReused() async throws {
        try await withServerAndTransport { server, transport in
            let loader = DataLoader(transport: transport)
            for _ in 0..<20 { _ = try await loader.load(request(server.url("/bytes/1024")), deadline: testDeadline) }
            #expect(server.counters.connectionsAccepted == 1)
            #expect(server.counters.requests(path: "/bytes/1024") == 20)
        }
    }
}
