import FerryQUIC
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Drives a ``QUICClientConnection`` over a UDP socket to 127.0.0.1:`port`, on a thread of its own
/// (blocking reads with a short timeout), until `done` says so or `limit` seconds pass: what tests use
/// until the engine carries QUIC on NIO's datagram channels.
enum UDPDriver {
    struct Outcome {
        var connection: QUICClientConnection
        var events: [QUICClientConnection.Event]
        var timedOut: Bool
    }

    static func run(
        _ connection: QUICClientConnection,
        port: Int,
        limit: TimeInterval = 20,
        drop: @escaping @Sendable (_ outgoing: Bool, _ index: Int) -> Bool = { _, _ in false },
        sending: @escaping @Sendable (_ datagram: [UInt8]) -> Void = { _ in },
        step: @escaping @Sendable (inout QUICClientConnection, [QUICClientConnection.Event]) -> [[UInt8]] = { _, _ in [] },
        done: @escaping @Sendable ([QUICClientConnection.Event]) -> Bool
    ) async -> Outcome {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: loop(connection, port: port, limit: limit, drop: drop, sending: sending, step: step, done: done))
            }
            thread.start()
        }
    }

    private static func loop(
        _ start: QUICClientConnection,
        port: Int,
        limit: TimeInterval,
        drop: (Bool, Int) -> Bool,
        sending: ([UInt8]) -> Void,
        step: (inout QUICClientConnection, [QUICClientConnection.Event]) -> [[UInt8]],
        done: ([QUICClientConnection.Event]) -> Bool
    ) -> Outcome {
        var connection = start
        var events: [QUICClientConnection.Event] = []
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var timeout = timeval(tv_sec: 0, tv_usec: 20_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // Datagrams each way, counted, some dropped as `drop` says (a lossy path, deterministic).
        var (sent, received) = (0, 0)
        func transmit(_ datagrams: [[UInt8]]) {
            for datagram in datagrams {
                sending(datagram)
                sent += 1
                if drop(true, sent) { continue }
                _ = datagram.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
            }
        }
        transmit((try? connection.start()) ?? [])
        let end = Date().addingTimeInterval(limit)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while Date() < end {
            let fresh = connection.takeEvents()
            events += fresh
            transmit(step(&connection, fresh))
            if done(events) { return Outcome(connection: connection, events: events, timedOut: false) }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += 1
                if !drop(false, received) { transmit(connection.receive(Array(buffer[0..<count]))) }
            }
            if let due = connection.nextTimeout(), due <= QUICClientConnection.monotonicNanoseconds() {
                transmit(connection.handleTimeout())
            }
        }
        events += connection.takeEvents()
        return Outcome(connection: connection, events: events, timedOut: true)
    }
}
