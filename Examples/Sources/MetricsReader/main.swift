// Reads a task's metrics: for each request of the task (redirects included), the protocol, whether the
// connection was reused, the addresses, the TLS version and the time of each phase. It fetches the URL
// twice, past the HTTP cache, so the second time shows a reused connection.
//
// usage: MetricsReader URL [TRUST_ROOT_PEM]
import Ferry
import Foundation

guard CommandLine.arguments.count >= 2, let url = URL(string: CommandLine.arguments[1]) else {
    FileHandle.standardError.write(Data("usage: MetricsReader URL [TRUST_ROOT_PEM]\n".utf8))
    exit(2)
}

/// Prints each transaction of each task's metrics.
final class Metrics: TaskDelegate {
    func session(_ session: Session, task: SessionTask, didFinishCollecting metrics: TaskMetrics) async {
        for transaction in metrics.transactionMetrics {
            func milliseconds(_ from: Date?, _ to: Date?) -> String {
                guard let from, let to else { return "-" }
                return String(format: "%.1fms", to.timeIntervalSince(from) * 1000)
            }
            let fields = [
                "status=\(transaction.response?.statusCode ?? 0)",
                "fetch=\(transaction.resourceFetchType.rawValue)",
                "protocol=\(transaction.networkProtocolName ?? "-")",
                "reused=\(transaction.isReusedConnection.map(String.init) ?? "-")",
                "remote=\(transaction.remoteAddress ?? "-")",
                "tls=\(transaction.negotiatedTLSProtocolVersion ?? "-")",
                "connect=\(milliseconds(transaction.connectStartDate, transaction.connectEndDate))",
                "tls_handshake=\(milliseconds(transaction.secureConnectionStartDate, transaction.secureConnectionEndDate))",
                "first_byte=\(milliseconds(transaction.requestStartDate, transaction.responseStartDate))",
                "total=\(milliseconds(transaction.fetchStartDate, transaction.responseEndDate))",
                "bytes=\(transaction.countOfResponseBodyBytesReceived)",
            ]
            print(fields.joined(separator: " "))
        }
    }
}

var configuration = SessionConfiguration.ephemeral
if CommandLine.arguments.count > 2 {
    configuration.tls.additionalTrustRootsPEM = [try String(contentsOfFile: CommandLine.arguments[2], encoding: .utf8)]
}
let session = Session(configuration: configuration, delegate: Metrics())
do {
    for _ in 0..<2 {
        var request = Request(url: url)
        request.cachePolicy = .reloadIgnoringLocalCacheData  // from the network both times
        let task = session.dataTask(with: request)
        task.resume()
        await task.waitUntilFinished()
        if let error = task.error { throw error }
    }
} catch let error as FerryError {
    print("failed: \(error.message)")
    exit(1)
}
