import FerryCore
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// `/metrics` over TCP for a Prometheus server (``DaemonConfiguration/metricsAddress``), on a loopback
/// address only: the metrics name sessions and error reasons, which are nobody else's business.
enum MetricsEndpoint {
    /// Binds `host`:`port` for a moment: a port another program holds is refused with its reason.
    private static func checkFree(host: String, port: Int, address: String) throws {
        guard port != 0 else { return }
        let socketAddress: SocketAddress
        do {
            socketAddress = try SocketAddress(ipAddress: host, port: port)
        } catch {
            return  // `localhost` and the like: Hummingbird resolves them, and says what goes wrong
        }
        let descriptor = socket(Int32(socketAddress.protocol.rawValue), Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = socketAddress.withSockAddr { bind(descriptor, $0, socklen_t($1)) }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            throw FerryError(
                .invalidOperation,
                "cannot serve metrics on \(address): \(reason); pick another port (--metrics-address) or stop what holds it"
            )
        }
    }

    /// The host and port of `address` (`127.0.0.1:9466`, `[::1]:9466`, `localhost:9466`).
    /// - Throws: ``FerryError`` when it is not a loopback address with a port.
    static func parse(_ address: String) throws -> (host: String, port: Int) {
        let host: Substring
        let port: Substring
        if address.hasPrefix("["), let close = address.firstIndex(of: "]") {
            host = address[address.index(after: address.startIndex)..<close]
            port = address[address.index(after: close)...].drop { $0 == ":" }
        } else if let colon = address.lastIndex(of: ":") {
            host = address[..<colon]
            port = address[address.index(after: colon)...]
        } else {
            throw FerryError(.invalidOperation, "the metrics address '\(address)' needs a port, e.g. 127.0.0.1:9466")
        }
        guard let number = Int(port), (0...65535).contains(number) else {
            throw FerryError(.invalidOperation, "the metrics address '\(address)' has no valid port (0-65535)")
        }
        let loopback = host == "localhost" || host == "::1" || host.hasPrefix("127.")
        guard loopback, host == "localhost" || host == "::1" || host.split(separator: ".").count == 4 else {
            throw FerryError(
                .invalidOperation,
                "the metrics address '\(address)' is not a loopback address; ferryd serves metrics on 127.0.0.1 or ::1 only"
            )
        }
        return (host == "localhost" ? "127.0.0.1" : String(host), number)
    }

    /// True when a request's Host names the loopback: `127.x.x.x`, `[::1]` or `localhost`, with or
    /// without a port.
    static func isLoopbackAuthority(_ authority: String?) -> Bool {
        guard let authority = authority?.lowercased(), !authority.isEmpty else { return false }
        var host = Substring(authority)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            host = host[host.index(after: host.startIndex)..<close]
            return host == "::1"
        }
        if let colon = host.lastIndex(of: ":") { host = host[..<colon] }
        if host == "localhost" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// An application serving `routes`' metrics at `address`, run as one of the daemon's services.
    /// - Throws: ``FerryError`` when the address is not loopback, or is taken (checked now, so that the
    ///   daemon says so in plain words rather than with the server's bind error).
    static func application(address: String, routes: ControlRoutes, logger: Logger) throws -> some Service {
        let (host, port) = try parse(address)
        try checkFree(host: host, port: port, address: address)
        let router = Router()
        router.get(RouterPath(ControlAPI.metricsPath)) { request, _ -> Response in
            // A page elsewhere can make a browser reach 127.0.0.1 under its own name (DNS rebinding):
            // its requests carry that name as their Host, and are refused.
            guard isLoopbackAuthority(request.head.authority) else {
                return Response(
                    status: .forbidden,
                    headers: [.contentType: "text/plain; charset=utf-8"],
                    body: .init(byteBuffer: ByteBuffer(string: "ferryd's metrics answer requests for 127.0.0.1, [::1] or localhost only\n"))
                )
            }
            return try await routes.metricsText()
        }
        return Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in
                logger.info("metrics on http://\(address.hasPrefix("[") ? "[\(host)]" : host):\(channel.localAddress?.port ?? port)/metrics")
            },
            logger: logger
        )
    }
}
