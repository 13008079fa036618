import ArgumentParser
import Ferry
import FerryEngine
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `ferry ws URL`: a WebSocket client for the terminal and scripts, as websocat's. Each line of stdin
/// is a message; each message received is a line of stdout.
struct WebSocketCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ws",
        abstract: "Talk to a WebSocket: stdin lines out as messages, messages in as stdout lines.",
        discussion: """
            At the end of stdin ferry waits until nothing has arrived for --idle seconds, then closes with \
            1000. Exit status 0 after a normal close (1000, from either side); 1 when the server closes \
            with another code (printed with its reason on stderr) or the connection is lost.
            """
    )

    @Argument(help: ArgumentHelp("The ws:// or wss:// URL.", valueName: "url"))
    var url: String

    @Option(
        name: .customLong("protocol"),
        help: ArgumentHelp("Offer this subprotocol (Sec-WebSocket-Protocol; repeatable, in order of preference).", valueName: "name")
    )
    var protocols: [String] = []

    @Option(
        name: [.customShort("H"), .customLong("header")],
        help: ArgumentHelp("A header for the opening handshake (repeatable).", valueName: "'Name: value'")
    )
    var headers: [String] = []

    @Option(
        name: [.customShort("A"), .customLong("user-agent")],
        help: ArgumentHelp("The User-Agent to send instead of ferry/VERSION ('' sends none).", valueName: "name")
    )
    var userAgent: String?

    @Flag(name: .customLong("binary"), help: "Send each line as a binary message (its bytes, without the newline).")
    var binary = false

    @Option(
        name: .customLong("idle"),
        help: ArgumentHelp("Seconds without a message, after the end of stdin, before closing (default 2).", valueName: "seconds")
    )
    var idle: Double = 2

    @Flag(name: .customLong("deflate"), help: "Offer permessage-deflate (RFC 7692); the server decides.")
    var deflate = false

    @Option(
        name: .customLong("max-message"),
        help: ArgumentHelp("The largest message accepted, in bytes (default 1048576); a larger one closes with 1009.", valueName: "bytes")
    )
    var maximumMessage: Int = 1 << 20

    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        guard let target = URL(string: url), let scheme = target.scheme?.lowercased(), scheme == "ws" || scheme == "wss",
            target.host?.isEmpty == false
        else {
            throw CLIFailure("ferry ws takes a ws:// or wss:// URL, not '\(url)'", status: .usage)
        }
        guard idle >= 0, idle.isFinite else { throw CLIFailure("--idle takes a number of seconds, 0 or more", status: .usage) }
        guard maximumMessage >= 125 else { throw CLIFailure("--max-message takes 125 bytes or more", status: .usage) }
        var request = Request(url: target)
        // -H and -A as `get` reads them; the one default is the User-Agent (no Accept on a handshake).
        let userAgent = CLI.defaultHeaders.filter { $0.name == "User-Agent" }
        request.headers = try CLI.headers(CLI.headerLines(headers, userAgent: self.userAgent), defaults: userAgent)
        do {
            try request.validate(schemes: ["ws", "wss"])
        } catch let error as FerryError {
            throw CLIFailure(error)
        }
        let options = try connection.transportOptions()
        let transport: StandardTransport
        do {
            transport = try StandardTransport(options: options)
        } catch let error as FerryError {
            throw CLIFailure(error)
        }
        let session = Session(configuration: .ephemeral, delegate: nil, transport: transport)
        defer { session.invalidateAndCancel() }
        let socket = session.webSocketTask(with: request, protocols: protocols)
        socket.maximumMessageSize = maximumMessage
        socket.compression = deflate
        socket.resume()

        let lastArrival = ArrivalTime()
        let binary = self.binary
        // Messages in: one line each, as they come.
        let reader = Task {
            while true {
                let messages: [WebSocketMessage]
                do {
                    messages = try await socket.receive(atMost: 256)
                } catch {
                    return
                }
                lastArrival.instant.withLock { $0 = .now }
                // One write for what arrived together.
                var output: [UInt8] = []
                for message in messages {
                    switch message {
                    case .string(let text): output += text.utf8
                    case .data(let data): output += data
                    }
                    output.append(0x0A)
                }
                Console.out(bytes: output)
            }
        }
        // Lines out, until stdin ends; then the close once replies stop. A connection that ends first
        // ends the command at once, whatever stdin is doing.
        let idle = self.idle
        let sender = Task { () -> FerryError? in
            let input = StandardInputLines()
            // One read ahead of the send in progress: bounded, and the next lines are ready when it ends.
            var upcoming = Task { await input.next() }
            while let lines = await upcoming.value {
                if Task.isCancelled { return nil }
                upcoming = Task { await input.next() }
                do {
                    try await socket.send(
                        contentsOf: lines.map { binary ? .data(Data($0)) : .string(String(decoding: $0, as: UTF8.self)) }
                    )
                } catch {
                    return error as? FerryError
                }
            }
            if Task.isCancelled { return nil }
            // The replies to the last lines may still be on their way.
            lastArrival.instant.withLock { $0 = max($0, .now) }
            while socket.state == .running, !Task.isCancelled {
                let quiet = ContinuousClock.now - lastArrival.instant.withLock { $0 }
                if quiet >= .seconds(idle) { break }
                try? await Task.sleep(for: .seconds(idle) - quiet)
            }
            if socket.state == .running { socket.cancel(with: .normalClosure, reason: nil) }
            return nil
        }
        await socket.waitUntilFinished()
        sender.cancel()
        await reader.value
        if let error = socket.error {
            throw CLIFailure(error)
        }
        let code = socket.closeCode
        if code != .normalClosure {
            let reason = socket.closeReason.map { ": " + String(decoding: $0, as: UTF8.self) } ?? ""
            throw CLIFailure("the server closed the WebSocket with \(code)\(reason)", status: .transferFailed)
        }
    }
}

/// Standard input as lines (bytes, without the newline), the lines of each read together. A read is
/// made only when the sender asks for the next lines, so input is taken as fast as it is sent (`ferry ws`
/// keeps one read ahead), not all at once. The blocking read runs on a dispatch queue of its own: stdin may be a regular file, which
/// an event loop cannot watch, and a blocking read must not hold a thread of the cooperative pool.
final class StandardInputLines: @unchecked Sendable {
    private let queue = DispatchQueue(label: "ferry.stdin")
    // Touched only on `queue`.
    private var pending: [UInt8] = []
    private var ended = false
    private var buffer = [UInt8](repeating: 0, count: 65536)

    /// The next lines; nil at the end of stdin.
    func next() async -> [[UInt8]]? {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.read()) }
        }
    }

    private func read() -> [[UInt8]]? {
        while !ended {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 {
                ended = true
                break
            }
            var start = 0
            var lines: [[UInt8]] = []
            for index in 0..<count where buffer[index] == 0x0A {
                pending += buffer[start..<index]
                if pending.last == 0x0D { pending.removeLast() }
                lines.append(pending)
                pending = []
                start = index + 1
            }
            pending += buffer[start..<count]
            if !lines.isEmpty { return lines }
        }
        guard !pending.isEmpty else { return nil }
        defer { pending = [] }
        return [pending]
    }
}

/// When the last message arrived, shared by the command's reader and sender.
private final class ArrivalTime: Sendable {
    let instant = Mutex(ContinuousClock.now)
}
