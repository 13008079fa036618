import FerryCore
import Foundation

/// curl's `-w`/`--write-out`: a format with `%{variable}` placeholders, printed after each transfer.
/// Pure: ``Values`` come from the transfer's metrics, ``render(_:)`` fills the format.
///
/// Variables: `http_code`, `response_code`, `http_version`, `url_effective`, `num_redirects`,
/// `remote_ip`, `remote_port`, `size_download`, `speed_download`, `time_namelookup`, `time_connect`,
/// `time_appconnect`, `time_starttransfer`, `time_total`, `filename_effective`, `json` (all of them as
/// one object). Escapes: `\n`, `\r`, `\t`, `\\`, and `%%` for `%`. `@FILE` reads the format from a file
/// (`@-`: stdin), as curl's.
public struct WriteOut: Sendable, Equatable {
    /// What the format says: literal text and variables, in order.
    public enum Piece: Sendable, Equatable {
        case text(String)
        case variable(String)
    }

    public static let variables: Set<String> = [
        "http_code", "response_code", "http_version", "url_effective", "num_redirects", "remote_ip", "remote_port",
        "size_download", "speed_download", "time_namelookup", "time_connect", "time_appconnect", "time_starttransfer",
        "time_total", "filename_effective", "exitcode", "errormsg", "json",
    ]

    public let pieces: [Piece]

    /// Parses `format`.
    /// - Throws: ``CLIFailure`` (usage) naming an unknown variable or an unclosed `%{`.
    public init(_ format: String) throws {
        var pieces: [Piece] = []
        var text = ""
        var rest = Substring(format)
        while let first = rest.first {
            if first == "%" {
                if rest.hasPrefix("%%") {
                    text.append("%")
                    rest = rest.dropFirst(2)
                    continue
                }
                if rest.hasPrefix("%{") {
                    guard let close = rest.firstIndex(of: "}") else {
                        throw CLIFailure("-w: '%{' without its '}' in \"\(format)\"", status: .usage)
                    }
                    let name = String(rest[rest.index(rest.startIndex, offsetBy: 2)..<close])
                    guard Self.variables.contains(name) else {
                        throw CLIFailure(
                            "-w: unknown variable '\(name)'; ferry knows \(Self.variables.sorted().joined(separator: ", "))",
                            status: .usage
                        )
                    }
                    if !text.isEmpty { pieces.append(.text(text)) }
                    text = ""
                    pieces.append(.variable(name))
                    rest = rest[rest.index(after: close)...]
                    continue
                }
            }
            if first == "\\", let next = rest.dropFirst().first {
                let escaped: Character? = ["n": "\n", "r": "\r", "t": "\t", "\\": "\\"][next]
                if let escaped {
                    text.append(escaped)
                    rest = rest.dropFirst(2)
                    continue
                }
            }
            text.append(first)
            rest = rest.dropFirst()
        }
        if !text.isEmpty { pieces.append(.text(text)) }
        self.pieces = pieces
    }

    /// One transfer's figures.
    public struct Values: Sendable, Equatable, Codable {
        var httpCode: Int
        /// `1.1`, `2`, as curl prints.
        var httpVersion: String
        var urlEffective: String
        var numRedirects: Int
        var remoteIP: String
        var remotePort: Int
        var sizeDownload: Int64
        var timeNamelookup: Double
        var timeConnect: Double
        var timeAppconnect: Double
        var timeStarttransfer: Double
        var timeTotal: Double
        var filenameEffective: String
        /// The command's exit status for this transfer (0: it succeeded), as `%{exitcode}`.
        var exitCode = 0
        /// Why it failed, as `%{errormsg}` (empty when it succeeded).
        var errorMessage = ""

        /// Bytes a second over the whole transfer, as curl's (an integer).
        var speedDownload: Int64 { timeTotal > 0 ? Int64(Double(sizeDownload) / timeTotal) : 0 }

        /// The figures of a transfer that began at `start`, took `total` seconds and ended with the last
        /// of `transactions` (redirects and challenges before it).
        init(
            transactions: [TransactionMetrics],
            status: Int,
            protocolName: String,
            url: URL,
            redirects: Int,
            bytes: Int64,
            start: Date,
            total: Double,
            file: String
        ) {
            httpCode = status
            httpVersion = HeaderDumpTransport.versionNumber(protocolName)
            urlEffective = url.absoluteString
            numRedirects = redirects
            let last = transactions.last
            (remoteIP, remotePort) = Self.split(last?.remoteAddress)
            sizeDownload = bytes
            // curl's times run from the start of the transfer; a phase not seen (a reused connection,
            // plain http's TLS) is 0, as curl's.
            func since(_ date: Date?) -> Double { date.map { max(0, $0.timeIntervalSince(start)) } ?? 0 }
            let connecting = transactions.last { $0.connectEndDate != nil }
            timeNamelookup = since(connecting?.domainLookupEndDate ?? connecting?.connectStartDate)
            timeConnect = since(connecting?.connectEndDate)
            timeAppconnect = since(connecting?.secureConnectionEndDate)
            timeStarttransfer = since(last?.responseStartDate)
            timeTotal = max(total, timeStarttransfer)
            filenameEffective = file
        }

        /// The figures of a transfer that failed: what its exchanges got before the failure (curl
        /// prints `-w` for a failed transfer too; `http_code` is 000 when no response arrived).
        init(failed failure: CLIFailure, transactions: [TransactionMetrics], url: URL, bytes: Int64, start: Date, total: Double, file: String) {
            let answered = transactions.last { $0.response != nil }
            self.init(
                transactions: transactions,
                status: failure.httpStatus ?? answered?.response?.statusCode ?? 0,
                protocolName: answered?.networkProtocolName ?? "",
                url: answered?.request.url ?? url,
                redirects: transactions.filter { (300..<400).contains($0.response?.statusCode ?? 0) }.count,
                bytes: bytes,
                start: start,
                total: total,
                file: file
            )
            if answered == nil { httpVersion = "0" }
            exitCode = Int(failure.status.rawValue)
            errorMessage = failure.message
        }

        /// `127.0.0.1:8080` → (`127.0.0.1`, 8080); `[::1]:443` → (`::1`, 443).
        public static func split(_ address: String?) -> (String, Int) {
            guard let address, let colon = address.lastIndex(of: ":") else { return ("", 0) }
            var host = String(address[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return (host, Int(address[address.index(after: colon)...]) ?? 0)
        }

        /// The variables by curl's names, as text.
        var byName: [String: String] {
            [
                "http_code": String(format: "%03d", httpCode), "response_code": String(format: "%03d", httpCode),
                "http_version": httpVersion, "url_effective": urlEffective, "num_redirects": String(numRedirects),
                "remote_ip": remoteIP, "remote_port": String(remotePort), "size_download": String(sizeDownload),
                "speed_download": String(speedDownload), "time_namelookup": Self.seconds(timeNamelookup),
                "time_connect": Self.seconds(timeConnect), "time_appconnect": Self.seconds(timeAppconnect),
                "time_starttransfer": Self.seconds(timeStarttransfer), "time_total": Self.seconds(timeTotal),
                "filename_effective": filenameEffective, "exitcode": String(exitCode), "errormsg": errorMessage,
            ]
        }

        /// `%{json}`: every variable, numbers as numbers, as curl's.
        var json: String {
            var object: [String: Any] = [
                "http_code": httpCode, "response_code": httpCode, "http_version": httpVersion, "url_effective": urlEffective,
                "num_redirects": numRedirects, "remote_ip": remoteIP, "remote_port": remotePort,
                "size_download": sizeDownload, "speed_download": speedDownload, "time_namelookup": timeNamelookup,
                "time_connect": timeConnect, "time_appconnect": timeAppconnect, "time_starttransfer": timeStarttransfer,
                "time_total": timeTotal, "filename_effective": filenameEffective,
            ]
            object["exitcode"] = exitCode
            if !errorMessage.isEmpty { object["errormsg"] = errorMessage }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }

        /// `0.012345`: seconds with six decimals, as curl prints them.
        static func seconds(_ value: Double) -> String { String(format: "%.6f", value) }
    }

    /// The format filled with `values`.
    public func render(_ values: Values) -> String {
        let named = values.byName
        return pieces.map { piece in
            switch piece {
            case .text(let text): text
            case .variable("json"): values.json
            case .variable(let name): named[name] ?? ""
            }
        }.joined()
    }
}
