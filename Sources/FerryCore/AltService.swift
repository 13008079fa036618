/// The `Alt-Svc` field (RFC 7838): where else an origin is served, and by which protocol.
public enum AltService {
    /// The UDP port an `Alt-Svc` offers HTTP/3 (`h3`) on for `host` itself: `h3=":8443"`, or
    /// `h3="HOST:8443"` naming the same host. Nil when none does (another host's alternative is not
    /// taken: it would need its own certificate check, and the RFC lets a client ignore it), or `clear`.
    public static func http3Port(_ values: [String], host: String) -> Int? {
        for value in values {
            for entry in value.split(separator: ",") {
                let alternative = entry.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) ?? ""
                if alternative == "clear" { return nil }
                guard alternative.hasPrefix("h3=\"") else { continue }
                let authority = alternative.dropFirst(4).prefix { $0 != "\"" }
                guard let colon = authority.lastIndex(of: ":"), let port = Int(authority[authority.index(after: colon)...]),
                    (1...65_535).contains(port)
                else { continue }
                let named = authority[..<colon]
                if named.isEmpty || named.lowercased() == host.lowercased() { return port }
            }
        }
        return nil
    }
}
