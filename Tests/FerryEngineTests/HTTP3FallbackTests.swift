import FerryCore
@testable import FerryEngine
import FerryTestServer
import Foundation
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `--http3`'s race (``TransportOptions/http3HeadStart``): QUIC first, TCP when QUIC cannot connect,
/// against the test server's TLS listener, which has no UDP side (issue 42).
@Suite struct HTTP3FallbackTests {
    /// A UDP socket bound to `port` on 127.0.0.1 that reads nothing: a firewall that drops datagrams.
    final class UDPBlackHole {
        let descriptor: Int32

        init(port: Int) throws {
            descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(descriptor)
                throw FerryError(.cannotConnectToHost, "cannot bind UDP port \(port): errno \(errno)")
            }
        }

        deinit { close(descriptor) }
    }

    /// A closed UDP port is known from the kernel's ICMP "port unreachable" (a connected socket's
    /// ECONNREFUSED), not from a timer: with a head start of ten minutes and a handshake allowed two,
    /// the request still comes back over TCP, within the minute the test allows.
    @Test func aClosedUDPPortFallsBackWithoutWaitingOutTheHeadStart() async throws {
        try await TestServer.withServer { server in
            let transport = try StandardTransport(
                options: trusting(server) {
                    $0.httpVersion = .http3
                    $0.http3HeadStart = .seconds(600)
                    $0.connectTimeout = 120
                }
            )
            defer { Task { try? await transport.shutdown() } }
            let started = ContinuousClock.now
            let (response, bytes) = try await fetch(transport, "https://127.0.0.1:\(server.ports[.tls]!)/bytes/1000", within: .seconds(60))
            print("a closed UDP port: TCP answered after \(ContinuousClock.now - started)")
            #expect(response.protocolName != "h3")
            #expect(bytes == DeterministicBytes(seed: 0).bytes(offset: 0, count: 1000))
        }
    }

    /// Datagrams that vanish (a UDP socket there that never answers): TCP takes over when the
    /// default head start runs out; the handshake goes on in the background, so the next request to
    /// the origin goes to TCP at once instead of waiting again; shutting down ends the handshake.
    @Test func droppedDatagramsFallBackWhenTheHeadStartRunsOut() async throws {
        try await TestServer.withServer { server in
            let port = server.ports[.tls]!
            let hole = try UDPBlackHole(port: port)
            // The default head start; the handshake itself allowed ten minutes, so only shutting down ends it.
            let transport = try StandardTransport(
                options: trusting(server) {
                    $0.httpVersion = .http3
                    $0.connectTimeout = 600
                }
            )
            for count in [1000, 1001] {
                let started = ContinuousClock.now
                let (response, bytes) = try await fetch(transport, "https://127.0.0.1:\(port)/bytes/\(count)", within: .seconds(60))
                print("UDP dropped, request \(count - 999): TCP answered after \(ContinuousClock.now - started)")
                #expect(response.protocolName != "h3")
                #expect(bytes == DeterministicBytes(seed: 0).bytes(offset: 0, count: count))
            }
            let shutdownStarted = ContinuousClock.now
            // (The bound tells a shutdown that waits for the handshake's ten minutes from one that ends it.)
            let finished = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await transport.shutdown()
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(120))
                    return false
                }
                defer { group.cancelAll() }
                return try await group.next() ?? false
            }
            #expect(finished, "shutting down waited for the background handshake")
            print("shut down, the handshake given up, after \(ContinuousClock.now - shutdownStarted)")
            withExtendedLifetime(hole) {}
        }
    }
}
