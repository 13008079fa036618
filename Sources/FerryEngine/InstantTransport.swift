import FerryCore
package import NIOCore

/// Answers every request at once with 200 and a whole 1 KiB body, as a connection's handler does when
/// the answer came in one read: the layers above a transport, measured without a network
/// (`ferry-bench layers`, `urlsession-bench-ferry layers`). Not for programs.
package struct InstantTransport: HTTPTransport {
    let body = ByteBuffer(repeating: 0x61, count: 1024)

    package init() {}

    package func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        TransportResponse(
            status: 200,
            headers: ["Content-Length": "1024", "Content-Type": "application/octet-stream"],
            protocolName: "http/1.1",
            body: TransportBodyStream(buffer: body)
        )
    }

    package func shutdown() async throws {}

    /// As ``NetworkTransport``: no timer task per body.
    package var enforcesDeadlineOverBody: Bool { true }
}
