import FerryCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Ports on 127.0.0.1 for peers that tests start themselves (tinyproxy, microsocks, nghttpd): a free one
/// to hand to a program that needs a number, and a wait until that program listens.
public enum LocalPorts {
    /// A port on 127.0.0.1 that was free a moment ago (the kernel picks it; the socket is then closed).
    public static func free() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else { throw FerryError(.cannotConnectToHost, "no free port on 127.0.0.1") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Waits (up to 5 s) until something accepts connections on `port`.
    /// - Parameters:
    ///   - name: what is expected there, for the error.
    ///   - process: the program that should listen; its exit ends the wait at once.
    /// - Throws: ``FerryError`` when it exits or never listens.
    public static func waitForListener(_ port: Int, name: String, process: ChildProcess) async throws {
        for _ in 0..<500 {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = loopback(port: port)
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(descriptor)
            if connected { return }
            guard process.isRunning else { throw FerryError(.cannotConnectToHost, "\(name) on port \(port) exited") }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw FerryError(.timedOut, "\(name) on port \(port) never listened")
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }
}
