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
            // Whose listener answered: a port that was free a moment ago may have gone to another
            // test's server first, and then the child cannot bind it (it exits, or runs without it).
            if connected, listener(on: port, isOwnedBy: process.processIdentifier) { return }
            if connected, !process.isRunning || !listenerInodes(port: port).isEmpty {
                throw PortTaken(port: port)
            }
            guard process.isRunning else { throw FerryError(.cannotConnectToHost, "\(name) on port \(port) exited") }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw FerryError(.timedOut, "\(name) on port \(port) never listened")
    }

    /// Another process listens on the port a child was given (``waitForListener(_:name:process:)``):
    /// start the child again on another port.
    public struct PortTaken: Error {
        public var port: Int
    }

    /// Whether a TCP socket listening on `port` (IPv4 or IPv6, any local address) is one of `pid`'s
    /// descriptors (Linux /proc); true when /proc cannot tell (nothing to check against).
    static func listener(on port: Int, isOwnedBy pid: Int32) -> Bool {
        guard FileManager.default.fileExists(atPath: "/proc/net/tcp") else { return true }
        let inodes = Set(listenerInodes(port: port).map { "socket:[\($0)]" })
        guard !inodes.isEmpty else { return false }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return descriptors.contains { name in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(name)")).map(inodes.contains) ?? false
        }
    }

    /// The inodes of the sockets listening on `port`, from /proc/net/tcp and tcp6 (a dual-stack
    /// listener on [::] takes IPv4 connections too and is listed in tcp6 only).
    static func listenerInodes(port: Int) -> [String] {
        let wanted = String(format: "%04X", port)
        var inodes: [String] = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            // Not String(contentsOfFile:): it reads a /proc file only up to its first ~4 KB.
            guard let handle = FileHandle(forReadingAtPath: table), let data = try? handle.readToEnd() else { continue }
            try? handle.close()
            let text = String(decoding: data, as: UTF8.self)
            for line in text.split(separator: "\n").dropFirst() {
                // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 9, fields[3] == "0A", fields[1].hasSuffix(":" + wanted) else { continue }
                inodes.append(String(fields[9]))
            }
        }
        return inodes
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }
}
