import FerryTestServer
import Foundation
import Testing

/// HTTP/1.1 on the wire: pipelining, Connection: close, 100-continue, malformed requests.
@Suite struct TestServerProtocolTests {
    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await TestServer.withServer { server in
            let request =
                "GET /bytes/5?seed=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /status/404 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /bytes/3?seed=2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            let response = try await rawExchange(port: server.port, request)
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(response.statusLine == "HTTP/1.1 200 OK")
            #expect(Bytes(response.body.prefix(5)) == Bytes(expectedBytes(5, seed: 1)))
            let second = try #require(text.range(of: "HTTP/1.1 404 Not Found"))
            let third = try #require(text.range(of: "HTTP/1.1 200 OK"))
            #expect(second.lowerBound < third.lowerBound)
            #expect(Bytes(response.body.suffix(3)) == Bytes(expectedBytes(3, seed: 2)))
            #expect(server.counters.connectionsAccepted == 1)
            #expect(server.counters.requestsServed == 3)
        }
    }

    @Test func connectionCloseIsHonoured() async throws {
        try await TestServer.withServer { server in
            // rawExchange returns only once the server has closed the connection.
            let response = try await rawExchange(port: server.port, rawGET("/bytes/10"))
            #expect(response.header("connection") == "close")
            #expect(response.body.count == 10)
        }
    }

    @Test func expectContinueGetsA100First() async throws {
        try await TestServer.withServer { server in
            let body = expectedBytes(1000, seed: 3)
            let head =
                "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n"
                + "Connection: close\r\n\r\n"
            let response = try await rawExchange(port: server.port, Array(head.utf8) + body)
            #expect(response.statusLine == "HTTP/1.1 100 Continue")
            let rest = String(decoding: response.body, as: UTF8.self)
            #expect(rest.contains("HTTP/1.1 200 OK"))
            #expect(rest.contains("\"length\":1000"))
        }
    }

    @Test func malformedRequestsGet400() async throws {
        try await TestServer.withServer { server in
            let response = try await rawExchange(port: server.port, "THIS IS NOT HTTP\r\n\r\n")
            #expect(response.statusLine.hasPrefix("HTTP/1.1 400"))
        }
    }
}
