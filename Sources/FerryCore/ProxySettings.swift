public import Foundation

/// A proxy server: an HTTP proxy (absolute-form requests for http, CONNECT tunnels for https) or a
/// SOCKS5 one (RFC 1928; `socks5h` lets the proxy resolve host names).
public struct ProxyServer: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The proxy protocol.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// An HTTP proxy.
        case http
        /// SOCKS5, names resolved here.
        case socks5
        /// SOCKS5, names resolved by the proxy.
        case socks5h
    }

    /// The protocol.
    public var kind: Kind
    /// The proxy's host name or address.
    public var host: String
    /// The proxy's port.
    public var port: Int
    /// A user name: Basic authentication for an HTTP proxy (sent with each request or tunnel), RFC 1929
    /// for SOCKS5.
    public var username: String?
    /// The password that goes with ``username``.
    public var password: String?

    /// A proxy.
    public init(kind: Kind, host: String, port: Int, username: String? = nil, password: String? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.username = username
        self.password = password
    }

    /// A proxy from a URL as curl takes it: `http://[user:password@]host[:port]`, `socks5://…`,
    /// `socks5h://…`, or a bare `host[:port]` (HTTP). Default ports: 1080 for SOCKS, else 80.
    /// - Throws: ``FerryError`` with ``FerryError/Code/badURL`` saying what is wrong.
    public init(url text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let withScheme = trimmed.contains("://") ? trimmed : "http://" + trimmed
        guard let components = URLComponents(string: withScheme), let scheme = components.scheme?.lowercased(),
            let rawHost = components.host, !rawHost.isEmpty
        else {
            throw FerryError(.badURL, "'\(text)' is not a proxy URL; use http://host:port or socks5h://host:port")
        }
        switch scheme {
        case "http": kind = .http
        case "socks5": kind = .socks5
        case "socks5h": kind = .socks5h
        case "https":
            throw FerryError(
                .unsupportedURL,
                "a proxy reached over TLS (https://) is not supported; use an http:// or socks5h:// proxy"
            )
        default:
            throw FerryError(
                .unsupportedURL,
                "the proxy scheme '\(scheme)' is not supported; use http://, socks5:// or socks5h://"
            )
        }
        host = rawHost.hasPrefix("[") && rawHost.hasSuffix("]") ? String(rawHost.dropFirst().dropLast()) : rawHost
        port = components.port ?? (kind == .http ? 80 : 1080)
        guard (1...65535).contains(port) else {
            throw FerryError(.badURL, "the proxy port \(port) is not a port number (1-65535)")
        }
        username = components.user?.removingPercentEncoding
        password = components.password?.removingPercentEncoding
    }

    /// `http://host:port` (never the credentials).
    public var description: String {
        let named = host.contains(":") ? "[\(host)]" : host
        return "\(kind.rawValue)://\(named):\(port)"
    }
}

/// Which requests go through which proxy, with curl's rules (docs/CONFIGURATION.md, "Proxies").
///
/// A value (Codable): a background task records the proxies of the client that created it, so ferryd
/// connects as that client would, whatever ferryd's own environment says.
public struct ProxySettings: Sendable, Hashable, Codable {
    /// The proxy for `http://` URLs; nil: direct.
    public var http: ProxyServer?
    /// The proxy for `https://` URLs; nil: direct.
    public var https: ProxyServer?
    /// Hosts reached directly, in `no_proxy`'s syntax: a name matches itself and its subdomains (a
    /// leading dot is ignored), `*` matches every host, an address may carry a CIDR prefix
    /// (`10.0.0.0/8`, `fd00::/8`), and `host:port` matches only that port.
    public var bypass: [String]

    /// Direct connections only.
    public init(http: ProxyServer? = nil, https: ProxyServer? = nil, bypass: [String] = []) {
        self.http = http
        self.https = https
        self.bypass = bypass
    }

    private enum CodingKeys: String, CodingKey {
        case http, https, bypass
    }

    /// Decodes, with the defaults for absent fields.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        http = try container.decodeIfPresent(ProxyServer.self, forKey: .http)
        https = try container.decodeIfPresent(ProxyServer.self, forKey: .https)
        bypass = try container.decodeIfPresent([String].self, forKey: .bypass) ?? []
    }

    /// One proxy for every scheme.
    public init(all proxy: ProxyServer, bypass: [String] = []) {
        self.init(http: proxy, https: proxy, bypass: bypass)
    }

    /// True when nothing goes through a proxy.
    public var isDirect: Bool { http == nil && https == nil }

    /// The settings the environment asks for, as curl reads it: `http_proxy` (lower case only: upper
    /// case `HTTP_PROXY` can be set by a CGI request's `Proxy:` header, so curl ignores it),
    /// `https_proxy` or `HTTPS_PROXY`, then `all_proxy` or `ALL_PROXY` for either, and `no_proxy` or
    /// `NO_PROXY`. Empty values count as unset.
    /// - Throws: ``FerryError`` naming the variable whose value is not a proxy URL.
    public static func fromEnvironment(_ environment: [String: String]) throws -> ProxySettings {
        func value(_ names: String...) -> (String, String)? {
            for name in names {
                if let value = environment[name], !value.trimmingCharacters(in: .whitespaces).isEmpty {
                    return (name, value)
                }
            }
            return nil
        }
        func server(_ found: (String, String)?) throws -> ProxyServer? {
            guard let (name, text) = found else { return nil }
            do {
                return try ProxyServer(url: text)
            } catch let error as FerryError {
                throw FerryError(error.code, "\(name): \(error.message)")
            }
        }
        let all = try server(value("all_proxy", "ALL_PROXY"))
        let http = try server(value("http_proxy")) ?? all
        let https = try server(value("https_proxy", "HTTPS_PROXY")) ?? all
        let bypass = value("no_proxy", "NO_PROXY").map { parseList($0.1) } ?? []
        return ProxySettings(http: http, https: https, bypass: bypass)
    }

    /// A comma-separated `no_proxy` list (spaces allowed).
    public static func parseList(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The proxy for `url`, or nil to connect directly.
    public func proxy(for url: URL) -> ProxyServer? {
        let scheme = url.scheme?.asciiLowercased
        let server = scheme == "https" || scheme == "wss" ? https : http
        guard let server, let host = url.host else { return server }
        let port = url.port ?? (scheme == "https" || scheme == "wss" ? 443 : 80)
        return Self.bypasses(bypass, host: host, port: port) ? nil : server
    }

    /// Whether `host` (and `port`) match an entry of a `no_proxy` list.
    public static func bypasses(_ list: [String], host rawHost: String, port: Int) -> Bool {
        let host = Self.bare(rawHost).lowercased()
        let address = IPAddress(host)
        for rawEntry in list {
            var entry = rawEntry.lowercased()
            if entry == "*" { return true }
            // host:port (a bracketed IPv6 address may carry a port too; a bare IPv6 address has colons).
            var entryPort: Int?
            if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
                let after = entry[entry.index(after: close)...]
                if after.hasPrefix(":") { entryPort = Int(after.dropFirst()) }
                entry = String(entry[entry.index(after: entry.startIndex)..<close])
            } else if entry.filter({ $0 == ":" }).count == 1, let colon = entry.lastIndex(of: ":"),
                let number = Int(entry[entry.index(after: colon)...])
            {
                entryPort = number
                entry = String(entry[..<colon])
            }
            if let entryPort, entryPort != port { continue }
            if let address {
                if let (network, bits) = Self.cidr(entry), address.isIn(network, prefix: bits) { return true }
                if let other = IPAddress(entry), other == address { return true }
                continue
            }
            while entry.hasPrefix(".") { entry.removeFirst() }
            if entry.hasPrefix("*.") { entry.removeFirst(2) }
            guard !entry.isEmpty else { continue }
            if host == entry || host.hasSuffix("." + entry) { return true }
        }
        return false
    }

    private static func bare(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// `10.0.0.0/8` → (address, 8); an address alone is not a CIDR here.
    private static func cidr(_ entry: String) -> (IPAddress, Int)? {
        guard let slash = entry.firstIndex(of: "/"), let bits = Int(entry[entry.index(after: slash)...]),
            let network = IPAddress(String(entry[..<slash]))
        else { return nil }
        guard bits >= 0, bits <= network.bytes.count * 8 else { return nil }
        return (network, bits)
    }
}

/// An IPv4 or IPv6 address as bytes, for `no_proxy` matching. Foundation-light parsing: dotted quads and
/// the usual IPv6 forms (with `::`, and an IPv4 tail).
struct IPAddress: Hashable {
    let bytes: [UInt8]

    init?(_ text: String) {
        if let v4 = Self.parseIPv4(text) {
            bytes = v4
        } else if text.contains(":"), let v6 = Self.parseIPv6(text) {
            bytes = v6
        } else {
            return nil
        }
    }

    func isIn(_ network: IPAddress, prefix bits: Int) -> Bool {
        guard network.bytes.count == bytes.count else { return false }
        var remaining = bits
        for index in bytes.indices {
            guard remaining > 0 else { return true }
            let take = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
            if bytes[index] & mask != network.bytes[index] & mask { return false }
            remaining -= take
        }
        return true
    }

    private static func parseIPv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var result: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), let value = UInt8(part) else { return nil }
            result.append(value)
        }
        return result
    }

    private static func parseIPv6(_ text: String) -> [UInt8]? {
        var text = text
        if let percent = text.firstIndex(of: "%") { text = String(text[..<percent]) }  // zone
        var tail: [UInt8] = []
        if let lastColon = text.lastIndex(of: ":"), text[text.index(after: lastColon)...].contains(".") {
            // An IPv4 tail (::ffff:10.0.0.1): its four bytes end the address.
            guard let v4 = parseIPv4(String(text[text.index(after: lastColon)...])) else { return nil }
            tail = v4
            var prefix = String(text[...lastColon])
            if !prefix.hasSuffix("::") { prefix.removeLast() }
            text = prefix
        }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard !group.isEmpty, group.count <= 4, let value = UInt16(group, radix: 16) else { return nil }
                result.append(value)
            }
            return result
        }
        guard let head = groups(halves[0]) else { return nil }
        let rest = halves.count == 2 ? groups(halves[1]) : []
        guard let rest else { return nil }
        let wanted = 8 - tail.count / 2
        var all: [UInt16]
        if halves.count == 2 {
            guard head.count + rest.count < wanted else { return nil }
            all = head + [UInt16](repeating: 0, count: wanted - head.count - rest.count) + rest
        } else {
            guard head.count == wanted else { return nil }
            all = head
        }
        var result: [UInt8] = []
        for group in all { result += [UInt8(group >> 8), UInt8(group & 0xFF)] }
        return result + tail
    }
}
