import FerryCore
import FerryTestServer
import Foundation
import NIOCore
import Testing

@testable import FerryEngine

/// HTTP/2 on Ferry's own transport (ALPN `h2`): one connection per origin carrying concurrent requests as
/// streams, GOAWAY and RST_STREAM, against ferry-testserver's HTTP/2 listener (swift-nio-http2).
@Suite struct HTTP2TransportTests {
    private func transport(_ server: TestServer, _ change: (inout TransportOptions) -> Void = { _ in }) -> NetworkTransport {
        NetworkTransport(options: trusting(server, change))
    }

    private func get(_ transport: any HTTPTransport, _ url: String) async throws -> (TransportResponse, [UInt8]) {
        try await fetch(transport, url, within: .seconds(60))
    }

    /// Waits (without a clock of its own beyond a generous limit) until the server has seen `count`
    /// requests for `path`. 90 s: a run under two CPU hogs once took over 30 s to get one request through
    /// its TLS handshake; the limit only tells waiting from hanging.
    private func waitForRequests(_ server: TestServer, path: String, count: Int) async throws {
        let limit = Date().addingTimeInterval(90)
        while server.counters.requests(path: path) < count {
            guard Date() < limit else {
                Issue.record("the server saw \(server.counters.requests(path: path)) of \(count) requests for \(path)")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func requestFieldsAreSentAsHTTP2AllowsThem() throws {
        var headers = Headers()
        headers.add(name: "Host", value: "example.test:8443")
        headers.add(name: "Connection", value: "keep-alive")
        headers.add(name: "Keep-Alive", value: "timeout=5")
        headers.add(name: "Transfer-Encoding", value: "chunked")
        headers.add(name: "Upgrade", value: "h2c")
        headers.add(name: "TE", value: "gzip")
        headers.add(name: "X-Trace", value: "A1")
        let route = ConnectionRoute(target: try HTTPTarget(URL(string: "https://example.test:8443/a%20b?q=1")!), proxy: nil)
        let request = TransportRequest(
            method: "POST",
            url: URL(string: "https://example.test:8443/a%20b?q=1")!,
            headers: headers,
            body: .bytes(ByteBuffer(string: "hello"))
        )
        let fields = NetworkTransport.http2Headers(request, route: route).map { [$0.name, $0.value] }
        // Pseudo-header fields first; names in lower case; Host becomes :authority; the connection's own
        // fields (RFC 9113 §8.2.2) and a TE other than "trailers" are left out; the body's length is said.
        #expect(
            fields == [
                [":method", "POST"], [":scheme", "https"], [":authority", "example.test:8443"], [":path", "/a%20b?q=1"],
                ["x-trace", "A1"], ["content-length", "5"],
            ]
        )
    }

    @Test func httpsSpeaksH2WhenTheServerPicksItWithTLSDetailsAndReuse() async throws {
        try await TestServer.withServer { server in
            let transport = transport(server)
            defer { Task { try await transport.shutdown() } }
            let (first, body) = try await get(transport, server.url("/bytes/300000?seed=3", on: .tls))
            #expect(first.status == 200 && first.protocolName == "h2")
            #expect(body == DeterministicBytes(seed: 3).bytes(offset: 0, count: 300_000))
            #expect(first.headers["content-length"] == "300000")
            #expect(first.timing.tlsVersion == "TLSv1.3")
            #expect(first.timing.reusedConnection == false)
            #expect(first.timing.secureConnectionStart != nil)
            let (second, chunked) = try await get(transport, server.url("/bytes/70000?seed=4&chunked=1", on: .tls))
            #expect(second.protocolName == "h2" && second.timing.reusedConnection == true)
            #expect(chunked == DeterministicBytes(seed: 4).bytes(offset: 0, count: 70000))
            // No Transfer-Encoding invented for a body without a length.
            #expect(second.headers["transfer-encoding"] == nil)
            #expect(server.counters.connectionsAccepted == 1)
            #expect(server.counters.requestsByProtocol["HTTP/2"] == 2)

            // HTTP/1.1 only: ALPN offers nothing else.
            let h1 = self.transport(server) { $0.httpVersion = .http1Only }
            defer { Task { try await h1.shutdown() } }
            #expect(try await get(h1, server.url("/bytes/10", on: .tls)).0.protocolName == "http/1.1")
        }
    }

    @Test func sixteenConcurrentRequestsShareOneConnectionBeyondTheHostLimit() async throws {
        try await TestServer.withServer { server in
            let base = transport(server)
            // The session's per-host limit (6) counts connections; HTTP/2 streams are not held back by it.
            let session = SessionTransport(base, maximumConnectionsPerHost: 6)
            defer { Task { try await session.shutdown() } }
            // The first request opens the connection; the others find it shared.
            _ = try await get(session, server.url("/bytes/10", on: .tls))
            let path = "/bytes/20000"
            try await withThrowingTaskGroup(of: [UInt8].self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        try await get(session, server.url("\(path)?seed=9&stall_after=1000&gate=sixteen", on: .tls)).1
                    }
                }
                // All 16 reach the server while every one of them is held: none waits for a slot.
                try await waitForRequests(server, path: path, count: 16)
                server.openGate("sixteen")
                for try await body in group {
                    #expect(body == DeterministicBytes(seed: 9).bytes(offset: 0, count: 20000))
                }
            }
            #expect(server.counters.connectionsAccepted == 1)
            #expect(server.counters.requestsByProtocol["HTTP/2"] == 17)
        }
    }

    @Test func aBurstToANewOriginOpensOneConnection() async throws {
        try await TestServer.withServer { server in
            let transport = transport(server)
            defer { Task { try await transport.shutdown() } }
            try await withThrowingTaskGroup(of: Int.self) { group in
                for seed in 0..<8 {
                    group.addTask { try await get(transport, server.url("/bytes/5000?seed=\(seed)", on: .tls)).1.count }
                }
                for try await count in group { #expect(count == 5000) }
            }
            // They waited for the first handshake instead of racing eight of their own.
            #expect(server.counters.connectionsAccepted == 1)
        }
    }

    @Test func aGoAwayInFlightLosesNoRequest() async throws {
        try await TestServer.withServer { server in
            let transport = transport(server)
            defer { Task { try await transport.shutdown() } }
            let seeds = Array(20..<26)
            try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
                // The first stream ends with GOAWAY naming itself the last one processed.
                group.addTask {
                    (0, try await get(transport, server.url("/bytes/50000?seed=0&goaway=1&stall_after=0&gate=first", on: .tls)).1)
                }
                try await waitForRequests(server, path: "/bytes/50000", count: 1)
                // Later streams on the same connection, not answered yet: refused by that GOAWAY.
                for seed in seeds {
                    group.addTask {
                        (seed, try await get(transport, server.url("/bytes/40000?seed=\(seed)&head_gate=later", on: .tls)).1)
                    }
                }
                try await waitForRequests(server, path: "/bytes/40000", count: seeds.count)
                server.openGate("first")
                let (_, first) = try await #require(await group.next())
                #expect(first == DeterministicBytes(seed: 0).bytes(offset: 0, count: 50000))
                server.openGate("later")
                for try await (seed, body) in group {
                    #expect(body == DeterministicBytes(seed: UInt64(seed)).bytes(offset: 0, count: 40000), "seed \(seed)")
                }
            }
            // The refused requests went again, on a second connection.
            #expect(server.counters.connectionsAccepted == 2)
            #expect(server.counters.requests(path: "/bytes/40000") == 2 * seeds.count)
        }
    }

    @Test func requestBodiesGoOverStreamsWithAndWithoutALength() async throws {
        try await TestServer.withServer { server in
            let transport = transport(server)
            defer { Task { try await transport.shutdown() } }
            let content = DeterministicBytes(seed: 5).bytes(offset: 0, count: 200_000)
            let chunks = stride(from: 0, to: content.count, by: 30_000).map {
                ByteBuffer(bytes: content[$0..<min($0 + 30_000, content.count)])
            }
            let bodies: [TransportRequestBody] = [
                .bytes(ByteBuffer(bytes: content)),
                .stream(length: Int64(content.count), TransportBodyStream(chunks.async)),
                .stream(length: nil, TransportBodyStream(chunks.async)),
            ]
            for body in bodies {
                let response = try await transport.send(
                    TransportRequest(method: "POST", url: URL(string: server.url("/echo", on: .tls))!, headers: Headers(), body: body),
                    deadline: .now() + .seconds(60)
                )
                var bytes: [UInt8] = []
                for try await chunk in response.body { bytes += chunk.readableBytesView }
                let echo = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
                #expect(response.protocolName == "h2")
                #expect(echo["bodyLength"] as? Int == content.count, "\(echo)")
                #expect(echo["bodySHA256"] as? String == sha256(content))
            }
            // A GET is one HEADERS frame with END_STREAM; its answer comes back on the same connection.
            #expect(try await get(transport, server.url("/bytes/10", on: .tls)).1.count == 10)
            #expect(server.counters.connectionsAccepted == 1)
        }
    }

    @Test func aResetStreamFailsOnlyItsRequest() async throws {
        try await TestServer.withServer { server in
            let transport = transport(server)
            defer { Task { try await transport.shutdown() } }
            let error = try await #require(throws: FerryError.self) {
                _ = try await get(transport, server.url("/bytes/200000?reset_after=50000", on: .tls))
            }
            #expect(error.code == .networkConnectionLost)
            #expect(error.message.contains("reset the HTTP/2 stream"), "\(error.message)")
            // The connection itself goes on.
            let (after, body) = try await get(transport, server.url("/bytes/1000?seed=1", on: .tls))
            #expect(after.timing.reusedConnection == true && body.count == 1000)
            #expect(server.counters.connectionsAccepted == 1)
        }
    }

    @Test func anIdleConnectionIsClosedAfterItsIdleTime() async throws {
        try await TestServer.withServer { server in
            var settings = HTTP2Settings()
            settings.pingInterval = .milliseconds(200)
            settings.idleTimeout = .milliseconds(600)
            let transport = NetworkTransport(options: trusting(server), http2: settings)
            defer { Task { try await transport.shutdown() } }
            let url = server.url("/bytes/10", on: .tls)
            _ = try await get(transport, url)
            let limit = Date().addingTimeInterval(10)
            while transport.multiplexes(URL(string: url)!), Date() < limit {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(!transport.multiplexes(URL(string: url)!))
            // The next request opens a new connection.
            let (again, _) = try await get(transport, url)
            #expect(again.timing.reusedConnection == false)
            #expect(server.counters.connectionsAccepted == 2)
        }
    }
}
