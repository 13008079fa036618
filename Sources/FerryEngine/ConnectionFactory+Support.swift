import FerryCore
import Foundation
import NIOCore
import NIOPosix

/// What the factory's stages look up: the proxy tunnel a route needs, addresses, and a failed TLS
/// handshake in plain words.
extension ConnectionFactory {
    /// The tunnel a route needs: CONNECT through an HTTP proxy for https, SOCKS5 for anything; nil for a
    /// direct connection or plain http through an HTTP proxy (absolute-form requests), unless `always`
    /// (a byte stream tunnels through an HTTP proxy whatever its scheme). For `socks5`
    /// (not `socks5h`) the name is resolved here, on a thread of the pool.
    static func tunnelHandshake(_ route: ConnectionRoute, options: TransportOptions, always: Bool = false) async throws -> ProxyHandshake? {
        guard let proxy = route.proxy else { return nil }
        let target = route.target
        switch proxy.kind {
        case .http:
            guard target.secure || always else { return nil }
            return ProxyHandshake(
                kind: .httpConnect(proxyAuthorization: route.proxyAuthorization),
                destination: .name(target.host),
                port: target.port,
                proxyName: "the proxy \(proxy)"
            )
        case .socks5h:
            return ProxyHandshake(
                kind: .socks5(username: proxy.username, password: proxy.password),
                destination: .name(target.host),
                port: target.port,
                proxyName: "the SOCKS proxy \(proxy)"
            )
        case .socks5:
            let name = options.address(host: target.host, port: target.port)
            let address = try await Self.resolve(name, port: target.port, url: target.url)
            return ProxyHandshake(
                kind: .socks5(username: proxy.username, password: proxy.password),
                destination: .address(address),
                port: target.port,
                proxyName: "the SOCKS proxy \(proxy)"
            )
        }
    }

    /// The first address of `host` (IPv4 preferred), as bytes.
    static func resolve(_ host: String, port: Int, url: String) async throws -> [UInt8] {
        if let address = try? SocketAddress(ipAddress: host, port: port) { return Self.bytes(of: address) }
        let addresses = try await NIOThreadPool.singleton.runIfActive {
            try? SocketAddress.makeAddressResolvingHost(host, port: port)
        }
        guard let address = addresses else {
            throw FerryError(.cannotFindHost, "cannot find the host \(host) (resolved here for a socks5:// proxy; socks5h:// lets the proxy resolve it)", failingURL: url)
        }
        return Self.bytes(of: address)
    }

    /// The first `family` address of `host` (curl's `-4`, `-6`), looked up on a thread of the pool.
    static func resolve(
        _ host: String,
        port: Int,
        family: ConnectionSettings.AddressFamily,
        url: String
    ) async throws -> SocketAddress {
        let name = family == .ipv4 ? "IPv4" : "IPv6"
        if let literal = try? SocketAddress(ipAddress: host, port: port) {
            guard (literal.protocol == .inet) == (family == .ipv4) else {
                throw FerryError(.cannotConnectToHost, "\(host) is not an \(name) address, and only \(name) was asked for", failingURL: url)
            }
            return literal
        }
        let found: SocketAddress? = try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_family = family == .ipv4 ? AF_INET : AF_INET6
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return nil }
            defer { freeaddrinfo(list) }
            guard let raw = first.pointee.ai_addr else { return nil }
            switch family {
            case .ipv4:
                return raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { SocketAddress($0.pointee, host: host) }
            case .ipv6:
                return raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { SocketAddress($0.pointee, host: host) }
            }
        }
        guard let found else {
            throw FerryError(.cannotFindHost, "\(host) has no \(name) address", failingURL: url)
        }
        return found
    }

    private static func bytes(of address: SocketAddress) -> [UInt8] {
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            return withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        default:
            return []
        }
    }

    /// A failed handshake as a ``FerryError`` in plain words: the verification's verdict, a version
    /// mismatch, or BoringSSL's reason without its internals.
    static func handshakeError(
        _ error: any Error,
        report: TLSReport,
        host: String,
        tls: TLSClient,
        url: String
    ) -> FerryError {
        if let refusal = report.refusal {
            return FerryError(refusal.code, refusal.message, failingURL: url)
        }
        if var error = error as? FerryError {
            error.failingURL = error.failingURL ?? url
            return error
        }
        if TLSClient.isVersionMismatch(error) {
            let allowed =
                tls.minimumVersion == tls.maximumVersion
                ? "only \(tls.minimumVersion.rawValue)" : "\(tls.minimumVersion.rawValue) to \(tls.maximumVersion.rawValue)"
            return FerryError(
                .secureConnectionFailed,
                "\(host) and this client have no TLS version in common (this client allows \(allowed))",
                failingURL: url
            )
        }
        if let channelError = error as? ChannelError, channelError == .eof {
            return FerryError(
                .secureConnectionFailed,
                "\(host) closed the connection during the TLS handshake (does it speak TLS on this port?)",
                failingURL: url
            )
        }
        return FerryError(
            .secureConnectionFailed,
            "the TLS handshake with \(host) failed: \(TLSClient.plainReason(error))",
            failingURL: url
        )
    }

    /// `127.0.0.1:8443`, `[::1]:8443`.
    static func describe(_ address: SocketAddress?) -> String? {
        guard let address, let ip = address.ipAddress, let port = address.port else { return nil }
        return ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }
}
