import ArgumentParser
import FerryCore
import FerryEngine
import Foundation
import NIOCore

/// Options of the commands that move bytes themselves (`get`, `put`), curl's names where curl has one.
struct TransferOptions: ParsableArguments {
    @OptionGroup var connection: ConnectionOptions

    @Option(
        name: [.customShort("H"), .customLong("header")],
        help: ArgumentHelp("A request header (repeatable).", valueName: "'Name: value'")
    )
    var headers: [String] = []

    @Option(
        name: [.customShort("A"), .customLong("user-agent")],
        help: ArgumentHelp("The User-Agent to send instead of ferry/VERSION ('' sends none), as curl.", valueName: "name")
    )
    var userAgent: String?

    /// `-H`'s lines, with `-A`'s User-Agent unless `-H` names one (as with curl, `-H` wins).
    var headerLines: [String] { CLI.headerLines(headers, userAgent: userAgent) }

    @Option(
        name: .customLong("limit-rate"),
        help: ArgumentHelp("At most this many bytes a second: 500K, 2M, 1G (powers of 1024).", valueName: "rate")
    )
    var limitRate: String?

    @Flag(name: .customLong("http1.1"), help: "Use HTTP/1.1 only.")
    var http11 = false

    @Flag(name: .customLong("http2"), help: "Use HTTP/2 over TLS.")
    var http2 = false

    @Flag(name: .customLong("http3-only"), help: "Use HTTP/3 over QUIC only, as curl (https URLs; no proxy).")
    var http3Only = false

    @Option(
        name: .customLong("alt-svc"),
        help: ArgumentHelp("Keep servers' Alt-Svc answers in FILE (curl's format) and use HTTP/3 where one offers it, as curl.", valueName: "FILE")
    )
    var altSvc: String?

    @Flag(name: .customLong("http3"), help: "Try HTTP/3 first, TCP when QUIC has not connected within 250 ms (as curl).")
    var http3 = false

    @Option(
        name: [.customShort("u"), .customLong("user")],
        help: ArgumentHelp("The server's user name and password, sent with Basic authentication.", valueName: "user:password")
    )
    var user: String?

    @Flag(name: .customLong("netrc"), help: "Take the server's user name and password from ~/.netrc ($NETRC), as curl.")
    var netrc = false

    @Option(
        name: .customLong("netrc-file"),
        help: ArgumentHelp("Take the server's user name and password from this .netrc file.", valueName: "file")
    )
    var netrcFile: String?

    @Option(
        name: [.customShort("D"), .customLong("dump-header")],
        help: ArgumentHelp("Write every response head (redirects too) to this file, - for stdout, as curl.", valueName: "file")
    )
    var dumpHeader: String?

    @Option(
        name: .customLong("cache"),
        help: ArgumentHelp(
            "Keep GET responses in this directory as an HTTP cache (RFC 9111, up to 1 GiB, 64 MiB per response): a fresh one is served without a request, a stale one is revalidated.",
            valueName: "dir"
        )
    )
    var cache: String?

    @Option(
        name: [.customShort("b"), .customLong("cookie")],
        help: ArgumentHelp(
            "Cookies to send: 'name=value; name2=value2', or a cookie file (Netscape format, as curl -c and wget write) whose cookies go where they match. Either way, cookies the server sets are sent on its redirects.",
            valueName: "data|file"
        )
    )
    var cookie: String?

    @Option(
        name: [.customShort("c"), .customLong("cookie-jar")],
        help: ArgumentHelp(
            "Write every cookie to this file when done (Netscape format, as curl -b and wget --load-cookies read).",
            valueName: "file"
        )
    )
    var cookieJar: String?

    @Flag(
        name: [.customShort("v"), .customLong("verbose")],
        help: "Show connections, TLS, and request and response heads on stderr."
    )
    var verbose = false

    @Flag(
        name: [.short, .long, .customShort("s"), .customLong("silent")],
        help: "No progress and no notes; errors only (-s and --silent as curl)."
    )
    var quiet = false

    @Flag(
        name: [.customShort("S"), .customLong("show-error")],
        help: "Show errors, also with -s, as curl -sS (ferry always shows them; accepted for curl's -fsSL habit)."
    )
    var showError = false

    @Option(
        name: [.customShort("e"), .customLong("referer")],
        help: ArgumentHelp("Send this Referer, as curl (a -H Referer wins).", valueName: "url")
    )
    var referer: String?

    @Option(
        name: .customLong("max-time"),
        help: ArgumentHelp(
            "Seconds the whole transfer may take, as curl; past it the transfer fails (a download keeps what it has for -C).",
            valueName: "seconds"
        )
    )
    var maxTime: Double?

    /// `failure` in the command line's words: the engine's resource timeout is this command's
    /// `--max-time` (issue 41: "took longer than its resource timeout" named no flag a user gave).
    func explained(_ failure: CLIFailure) -> CLIFailure {
        guard let maxTime, failure.kind == "timedOut", failure.message.contains(FerryError.resourceTimeoutMessage) else {
            return failure
        }
        let seconds = maxTime == maxTime.rounded() && maxTime < 1e15 ? String(Int64(maxTime)) : String(maxTime)
        var explained = failure
        explained.message = failure.message.replacingOccurrences(
            of: FerryError.resourceTimeoutMessage,
            with: "the transfer took longer than --max-time \(seconds) (seconds) allows"
        )
        return explained
    }

    /// `job`, failing in the command line's words (``explained(_:)``).
    func explaining<Value: Sendable>(
        _ job: @escaping @Sendable () async throws -> Value
    ) -> @Sendable () async throws -> Value {
        let options = self
        return {
            do { return try await job() } catch let failure as CLIFailure { throw options.explained(failure) }
        }
    }

    /// When the transfer must be over: `--max-time` from now, else never.
    func deadline() -> NIODeadline {
        guard let maxTime else { return .distantFuture }
        return .now() + .nanoseconds(Int64(min(maxTime, 1e9) * 1e9))
    }

    /// Throws what is wrong with `--max-time` or `-e`.
    func validate() throws {
        if let maxTime, !(maxTime > 0) {
            throw ValidationError("--max-time takes a number of seconds above 0, not \(maxTime)")
        }
        // By bytes: "\r\n" is one Character, equal to neither "\r" nor "\n".
        if let referer, referer.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
            throw ValidationError("-e/--referer cannot hold a line break or NUL")
        }
    }

    /// The parsed rate limit.
    func rateLimit() throws -> Int64? {
        guard let limitRate else { return nil }
        guard let value = ByteFormat.parseRate(limitRate) else {
            throw CLIFailure("--limit-rate takes a rate such as 500K, 2M or 1G, not '\(limitRate)'", status: .usage)
        }
        return value
    }

    /// The transport settings these flags ask for.
    func transportOptions() throws -> TransportOptions {
        var options = try connection.transportOptions()
        if [http11, http2, http3Only, http3].filter({ $0 }).count > 1 {
            throw CLIFailure("--http1.1, --http2, --http3 and --http3-only contradict each other; give one", status: .usage)
        }
        if http3 { options.httpVersion = .http3 }
        if http11 { options.httpVersion = .http1Only }
        if http2 { options.httpVersion = .http2 }
        if http3Only { options.httpVersion = .http3Only }
        if let altSvc {
            do {
                options.altServices = try AltServiceStore(file: CLI.absolute(altSvc))
            } catch {
                throw CLIFailure(error.message, status: .localFile)
            }
        }
        return options
    }

    /// What a background task records of these flags (and of this shell's proxy variables).
    /// `-b FILE`, `-b ""` and `-c FILE` become a cookie store of this command's own in ferryd, loaded
    /// from `-b`'s file; `-c`'s jar is written when each task's run ends.
    func connectionSettings() throws -> ConnectionSettings {
        let options = try transportOptions()
        var settings: ConnectionSettings
        do {
            settings = try options.connectionSettings(environment: ProcessInfo.processInfo.environment)
        } catch let error as FerryError {
            throw CLIFailure(error.message, status: .usage)
        }
        // SSL_CERT_FILE and SSL_CERT_DIR as the foreground reads them: their roots beyond the system's
        // travel with the task, as --cacert's contents do (ferryd does not have this shell's variables).
        do {
            settings.tls.additionalTrustRootsPEM += try EnvironmentTrustRoots.additions(ProcessInfo.processInfo.environment)
        } catch let error as FerryError {
            throw CLIFailure(error.message, status: .localFile)
        }
        if cookieFile != nil || cookieJar != nil {
            let load = cookieFile.flatMap { $0.isEmpty ? nil : CLI.absolute($0) }
            if let load, !FileManager.default.isReadableFile(atPath: load) {
                throw CLIFailure("cannot read the cookie file \(cookieFile ?? load)", status: .localFile)
            }
            settings.cookies = CookieSettings(load: load, jar: cookieJar.map(CLI.absolute), scope: UUID().uuidString)
        }
        return settings
    }

    /// A transport for this command's transfers, allowing `connectionsPerHost` connections to one
    /// origin at once, with a cookie store when `-b FILE` or `-c` asks for one.
    func makeTransport(connectionsPerHost: Int = 6) throws -> SessionTransport {
        var options = try transportOptions()
        options.maximumConnectionsPerHost = connectionsPerHost
        if http3, !quiet, let proxies = options.proxies, proxies.http != nil || proxies.https != nil {
            // Said once for the command: QUIC is UDP, and an HTTP or SOCKS5 proxy carries TCP.
            CLI.note("ferry: --http3: HTTP/3 (QUIC, over UDP) does not go through a proxy; the requests go over TCP through it")
        }
        do {
            var base: any HTTPTransport = try StandardTransport(options: options)
            if verbose { base = VerboseTransport(base) }
            return SessionTransport(
                base,
                maximumConnectionsPerHost: connectionsPerHost,
                cookies: try cookieStore(),
                cache: responseCache()
            )
        } catch let error as FerryError {
            throw CLIFailure(error)
        }
    }

    /// What a command's transfers send through: `session`, under `-D`'s dump of every head delivered
    /// (above the cache, so a response served from it is dumped as a fetched one is).
    func delivering(_ session: SessionTransport) throws -> any HTTPTransport {
        guard let dumpHeader else { return session }
        return try HeaderDumpTransport(session, path: dumpHeader)
    }

    /// The credential for `url`: `-u`'s, else the .netrc entry for its host (`--netrc`, `--netrc-file`),
    /// else none (a user and password in the URL answer the server's challenge themselves).
    func credential(for url: URL) throws -> Credential? {
        if let user {
            guard let colon = user.firstIndex(of: ":") else {
                throw CLIFailure("-u takes user:password (ferry does not prompt for a password)", status: .usage)
            }
            return Credential(user: String(user[..<colon]), password: String(user[user.index(after: colon)...]))
        }
        guard netrc || netrcFile != nil else { return nil }
        let path = netrcFile.map(CLI.absolute) ?? Netrc.defaultPath(ProcessInfo.processInfo.environment)
        guard let path else { return nil }
        guard let text = UserNamedFile.text(of: path) else {
            // --netrc with no file is no error (curl's way); a file named with --netrc-file must exist.
            if netrcFile != nil { throw CLIFailure("cannot read the netrc file \(path)", status: .localFile) }
            return nil
        }
        return Netrc(text).credential(for: url.host ?? "")
    }

    /// `headers` completed for a request to `url`: `-b`'s cookie data as a Cookie field, and an
    /// Authorization from ``credential(for:)`` (Basic, sent at once as curl does), each unless `-H` gave
    /// one.
    func headers(_ headers: Headers, for url: URL) throws -> Headers {
        var headers = headers
        if let cookieData, headers["cookie"] == nil { headers.add(name: "Cookie", value: cookieData) }
        if let referer, !referer.isEmpty, headers["referer"] == nil { headers.add(name: "Referer", value: referer) }
        if headers["authorization"] == nil, let credential = try credential(for: url) {
            let token = Data("\(credential.user):\(credential.password)".utf8).base64EncodedString()
            headers.add(name: "Authorization", value: "Basic " + token)
        }
        return headers
    }

    /// The HTTP cache `--cache DIR` asks for: on disk only (one command reads each entry once), 1 GiB,
    /// entries up to 64 MiB (a body is held in memory until it is stored).
    func responseCache() -> ResponseCache? {
        guard let cache else { return nil }
        return ResponseCache(
            memoryCapacity: 0,
            diskCapacity: 1 << 30,
            directory: CLI.absolute(cache),
            maximumEntrySize: 64 << 20
        )
    }

    /// How this command's GETs use the cache: by the protocol's rules with `--cache`, not at all without.
    var cacheUse: CacheUse? { cache == nil ? nil : CacheUse(policy: .useProtocolCachePolicy) }

    /// `-b`'s value when it is cookie data (it holds `=`), as curl tells data from a file name.
    var cookieData: String? {
        guard let cookie, cookie.contains("=") else { return nil }
        return cookie
    }

    /// `-b`'s value when it names a cookie file (`""`: cookies on, no file).
    var cookieFile: String? { cookieData == nil ? cookie : nil }

    /// The cookie store `-b FILE` or `-c` asks for (`-b ""` turns cookies on with none), loaded with the
    /// file's cookies; nil without either.
    func cookieStore() throws -> CookieStore? {
        guard cookieFile != nil || cookieJar != nil else { return nil }
        let store = CookieStore()
        if let cookieFile, !cookieFile.isEmpty {
            do {
                try store.load(netscapeFile: CLI.absolute(cookieFile))
            } catch {
                throw CLIFailure("cannot read the cookie file \(cookieFile)", status: .localFile)
            }
        }
        return store
    }

    /// Writes the store's cookies to `-c`'s file, if asked (session cookies included, as curl does).
    func saveCookies(_ transport: SessionTransport) throws {
        guard let cookieJar, let store = transport.cookies else { return }
        do {
            try store.write(netscapeFile: CLI.absolute(cookieJar))
        } catch let error as FerryError {
            throw CLIFailure(error.message, status: .localFile)
        }
    }

    /// `HOST:PORT:ADDR` (ADDR may be bracketed IPv6; of several comma-separated addresses the first).
    static func read(_ path: String, _ what: String) throws -> String {
        guard let text = UserNamedFile.text(of: path) else {
            throw CLIFailure("cannot read \(what) \(path)", status: .localFile)
        }
        return text
    }
}
