import Foundation

/// The `Alt-Svc` field (RFC 7838): where else an origin is served, and by which protocol.
public enum AltService {
    /// One alternative of the field: `h3=":8443"; ma=3600; persist=1`.
    public struct Alternative: Sendable, Equatable {
        /// The ALPN protocol ID (`h3`, `h2`).
        public var protocolID: String
        /// The alternative's host; empty: the origin's.
        public var host: String
        public var port: Int
        /// Seconds it stays valid (`ma`, 24 hours when absent).
        public var maxAge: Int
        public var persist: Bool

        public init(protocolID: String, host: String, port: Int, maxAge: Int = 86_400, persist: Bool = false) {
            self.protocolID = protocolID
            self.host = host
            self.port = port
            self.maxAge = maxAge
            self.persist = persist
        }
    }

    /// The alternatives the field values offer, in order; nil for `clear` (the origin has none).
    /// Alternatives that do not parse are skipped.
    public static func alternatives(_ values: [String]) -> [Alternative]? {
        var found: [Alternative] = []
        for value in values {
            for entry in value.split(separator: ",") {
                let parts = entry.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                guard let first = parts.first else { continue }
                if first == "clear" { return nil }
                guard let equals = first.firstIndex(of: "="), first[first.index(after: equals)...].hasPrefix("\"") else { continue }
                let authority = first[first.index(equals, offsetBy: 2)...].prefix { $0 != "\"" }
                guard let colon = authority.lastIndex(of: ":"), let port = Int(authority[authority.index(after: colon)...]),
                    (1...65_535).contains(port)
                else { continue }
                var alternative = Alternative(
                    protocolID: String(first[..<equals]), host: String(authority[..<colon]), port: port, maxAge: 86_400, persist: false
                )
                for parameter in parts.dropFirst() {
                    let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    guard pair.count == 2 else { continue }
                    if pair[0] == "ma", let seconds = Int(pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))), seconds >= 0 {
                        alternative.maxAge = min(seconds, 365 * 86_400)
                    }
                    if pair[0] == "persist" { alternative.persist = pair[1] == "1" }
                }
                found.append(alternative)
            }
        }
        return found
    }

    /// The UDP port an `Alt-Svc` offers HTTP/3 (`h3`) on for `host` itself: `h3=":8443"`, or
    /// `h3="HOST:8443"` naming the same host. Nil when none does (another host's alternative is not
    /// taken: it would need its own certificate check, and the RFC lets a client ignore it), or `clear`.
    public static func http3Port(_ values: [String], host: String) -> Int? {
        alternatives(values)?.first { $0.protocolID == "h3" && ($0.host.isEmpty || $0.host.lowercased() == host.lowercased()) }?.port
    }
}
