import ArgumentParser
import FerryCore
import FerryEngine
import Foundation

/// Options of the commands that move bytes themselves (`get`, `put`).
struct TransferOptions: ParsableArguments {
    @Option(
        name: [.customShort("H"), .customLong("header")],
        help: ArgumentHelp("A request header (repeatable).", valueName: "'Name: value'")
    )
    var headers: [String] = []

    @Option(
        name: .customLong("limit-rate"),
        help: ArgumentHelp("At most this many bytes a second: 500K, 2M, 1G (powers of 1024).", valueName: "rate")
    )
    var limitRate: String?

    @Option(
        name: .customLong("cacert"),
        help: ArgumentHelp("Also trust this PEM certificate (e.g. a test server's CA).", valueName: "file")
    )
    var cacert: String?

    @Flag(name: [.short, .long], help: "No progress and no notes; errors only.")
    var quiet = false

    /// The parsed rate limit.
    func rateLimit() throws -> Int64? {
        guard let limitRate else { return nil }
        guard let value = ByteFormat.parseRate(limitRate) else {
            throw CLIFailure("--limit-rate takes a rate such as 500K, 2M or 1G, not '\(limitRate)'", status: .usage)
        }
        return value
    }

    /// A transport for this command's transfers.
    /// A transport allowing `connectionsPerHost` connections to one origin at once.
    func makeTransport(connectionsPerHost: Int = 6) throws -> SessionTransport {
        var options = StandardTransport.Options()
        if let cacert {
            guard let pem = try? String(contentsOfFile: cacert, encoding: .utf8) else {
                throw CLIFailure("cannot read the certificate file \(cacert)", status: .localFile)
            }
            options.additionalTrustRootsPEM = [pem]
        }
        options.maximumConnectionsPerHost = connectionsPerHost
        do {
            return SessionTransport(
                try StandardTransport(options: options),
                maximumConnectionsPerHost: connectionsPerHost
            )
        } catch let error as FerryError {
            throw CLIFailure(error)
        }
    }
}
