import FerryCore
import FerryEngine
import Foundation
import NIOCore

/// `-v`: each exchange on stderr as curl shows it — the connection (new or reused, address, TLS version,
/// protocol, proxy), `>` the request head, `<` the response head.
struct VerboseTransport: HTTPTransport {
    let base: any HTTPTransport

    init(_ base: any HTTPTransport) {
        self.base = base
    }

    func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        let response: TransportResponse
        do {
            response = try await base.send(request, deadline: deadline)
        } catch let error as FerryError {
            Console.error("* \(request.url.host ?? ""): \(error.message)\n")
            throw error
        }
        Console.error(Self.render(request, response))
        return response
    }

    var enforcesDeadlineOverBody: Bool { base.enforcesDeadlineOverBody }

    func shutdown() async throws { try await base.shutdown() }

    static func render(_ request: TransportRequest, _ response: TransportResponse) -> String {
        let timing = response.timing
        var lines: [String] = []
        let place = timing.remoteAddress ?? request.url.host ?? "?"
        let host = request.url.host ?? "?"
        // Through a proxy the connection is the proxy's, and the line says so (issue 41: it once named
        // the origin with the proxy's address).
        let peer = timing.proxy.map { "the proxy \($0) (\(place)) for \(host)" }
        if timing.reusedConnection == true {
            lines.append("* Re-using the connection to \(peer ?? place)")
        } else {
            lines.append("* Connected to \(peer ?? "\(host) (\(place))")")
        }
        if let version = timing.tlsVersion { lines.append("* \(version), protocol \(response.protocolName)") }
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        // Plain http through an HTTP proxy goes in absolute form (RFC 9112 §3.2.2), as curl -v shows it;
        // https is tunnelled (CONNECT) and SOCKS carries the origin form.
        if let proxy = timing.proxy, proxy.hasPrefix("http"), request.url.scheme == "http" {
            target = request.url.absoluteString
        }
        lines.append("> \(request.method) \(target) HTTP/\(HeaderDumpTransport.versionNumber(response.protocolName))")
        if let host = request.url.host, request.headers["host"] == nil {
            lines.append("> Host: \(host)\(request.url.port.map { ":\($0)" } ?? "")")
        }
        for field in request.headers { lines.append("> \(field.name): \(field.value)") }
        lines.append(">")
        lines.append("< " + HeaderDumpTransport.statusLine(status: response.status, protocolName: response.protocolName))
        for field in response.headers { lines.append("< \(field.name): \(field.value)") }
        lines.append("<")
        return lines.joined(separator: "\n") + "\n"
    }
}
