import FerryCore
import FerryEngine
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// `-D FILE` (curl's `--dump-header`): the head of every response, redirects included, written to FILE
/// (`-` for stdout) as it arrives: the status line, the fields, an empty line, with CRLF as on the wire.
final class HeaderDumpTransport: HTTPTransport {
    private let base: any HTTPTransport
    private let sink: Mutex<FileHandle?>
    private let toStandardOutput: Bool

    /// Dumps into `path` (created or emptied now), or stdout for `-`.
    init(_ base: any HTTPTransport, path: String) throws {
        self.base = base
        if path == "-" {
            toStandardOutput = true
            sink = Mutex(nil)
        } else {
            toStandardOutput = false
            // Opened as curl opens it: a device (-D /dev/null) or FIFO written through, a link followed,
            // a regular file emptied in place. (FileManager.createFile renamed a new file over
            // /dev/null.)
            let descriptor: Int32
            do {
                descriptor = try UserNamedFile.openForWriting(CLI.absolute(path))
            } catch {
                throw CLIFailure("cannot write the header file: \(error.message)", status: .localFile)
            }
            sink = Mutex(FileHandle(fileDescriptor: descriptor, closeOnDealloc: true))
        }
    }

    deinit {
        sink.withLock { try? $0?.close() }
    }

    func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        let response = try await base.send(request, deadline: deadline)
        let text = Self.render(response)
        if toStandardOutput {
            Console.out(bytes: Array(text.utf8))
        } else {
            sink.withLock { handle in try? handle?.write(contentsOf: Data(text.utf8)) }
        }
        return response
    }

    var enforcesDeadlineOverBody: Bool { base.enforcesDeadlineOverBody }

    func multiplexes(_ url: URL) -> Bool { base.multiplexes(url) }

    func shutdown() async throws { try await base.shutdown() }

    /// A response head as curl writes it with `-D`.
    static func render(_ response: TransportResponse) -> String {
        render(status: response.status, headers: response.headers, protocolName: response.protocolName)
    }

    /// The heads of a transfer's exchanges in order (the redirects', then the answer's), as curl writes
    /// them for `-i` and `-I`; with `upToSuccess`, none after the first 2xx.
    static func render(_ transactions: [TransactionMetrics], upToSuccess: Bool = false) -> String {
        var heads = ""
        for transaction in transactions {
            guard let response = transaction.response else { continue }
            heads += render(
                status: response.statusCode,
                headers: response.headers,
                protocolName: transaction.networkProtocolName ?? "http/1.1"
            )
            if upToSuccess, (200..<300).contains(response.statusCode) { break }
        }
        return heads
    }

    /// The status line of a response received over `protocolName`, as curl writes it (`HTTP/1.1 200 OK`,
    /// `HTTP/2 200`): `-D`, `-i` and `-v` alike.
    static func statusLine(status: Int, protocolName: String) -> String {
        let version = "HTTP/" + versionNumber(protocolName)
        // The transport keeps the status, not the server's phrase: the standard one for it.
        let reason = HTTPResponseStatus(statusCode: status).reasonPhrase
        return "\(version) \(status)\(reason.isEmpty || version != "HTTP/1.1" ? "" : " " + reason)"
    }

    /// The HTTP version of an exchange over `protocolName` (ALPN's name), as curl writes it: `2`, `3`,
    /// else `1.1` (`-D`, `-i`, `-v` and `-w %{http_version}`).
    static func versionNumber(_ protocolName: String) -> String {
        BackgroundTaskInfo.httpVersion(ofProtocol: protocolName)
    }

    /// A head with `status` and `headers`, received over `protocolName`, as curl writes it.
    static func render(status: Int, headers: Headers, protocolName: String) -> String {
        var text = statusLine(status: status, protocolName: protocolName) + "\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        return text + "\r\n"
    }
}
