import AsyncHTTPClient
import FerryTestServer
import Foundation
import Testing

@Suite struct TestServerRedirectTests {
    @Test func locationsFollowTheMode() async throws {
        try await withServerAndClient { server, client in
            let relative = try await client.fetch(server.url("/redirect/3?code=301"))
            #expect(relative.status == 301)
            #expect(relative.header("location") == "2?code=301")
            let path = try await client.fetch(server.url("/redirect/2?mode=path"))
            #expect(path.status == 302)
            #expect(path.header("location") == "/redirect/1?mode=path")
            let absolute = try await client.fetch(server.url("/redirect/2?mode=absolute&code=308"))
            #expect(absolute.status == 308)
            #expect(absolute.header("location") == server.url("/redirect/1?mode=absolute&code=308"))
            let cross = try await client.fetch(server.url("/redirect/2?mode=cross&code=307"))
            #expect(cross.header("location") == server.url("/redirect/1?mode=cross&code=307", on: .alternate))
            let last = try await client.fetch(server.url("/redirect/1?to=/bytes/5&code=303"))
            #expect(last.status == 303)
            #expect(last.header("location") == "/bytes/5")
            let lastCross = try await client.fetch(server.url("/redirect/1?mode=cross"))
            #expect(lastCross.header("location") == server.url("/echo", on: .alternate))
            #expect(try await client.fetch(server.url("/redirect/1?code=305")).status == 400)
            #expect(try await client.fetch(server.url("/redirect/0")).status == 400)
        }
    }

    @Test(arguments: ["relative", "path", "absolute", "cross"])
    func aChainEndsAtTheTarget(mode: String) async throws {
        try await withServerAndClient(followRedirects: true) { server, client in
            let response = try await client.fetch(server.url("/redirect/4?mode=\(mode)"))
            #expect(response.status == 200)
            let echo = try response.json()
            #expect(echo["path"] as? String == "/echo")
            let counters = server.counters
            for hop in 1...4 { #expect(counters.requests(path: "/redirect/\(hop)") == 1) }
            #expect(counters.requests(path: "/echo") == 1)
            if mode == "cross" { #expect(echo["listener"] as? String == "main") }
        }
    }

    @Test func crossOriginEndsOnTheOtherListener() async throws {
        try await withServerAndClient(followRedirects: true) { server, client in
            let response = try await client.fetch(server.url("/redirect/1?mode=cross&to=/echo"))
            #expect(try response.json()["listener"] as? String == "alternate")
        }
    }

    @Test func aLoopRedirectsToItself() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/redirect-loop?code=307"))
            #expect(response.status == 307)
            #expect(response.header("location") == "/redirect-loop?code=307")
        }
        try await withServerAndClient(followRedirects: true) { server, client in
            await #expect(throws: (any Error).self) { _ = try await client.fetch(server.url("/redirect-loop")) }
        }
    }

    @Test func a307KeepsTheMethodAndBody() async throws {
        try await withServerAndClient(followRedirects: true) { server, client in
            let body = expectedBytes(1000, seed: 1)
            let response = try await client.fetch(server.url("/redirect/1?code=307"), method: .POST, body: body)
            let echo = try response.json()
            #expect(echo["method"] as? String == "POST")
            #expect(echo["bodyLength"] as? Int == 1000)
        }
    }
}
