public import Foundation

/// What `Alt-Svc` answers (RFC 7838) said, per origin, until they expire: the cache curl keeps with
/// `--alt-svc FILE`, in curl's file format, so the CLI and curl can share one file.
///
/// A line of that format: `h2 example.com 443 h3 example.com 443 "20261231 00:00:00" 0 0`: the
/// protocol the answer came over, the origin's host and port, the alternative's protocol, host and
/// port, when it expires (UTC), whether it persists across network changes, and a priority (unused).
public struct AltServiceCache: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var sourceProtocol: String
        public var sourceHost: String
        public var sourcePort: Int
        public var protocolID: String
        public var host: String
        public var port: Int
        public var expires: Date
        public var persist: Bool

        public init(
            sourceProtocol: String, sourceHost: String, sourcePort: Int, protocolID: String, host: String, port: Int, expires: Date,
            persist: Bool = false
        ) {
            self.sourceProtocol = sourceProtocol
            self.sourceHost = sourceHost.lowercased()
            self.sourcePort = sourcePort
            self.protocolID = protocolID
            self.host = host.lowercased()
            self.port = port
            self.expires = expires
            self.persist = persist
        }
    }

    /// The entries, the newest last.
    public private(set) var entries: [Entry] = []
    /// The most entries kept: a server cannot grow the cache (nor its file) without bound.
    public static let capacity = 1_000

    public init(entries: [Entry] = []) {
        self.entries = Array(entries.suffix(Self.capacity))
    }

    /// A cache read from curl's format: blank lines and `#` comments skipped.
    /// - Throws: ``FerryError`` naming the first line that is not an entry.
    public init(curlFormat text: String) throws(FerryError) {
        var entries: [Entry] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let entry = Self.entry(trimmed) else {
                throw FerryError(
                    .cannotDecodeContentData,
                    "line \(number + 1) is not an Alt-Svc cache entry (curl's format: h2 HOST PORT h3 HOST PORT \"YYYYMMDD HH:MM:SS\" PERSIST PRIORITY)"
                )
            }
            entries.append(entry)
        }
        self.init(entries: entries)
    }

    /// The cache in curl's format.
    public var curlFormat: String {
        var text = "# Your alt-svc cache. https://curl.se/docs/alt-svc.html\n# Written by ferry.\n"
        for entry in entries {
            let fields = [
                entry.sourceProtocol, entry.sourceHost, String(entry.sourcePort), entry.protocolID, entry.host, String(entry.port),
                "\"\(Self.format(entry.expires))\"", entry.persist ? "1" : "0", "0",
            ]
            text += fields.joined(separator: " ") + "\n"
        }
        return text
    }

    /// The HTTP/3 alternative for `host`:`port` still valid at `now` on the same host (another host's
    /// is not taken: see ``AltService/http3Port(_:host:)``).
    public func http3(host: String, port: Int, now: Date) -> Entry? {
        let host = host.lowercased()
        return entries.last {
            $0.sourceHost == host && $0.sourcePort == port && $0.protocolID == "h3" && $0.expires > now && ($0.host.isEmpty || $0.host == host)
        }
    }

    /// Takes in an answer's `Alt-Svc` field values from `host`:`port`, received over `sourceProtocol`
    /// (`h1`, `h2`, `h3`) at `now`: its alternatives replace the origin's, `clear` removes them
    /// (RFC 7838 §3); expired entries go. Whether anything changed.
    @discardableResult
    public mutating func record(_ values: [String], host: String, port: Int, sourceProtocol: String, now: Date) -> Bool {
        guard !values.isEmpty, let alternatives = AltService.alternatives(values) else {
            guard !values.isEmpty else { return false }
            return replace(host: host, port: port, with: [], now: now)
        }
        let fresh = alternatives.map {
            Entry(
                sourceProtocol: sourceProtocol, sourceHost: host, sourcePort: port, protocolID: $0.protocolID,
                host: $0.host.isEmpty ? host : $0.host, port: $0.port, expires: now.addingTimeInterval(TimeInterval($0.maxAge)),
                persist: $0.persist
            )
        }
        return replace(host: host, port: port, with: fresh, now: now)
    }

    private mutating func replace(host: String, port: Int, with fresh: [Entry], now: Date) -> Bool {
        let host = host.lowercased()
        let before = entries
        entries.removeAll { ($0.sourceHost == host && $0.sourcePort == port) || $0.expires <= now }
        entries += fresh
        if entries.count > Self.capacity { entries.removeFirst(entries.count - Self.capacity) }
        // (An answer that repeats what is known moves only its expiry: that is a change too.)
        return entries != before
    }

    private static func entry(_ line: String) -> Entry? {
        // Nine fields; the date's two are one, in quotes.
        guard let open = line.firstIndex(of: "\""), let close = line[line.index(after: open)...].firstIndex(of: "\"") else { return nil }
        let head = line[..<open].split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        let tail = line[line.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard head.count == 6, tail.count == 2, let sourcePort = Int(head[2]), let port = Int(head[5]),
            (1...65_535).contains(sourcePort), (1...65_535).contains(port),
            let expires = parse(String(line[line.index(after: open)..<close]))
        else { return nil }
        return Entry(
            sourceProtocol: head[0], sourceHost: head[1], sourcePort: sourcePort, protocolID: head[3], host: head[4], port: port,
            expires: expires, persist: tail[0] == "1"
        )
    }

    private static func formatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd HH:mm:ss"
        return formatter
    }

    static func format(_ date: Date) -> String { formatter().string(from: date) }
    static func parse(_ text: String) -> Date? { formatter().date(from: text) }
}
