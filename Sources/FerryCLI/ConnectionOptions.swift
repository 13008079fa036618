import ArgumentParser
import FerryCore
import FerryEngine
import Foundation

/// How a command connects: TLS, proxies, addresses and the connect timeout, curl's names. Shared by the
/// commands that move bytes (`get`, `put`) and `ws`.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .customLong("cacert"),
        help: ArgumentHelp("Also trust the PEM certificates in this file (e.g. a private CA).", valueName: "file")
    )
    var cacert: String?

    @Flag(
        name: [.customShort("k"), .customLong("insecure"), .customLong("no-check-certificate")],
        help: "Accept any server certificate, unverified (pins still apply; --no-check-certificate as wget). Only for testing."
    )
    var insecure = false

    @Option(
        name: .customLong("pinnedpubkey"),
        help: ArgumentHelp(
            "Accept only a server key with this SHA-256 (curl's form; several separated by ;).",
            valueName: "sha256//base64"
        )
    )
    var pinnedPublicKey: String?

    @Flag(name: .customLong("tlsv1.2"), help: "Use TLS 1.2 or later (the default).")
    var tls12 = false

    @Flag(name: .customLong("tlsv1.3"), help: "Use TLS 1.3 or later.")
    var tls13 = false

    @Option(name: .customLong("tls-max"), help: ArgumentHelp("The highest TLS version: 1.2 or 1.3.", valueName: "version"))
    var tlsMax: String?

    @Option(
        name: .customLong("cert"),
        help: ArgumentHelp("A client certificate (PEM) for mutual TLS; it may hold the key too.", valueName: "file")
    )
    var certificate: String?

    @Option(name: .customLong("key"), help: ArgumentHelp("The client certificate's private key (PEM).", valueName: "file"))
    var key: String?

    @Option(
        name: .customLong("resolve"),
        help: ArgumentHelp("Connect to ADDR for HOST:PORT (repeatable), as curl's.", valueName: "host:port:addr")
    )
    var resolve: [String] = []

    @Flag(name: [.customShort("4"), .customLong("ipv4")], help: "Connect over IPv4 only, as curl.")
    var ipv4 = false

    @Flag(name: [.customShort("6"), .customLong("ipv6")], help: "Connect over IPv6 only, as curl.")
    var ipv6 = false

    @Option(
        name: .customLong("connect-timeout"),
        help: ArgumentHelp("Seconds a new connection (TCP and TLS) may take.", valueName: "seconds")
    )
    var connectTimeout: Double?

    @Option(
        name: .customLong("proxy"),
        help: ArgumentHelp(
            "Use this proxy for every URL (instead of http_proxy, https_proxy, all_proxy).",
            valueName: "[http|socks5|socks5h]://[user:password@]host[:port]"
        )
    )
    var proxy: String?

    @Option(name: .customLong("proxy-user"), help: ArgumentHelp("The proxy's user name and password.", valueName: "user:password"))
    var proxyUser: String?

    @Option(
        name: .customLong("noproxy"),
        help: ArgumentHelp(
            "Hosts reached directly, comma-separated (names and their subdomains, *, CIDR, host:port); overrides no_proxy.",
            valueName: "list"
        )
    )
    var noProxy: String?

    /// The transport settings these flags ask for.
    func transportOptions() throws -> TransportOptions {
        var options = TransportOptions()
        if let cacert { options.tls.additionalTrustRootsPEM = [try TransferOptions.read(cacert, "the certificate file")] }
        options.tls.allowsUntrustedCertificates = insecure
        if let pinnedPublicKey {
            do {
                options.tls.pinnedPublicKeys = try TLSSettings.parsePins(pinnedPublicKey)
            } catch let error as FerryError {
                throw CLIFailure("--pinnedpubkey: \(error.message)", status: .usage)
            }
        }
        if tls12 && tls13 { throw CLIFailure("--tlsv1.2 and --tlsv1.3 each set the lowest version; give one", status: .usage) }
        if tls13 { options.minimumTLSVersion = .tlsv13 }
        if let tlsMax {
            switch tlsMax {
            case "1.2": options.maximumTLSVersion = .tlsv12
            case "1.3": options.maximumTLSVersion = .tlsv13
            default: throw CLIFailure("--tls-max takes 1.2 or 1.3, not '\(tlsMax)'", status: .usage)
            }
        }
        if options.minimumTLSVersion > options.maximumTLSVersion {
            throw CLIFailure("--tlsv1.3 asks for TLS 1.3 at least, --tls-max 1.2 for 1.2 at most: no version is left", status: .usage)
        }
        if let certificate {
            let pem = try TransferOptions.read(certificate, "the client certificate")
            options.tls.clientCertificatePEM = pem
            if let key {
                options.tls.clientPrivateKeyPEM = try TransferOptions.read(key, "the client key")
            } else if pem.contains("PRIVATE KEY-----") {
                options.tls.clientPrivateKeyPEM = pem
            } else {
                throw CLIFailure("--cert \(certificate) holds no private key: give it with --key FILE", status: .usage)
            }
        } else if key != nil {
            throw CLIFailure("--key needs --cert (the certificate it belongs to)", status: .usage)
        }
        for entry in resolve { try Self.addResolve(entry, to: &options) }
        if ipv4, ipv6 { throw CLIFailure("-4 and -6 exclude each other; give one", status: .usage) }
        if ipv4 { options.addressFamily = .ipv4 }
        if ipv6 { options.addressFamily = .ipv6 }
        if let connectTimeout {
            guard connectTimeout > 0, connectTimeout.isFinite else {
                throw CLIFailure("--connect-timeout takes a positive number of seconds", status: .usage)
            }
            options.connectTimeout = connectTimeout
        }
        options.proxies = try proxies(ProcessInfo.processInfo.environment)
        return options
    }

    /// The proxies: --proxy (with --proxy-user) over the environment's, --noproxy over no_proxy.
    func proxies(_ environment: [String: String]) throws -> ProxySettings {
        var settings: ProxySettings
        do {
            if let proxy {
                settings = ProxySettings(all: try ProxyServer(url: proxy))
                if let list = environment["no_proxy"] ?? environment["NO_PROXY"] {
                    settings.bypass = ProxySettings.parseList(list)
                }
            } else {
                settings = try ProxySettings.fromEnvironment(environment)
            }
        } catch let error as FerryError {
            throw CLIFailure((proxy == nil ? "" : "--proxy: ") + error.message, status: .usage)
        }
        if let noProxy { settings.bypass = ProxySettings.parseList(noProxy) }
        if let proxyUser {
            guard settings.http != nil || settings.https != nil else {
                throw CLIFailure("--proxy-user needs a proxy (--proxy, or http_proxy and the like)", status: .usage)
            }
            let parts = proxyUser.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let user = String(parts[0])
            let password = parts.count > 1 ? String(parts[1]) : ""
            settings.http?.username = user
            settings.http?.password = password
            settings.https?.username = user
            settings.https?.password = password
        }
        return settings
    }

    private static func addResolve(_ entry: String, to options: inout TransportOptions) throws {
        let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, let port = Int(parts[1]), (1...65535).contains(port) else {
            throw CLIFailure("--resolve takes HOST:PORT:ADDR, e.g. example.com:443:127.0.0.1, not '\(entry)'", status: .usage)
        }
        var address = String(parts[2].split(separator: ",").first ?? "")
        if address.hasPrefix("["), address.hasSuffix("]") { address = String(address.dropFirst().dropLast()) }
        guard !address.isEmpty else {
            throw CLIFailure("--resolve \(entry) names no address", status: .usage)
        }
        options.resolve["\(parts[0].lowercased()):\(port)"] = address
    }
}
