import FerryTestServer
import Testing

@Suite struct TestServerLifecycleTests {
    @Test func aTakenPortIsAClearError() async throws {
        try await TestServer.withServer { first in
            var configuration = TestServer.Configuration()
            configuration.port = first.port
            do {
                let second = try await TestServer.start(configuration)
                try await second.shutdown()
                Issue.record("a second server bound port \(first.port)")
            } catch let error as TestServerError {
                #expect(error.description.contains("127.0.0.1"))
                #expect(error.description.contains("port"))
            }
        }
    }

    @Test func shutdownClosesTheListeners() async throws {
        let server = try await TestServer.start()
        let port = server.port
        _ = try await rawExchange(port: port, rawGET("/bytes/1"))
        try await server.shutdown()
        await #expect(throws: (any Error).self) { _ = try await rawExchange(port: port, rawGET("/bytes/1")) }
    }

    @Test func optionalListenersCanBeLeftOut() async throws {
        var configuration = TestServer.Configuration()
        configuration.tlsPort = nil
        configuration.resumablePort = nil
        try await TestServer.withServer(configuration) { server in
            #expect(Set(server.ports.keys) == [.main, .alternate])
            #expect(server.origin(.tls) == nil)
        }
    }
}
