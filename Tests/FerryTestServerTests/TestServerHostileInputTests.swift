import AsyncHTTPClient
import FerryTestServer
import Testing

/// Values at the edges of Int64 in every place a request can put a number: the server answers sensibly
/// and does not trap (an overflow in Swift would take the whole server down).
@Suite struct TestServerHostileInputTests {
    static let huge = "9223372036854775807"

    @Test func edgeNumbersGetSensibleAnswers() async throws {
        try await withServerAndClient { server, client in
            let range = try await client.fetch(server.url("/bytes/100"), headers: [("Range", "bytes=10-\(Self.huge)")])
            #expect(range.status == 206)
            #expect(range.header("content-range") == "bytes 10-99/100")

            let date = try await client.fetch(
                server.url("/bytes/100"),
                headers: [("If-Modified-Since", "Sun, 06 Nov \(Self.huge) 08:49:37 GMT")]
            )
            #expect(date.status == 200)

            let expires = try await client.fetch(server.url("/bytes/1?expires=\(Self.huge)"))
            #expect(expires.status == 200)
            #expect(expires.header("expires") != nil)

            let shifted = try await client.fetch(
                server.url("/bytes/100?bad_content_range=\(Self.huge)"),
                headers: [("Range", "bytes=0-9")]
            )
            #expect(shifted.status == 206)
            #expect(shifted.body.count == 10)

            let enormous = try await client.fetch(server.url("/bytes/\(Self.huge)"), method: .HEAD)
            #expect(enormous.header("content-length") == Self.huge)

            let tooLarge = try await client.fetch(server.url("/bytes/99999999999999999999"))
            #expect(tooLarge.status == 400)

            let throttled = try await client.fetch(server.url("/bytes/1000?throttle=\(Self.huge)"))
            #expect(throttled.body.count == 1000)

            let redirect = try await client.fetch(server.url("/redirect/\(Self.huge)"))
            #expect(redirect.status == 302)
        }
    }
}
