import ArgumentParser
import Ferry
import FerryEngine
import Foundation
import NIOCore
import Synchronization

/// `ferry get URL...`: downloads in the foreground with progress, or hands them to ferryd
/// (`--background`).
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Download URLs (in the foreground, or handed to ferryd with --background).",
        discussion: """
            Without -o, files are saved under the last part of the URL you gave in the current directory or \
            --dir; with -J under the server's Content-Disposition name, which never replaces a file \
            (NAME.1 instead). While a download runs, its bytes are in NAME.ferry-part; an \
            interrupted download is continued with -C. Exit status: 0 when every file is complete (and \
            verified), else the first failure's (docs/CLI.md).
            """
    )

    @Argument(help: "http or https URLs.")
    var urls: [String] = []

    @Option(
        name: .customLong("input-file"),
        help: ArgumentHelp(
            "Download the URLs this file lists, one a line, an indented out=NAME under a URL naming its file (aria2's format; - reads stdin).",
            valueName: "file"
        )
    )
    var inputFile: String?

    @Flag(name: [.customShort("Z"), .customLong("parallel")], help: "Download the URLs at once, as curl -Z (at most --parallel-max).")
    var parallel = false

    @Option(name: .customLong("parallel-max"), help: ArgumentHelp("With -Z: at most this many at once (default 50, as curl).", valueName: "n"))
    var parallelMax = 50

    @Option(
        name: [.customShort("j"), .customLong("max-concurrent-downloads")],
        help: ArgumentHelp("Download at most this many at once, as aria2c -j (implies -Z).", valueName: "n")
    )
    var concurrentDownloads: Int?

    /// How many downloads run at once.
    var parallelism: Int { concurrentDownloads ?? (parallel ? parallelMax : 1) }

    @Option(
        name: [.short, .customLong("output"), .customLong("out")],
        help: ArgumentHelp("Save to this file (one URL only; --output as curl, --out as aria2c).", valueName: "file")
    )
    var output: String?

    @Flag(name: [.customShort("O"), .customLong("remote-name")], help: "Save under the remote name (the default).")
    var remoteName = false

    @Flag(
        name: [.customShort("J"), .customLong("remote-header-name")],
        help: "Name the file from the server's Content-Disposition, as curl -OJ (without -J the name comes from the URL you gave); an existing file is never replaced: NAME.1, NAME.2, ... instead."
    )
    var remoteHeaderName = false

    @Flag(
        name: [.customShort("#"), .customLong("progress-bar")],
        help: "Show progress as a bar, as curl -# (ferry always does on a terminal; accepted for curl's habit)."
    )
    var progressBar = false

    @Flag(
        name: .customLong("create-dirs"),
        help: "Create the missing directories of -o, --dir and out= (mode 0750, as curl)."
    )
    var createDirs = false

    @Flag(
        name: [.customShort("R"), .customLong("remote-time")],
        help: "Give the saved file the server's Last-Modified time, as curl -R."
    )
    var remoteTime = false

    @Flag(
        name: [.customShort("L"), .customLong("location")],
        help: "Follow redirects, as curl -L (ferry always does; accepted for curl's habit)."
    )
    var location = false

    @Option(
        name: .customLong("max-redirs"),
        help: ArgumentHelp("Follow at most this many redirects, as curl (default 16).", valueName: "n")
    )
    var maxRedirects: Int?

    @Option(
        name: [.customShort("X"), .customLong("request")],
        help: ArgumentHelp("The method, as curl's -X (default GET; POST with -d).", valueName: "method")
    )
    var method: String?

    @Option(
        name: [.customShort("d"), .customLong("data")],
        help: ArgumentHelp(
            "Send this body (POST unless -X), as curl: repeated ones are joined with &; @FILE reads a file without its line breaks.",
            valueName: "data"
        )
    )
    var data: [String] = []

    @Option(
        name: .customLong("data-binary"),
        help: ArgumentHelp("Send this body as it is, as curl; @FILE reads a file byte for byte.", valueName: "data")
    )
    var dataBinary: [String] = []

    @Option(
        name: [.customShort("r"), .customLong("range")],
        // (Unconditional: `-r -500`, the last 500 bytes, looks like an option.)
        parsing: .unconditional,
        help: ArgumentHelp("Only these bytes, as curl: 0-499, 500-, -500 (the last 500), or several with commas.", valueName: "range")
    )
    var range: String?

    @Option(
        name: .customLong("speed-limit"),
        help: ArgumentHelp("Fail a download slower than this (bytes a second; K, M as --limit-rate) for --speed-time seconds, as curl. With --background the try fails and ferryd tries again (--tries).", valueName: "rate")
    )
    var speedLimit: String?

    @Option(
        name: .customLong("speed-time"),
        help: ArgumentHelp("Seconds a download may stay under --speed-limit (default 30; with it alone the limit is 1 byte a second), as curl.", valueName: "seconds")
    )
    var speedTime: Double?

    /// The throughput floor `--speed-limit` and `--speed-time` ask for, as curl reads them.
    var speedFloor: SpeedFloor? {
        guard speedLimit != nil || speedTime != nil else { return nil }
        let rate = speedLimit.flatMap(ByteFormat.parseRate) ?? 1
        return SpeedFloor(bytesPerSecond: rate, seconds: speedTime ?? 30)
    }

    @Option(
        name: .customLong("tries"),
        help: ArgumentHelp("wget's --tries: this many tries in all (the same as --retry N-1).", valueName: "n")
    )
    var tries: Int?

    @Flag(
        name: [.customShort("I"), .customLong("head")],
        help: "Send HEAD and print the response heads (redirects too) on stdout, as curl -sIL; no file is written."
    )
    var head = false

    @Option(
        name: [.customShort("w"), .customLong("write-out")],
        help: ArgumentHelp(
            "After each download print this format to stdout, as curl: %{http_code}, %{time_total}, %{json}, … (docs/CLI.md); @FILE reads it from a file.",
            valueName: "format"
        )
    )
    var writeOut: String?

    @Flag(
        name: .customLong("fail-with-body"),
        help: "On an HTTP error status, save its body to the file all the same, and fail (as curl)."
    )
    var failWithBody = false

    @Flag(
        name: [.customShort("f"), .customLong("fail")],
        help: "Fail on an HTTP error status, as curl -f (ferry always does: nothing is saved; accepted for curl's habit)."
    )
    var fail = false

    @Flag(
        name: .customLong("compressed"),
        help: "Ask for a gzip or deflate body and save it decoded, as curl (one connection; it cannot be continued)."
    )
    var compressed = false

    @Flag(
        name: [.customShort("i"), .customLong("include")],
        help: "Write the response heads (redirects too) into the file before the body, as curl."
    )
    var include = false

    @Option(name: .long, help: ArgumentHelp("Save into this directory under the remote names.", valueName: "directory"))
    var dir: String?

    @Option(
        name: [.customShort("P"), .customLong("directory-prefix")],
        help: ArgumentHelp("Save into this directory, made when missing, as wget -P (--dir with --create-dirs).", valueName: "directory")
    )
    var directoryPrefix: String?

    @Flag(
        name: [.customShort("C"), .customLong("continue")],
        help: "Continue an interrupted download (checked with If-Range)."
    )
    var resume = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Try again this many times after a network error or a 408, 429, 500, 502, 503 or 504 (Retry-After honoured). With --background: ferryd's tries, after network errors and busy servers (429, 503), with its backoff.",
            valueName: "n"
        )
    )
    var retry = 0

    @Option(
        name: .customLong("retry-delay"),
        help: ArgumentHelp(
            "Wait this many seconds before each --retry try instead of the doubling backoff (a Retry-After still decides), as curl; 0 keeps the backoff.",
            valueName: "seconds"
        )
    )
    var retryDelay: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Verify the file before success: sha256, sha384, sha512, sha1 or md5, then = and the hex digest.",
            valueName: "algorithm=hex"
        )
    )
    var checksum: String?

    @Option(
        name: [.customShort("x"), .customLong("connections")],
        help: ArgumentHelp(
            "Connections per download (1-32): a large file is fetched in segments over several at once.",
            valueName: "n"
        )
    )
    var connectionCount = "1"

    /// `-x`'s number (checked in ``validate()``).
    var connections: Int { Int(connectionCount) ?? 1 }

    @Flag(name: .long, help: "Hand the downloads to ferryd and return at once, printing task ids.")
    var background = false

    @OptionGroup var session: SessionOptions

    @Option(
        name: .customLong("on-complete"),
        help: ArgumentHelp(
            "With --background: a shell command ferryd runs when the session's tasks finish.",
            valueName: "command"
        )
    )
    var onComplete: String?

    @OptionGroup var transfer: TransferOptions
    @OptionGroup var policy: BackgroundPolicyOptions
    @OptionGroup var outputOptions: OutputOptions

    mutating func validate() throws {
        try policy.validate(background: background)
        if let directoryPrefix {
            // wget's -P: --dir, and the directory is made when it is missing, as wget makes it.
            if dir != nil { throw ValidationError("give --dir or -P/--directory-prefix, not both") }
            dir = directoryPrefix
            createDirs = true
        }
        if resume {
            // curl's `-C -` ("find the offset yourself") is what ferry's -C always does: the `-` is taken
            // as its value. curl's `-C OFFSET` has no equal (a file's size alone is never trusted).
            urls.removeAll { $0 == "-" }
            if let offset = urls.first(where: { !$0.isEmpty && $0.allSatisfy(\.isNumber) }) {
                throw ValidationError(
                    "-C takes no offset (\(offset)): ferry continues from the part file's record, checked with If-Range; for bytes from an offset use -r \(offset)-"
                )
            }
        }
        if urls.isEmpty, inputFile == nil, let jar = transfer.cookieJar, CLI.isTransferURL(jar) {
            // wget's -c (continue) is curl's cookie jar here, and it took the URL as its file.
            throw ValidationError("-c is the cookie jar file (curl's), and it took '\(jar)': to continue a download as wget's -c does, use -C: ferry get -C URL")
        }
        guard !urls.isEmpty || inputFile != nil else { throw ValidationError("give at least one URL (or --input-file FILE)") }
        if include, let notURL = urls.first(where: { !CLI.isTransferURL($0) }) {
            // wget's and aria2's -i FILE: here -i is curl's --include, and FILE became a URL.
            throw ValidationError("'\(notURL)' is not a URL: -i is curl's --include here; for a file of URLs (wget's and aria2's -i) use --input-file \(notURL)")
        }
        guard (1...1000).contains(parallelMax) else { throw ValidationError("--parallel-max takes 1 to 1000") }
        if let concurrentDownloads, !(1...1000).contains(concurrentDownloads) { throw ValidationError("-j takes 1 to 1000") }
        if parallelism > 1 {
            if output == "-" { throw ValidationError("-o - with -Z would mix the bodies on stdout; download them one by one") }
            if include || transfer.dumpHeader == "-" { throw ValidationError("-Z with -i or -D - would mix the heads; download them one by one") }
        }
        if inputFile != nil, output != nil { throw ValidationError("--input-file names several files: use --dir, and out=NAME in the file") }
        if let maxRedirects, maxRedirects < 0 { throw ValidationError("--max-redirs takes 0 or more") }
        if let method, method.isEmpty || !method.allSatisfy({ $0.isLetter || $0 == "-" }) {
            throw ValidationError("-X takes a method name such as POST or DELETE, not '\(method)'")
        }
        if let range {
            let spans = range.split(separator: ",", omittingEmptySubsequences: false)
            let valid = spans.allSatisfy { span in
                let parts = span.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, !(parts[0].isEmpty && parts[1].isEmpty) else { return false }
                return parts.allSatisfy { $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
                    && (parts[0].isEmpty || parts[1].isEmpty || Int(parts[0])! <= Int(parts[1])!)
            }
            guard valid else { throw ValidationError("-r takes a byte range such as 0-499, 500- or -500 (several with commas), not '\(range)'") }
            if resume { throw ValidationError("-r cannot be continued with -C: the file holds a part, not the start of the whole") }
            if connections > 1 { throw ValidationError("-r asks for one range over one connection: -x \(connections) does not go with it") }
            if checksum != nil { throw ValidationError("--checksum checks a whole file; -r saves a part") }
        }
        if let speedLimit, ByteFormat.parseRate(speedLimit) == nil {
            throw ValidationError("--speed-limit takes a rate such as 1000, 100K or 1M, not '\(speedLimit)'")
        }
        if let speedTime, !(speedTime >= 1) { throw ValidationError("--speed-time takes 1 or more seconds") }
        if failWithBody, output == "-" || background {
            throw ValidationError("--fail-with-body saves an error page to a file: not with -o - or --background")
        }
        if let tries {
            guard tries >= 1 else { throw ValidationError("--tries takes 1 or more") }
            if retry > 0 { throw ValidationError("give --tries or --retry, not both") }
        }
        if background {
            do {
                try backgroundLimits?.validate()
            } catch let error as FerryError {
                throw ValidationError("with --background, \(error.message) (--max-redirs up to \(TaskLimits.redirectLimit), --tries up to \(TaskLimits.attemptLimit))")
            }
        }
        if !data.isEmpty || !dataBinary.isEmpty {
            if resume { throw ValidationError("-d cannot be continued with -C: a range request would not send the body again") }
            if connections > 1 { throw ValidationError("-d asks once, over one connection: -x \(connections) does not go with it") }
        }
        if head {
            let others: [(Bool, String)] = [
                (background, "--background"), (output != nil || dir != nil, "-o or --dir"), (resume, "-C"),
                (checksum != nil, "--checksum"), (connections > 1, "-x"), (include, "-i"), (writeOut != nil, "-w"),
                (!data.isEmpty || !dataBinary.isEmpty, "-d"),
            ]
            if let (_, name) = others.first(where: { $0.0 }) {
                throw ValidationError("-I prints the response heads on stdout and saves nothing: \(name) does not go with it")
            }
        }
        if output == "-" {
            if resume { throw ValidationError("-o - writes to stdout, which cannot be continued with -C") }
            if checksum != nil { throw ValidationError("-o - writes to stdout: --checksum needs a file to read back") }
            if connections > 1 { throw ValidationError("-o - writes to stdout, in order: one connection, not -x \(connections)") }
            if include { throw ValidationError("-o - with -i: use -D - to see the heads on stdout before the body") }
            if background { throw ValidationError("-o - writes to this command's stdout; ferryd cannot (give a file with -o)") }
        }
        if output != nil, remoteName { throw ValidationError("-o cannot be combined with -O: -o names the file, -O takes the server's name") }
        if let output, dir != nil, output == "-" || output.hasPrefix("/") {
            throw ValidationError("--dir holds files named relative to it: -o \(output) does not go with it")
        }
        if output != nil, remoteHeaderName { throw ValidationError("-J names the file from the server's answer: not with -o, which names it") }
        if let retryDelay, !(retryDelay >= 0 && retryDelay <= 3600) { throw ValidationError("--retry-delay takes 0 to 3600 seconds") }
        if remoteTime, output == "-" { throw ValidationError("-R sets a file's time: -o - writes to stdout") }
        guard retry >= 0 else { throw ValidationError("--retry must be 0 or more") }
        guard let count = Int(connectionCount) else {
            if connectionCount.contains("://") || connectionCount.contains(":") {
                throw ValidationError(
                    "-x is a number of connections (1-\(Request.maximumConnections)), as with aria2c, not a proxy; give a proxy with --proxy \(connectionCount)"
                )
            }
            throw ValidationError("-x/--connections takes a number from 1 to \(Request.maximumConnections), not '\(connectionCount)'")
        }
        guard (1...Request.maximumConnections).contains(count) else {
            throw ValidationError("--connections takes 1 to \(Request.maximumConnections)")
        }
        if let checksum, ContentDigest(checksum) == nil {
            throw ValidationError(
                "--checksum takes an algorithm (sha256, sha384, sha512, sha1, md5), =, and its hex digest"
            )
        }
        if include, resume {
            throw ValidationError("-i cannot be continued with -C: the file starts with the heads, not the server's bytes")
        }
        if compressed, resume {
            throw ValidationError("--compressed cannot be continued with -C: a decoded file's offsets are not the server's")
        }
        if background {
            if include {
                throw ValidationError("-i is for foreground downloads: ferryd delivers the body as sent; see the head with ferry ls --json")
            }
            if transfer.dumpHeader != nil {
                throw ValidationError("-D is for foreground downloads: ferryd makes the requests; see the response head with ferry ls --json")
            }
            if writeOut != nil {
                throw ValidationError("-w is for foreground downloads: a background one ends later; see its figures with ferry ls --json")
            }
            if transfer.cache != nil {
                throw ValidationError(
                    "--cache is for foreground downloads: background downloads do not use the HTTP cache, as URLSession's do not"
                )
            }
            if transfer.verbose {
                throw ValidationError("-v is for foreground downloads; follow a background one with ferry watch")
            }
            if retryDelay != nil {
                throw ValidationError("--retry-delay is for foreground downloads: ferryd waits by its own backoff between tries (--tries sets how many)")
            }
            if remoteHeaderName {
                throw ValidationError("-J is for foreground downloads: ferryd names the file when the task is created, before any answer; give the name with -o")
            }
            if remoteTime {
                throw ValidationError("-R is for foreground downloads: ferryd delivers the file as it arrived; the server's Last-Modified is in ferry ls --json")
            }
        } else if onComplete != nil {
            throw ValidationError("--on-complete needs --background")
        }
    }

    /// The checks that count URLs. They run after the parser has reported options it does not know:
    /// an unknown option's value lands among the URLs (`-Z ua URL -o x`), and the error must name the
    /// option, not the count.
    private func checkURLCount() throws {
        guard inputFile == nil else { return }
        if output != nil, urls.count > 1 { throw CLIFailure("-o takes one URL; use --dir for several", status: .usage) }
        if checksum != nil, urls.count > 1 { throw CLIFailure("--checksum is for one URL", status: .usage) }
    }

    /// `-d` and `--data-binary` joined with `&` as curl joins them (the `-d` ones first), or nil.
    /// `-d @FILE` loses the file's CR and LF, as curl's; `--data-binary @FILE` keeps every byte.
    private func requestBody() throws -> ByteBuffer? {
        guard !data.isEmpty || !dataBinary.isEmpty else { return nil }
        func read(_ value: String, stripsLineBreaks: Bool) throws -> [UInt8] {
            guard value.hasPrefix("@") else { return Array(value.utf8) }
            let file = String(value.dropFirst())
            let contents = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: CLI.absolute(file))
            guard let contents else { throw CLIFailure("cannot read \(file) to send it", status: .localFile) }
            return stripsLineBreaks ? contents.filter { $0 != 0x0A && $0 != 0x0D } : Array(contents)
        }
        let parts = try data.map { try read($0, stripsLineBreaks: true) } + dataBinary.map { try read($0, stripsLineBreaks: false) }
        return ByteBuffer(bytes: Array(parts.joined(separator: [UInt8(ascii: "&")])))
    }

    /// `-w`'s format, read from a file for `@FILE` (`@-`: stdin).
    private func writeOutFormat() throws -> WriteOut? {
        guard let writeOut else { return nil }
        guard writeOut.hasPrefix("@") else { return try WriteOut(writeOut) }
        let file = String(writeOut.dropFirst())
        let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: CLI.absolute(file))
        guard let data else { throw CLIFailure("-w: cannot read the format from \(file)", status: .localFile) }
        return try WriteOut(String(decoding: data, as: UTF8.self))
    }

    /// The downloads asked for: the URLs given, then those of `--input-file`.
    private func items() throws -> [GetItem] {
        var items = try urls.map { GetItem(url: try CLI.url($0), name: nil) }
        if let inputFile {
            let data = inputFile == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: CLI.absolute(inputFile))
            guard let data else { throw CLIFailure("cannot read the input file \(inputFile)", status: .localFile) }
            let entries = try InputFile.parse(String(decoding: data, as: UTF8.self))
            guard !entries.isEmpty || !items.isEmpty else { throw CLIFailure("the input file \(inputFile) lists no URL", status: .usage) }
            items += try entries.map { GetItem(url: try CLI.url($0.url), name: $0.name) }
        }
        return items
    }

    func run() async throws {
        try checkURLCount()
        let items = try items()
        if createDirs, !head { try makeDirectories(for: items) }
        let headers = try CLI.headers(transfer.headerLines)
        if head {
            try await heads(items.map(\.url), headers: headers)
        } else if background {
            try await submit(items, headers: headers)
        } else {
            try await download(items, headers: headers)
        }
    }

    /// `--create-dirs`: the directories the files go into, made when missing, each with mode 0750 (less
    /// the umask), as curl makes them.
    private func makeDirectories(for items: [GetItem]) throws {
        var directories: [String] = []
        for item in items {
            switch target(for: item) {
            case .file(let path) where path != "-": directories.append((CLI.absolute(path) as NSString).deletingLastPathComponent)
            case .directory(let path): directories.append(CLI.absolute(path))
            case .file: break
            }
        }
        // mkdir one level at a time rather than FileManager.createDirectory, which chmods each directory
        // to its mode and so ignores the umask (curl's 0750 is less the umask).
        for directory in Set(directories) {
            var made = ""
            for component in directory.split(separator: "/") {
                made += "/" + component
                // Made now, or there already (a file there fails the download with its own message).
                if mkdir(made, 0o750) == 0 || errno == EEXIST { continue }
                throw CLIFailure("--create-dirs: cannot create \(made): \(String(cString: strerror(errno)))", status: .localFile)
            }
        }
    }

    private func target(for item: GetItem) -> ForegroundDownload.Target {
        // -o in --dir: the name within it, as aria2c's --out in --dir and curl's -o in --output-dir.
        if let output { return .file(dir.map { ($0 as NSString).appendingPathComponent(output) } ?? output) }
        // An input file's out=NAME: that name in --dir (or here).
        if let name = item.name { return .file(((dir ?? ".") as NSString).appendingPathComponent(name)) }
        return .directory(dir ?? ".")
    }

    /// `-I`: the heads of each URL on stdout; the status is the first failure's.
    private func heads(_ urls: [URL], headers: Headers) async throws {
        let transport = try transfer.makeTransport(connectionsPerHost: 6)
        var firstFailure: CLIFailure?
        for url in urls {
            var job = HeadRequest(url: url, headers: try transfer.headers(headers, for: url), transport: transport)
            job.deadline = transfer.deadline()
            job.maximumRedirects = maxRedirects
            do {
                _ = try await job.run()
            } catch let failure as CLIFailure {
                if firstFailure == nil { firstFailure = failure }
                if urls.count > 1 { Console.errorLine(failure.message) }
            }
        }
        try await close(transport)
        try Self.end(firstFailure, of: urls.count)
    }

    /// Writes `-c`'s cookie jar and closes the transport's connections (a jar that cannot be written
    /// fails the command, after the connections are closed).
    private func close(_ transport: SessionTransport) async throws {
        let saved = Result { try transfer.saveCookies(transport) }
        try? await transport.shutdown()
        try saved.get()
    }

    /// Ends a command of `count` transfers whose first failure was `failure`: with several, each was
    /// printed as it happened and only the status remains; with one, its message too.
    private static func end(_ failure: CLIFailure?, of count: Int) throws {
        guard let failure else { return }
        if count > 1 { throw ExitCode(failure.status.rawValue) }
        throw failure
    }

    private func download(_ items: [GetItem], headers: Headers) async throws {
        // A --dir that is not there is said once, not once for each URL.
        if let dir, items.count > 1 { try ForegroundDownload.checkWritableDirectory(CLI.absolute(dir)) }
        let transport = try transfer.makeTransport(connectionsPerHost: max(6, connections))
        let limit = try transfer.rateLimit()
        let interruption = Interruption()
        let format = try writeOutFormat()
        let body = try requestBody()
        let verb = (method ?? (body == nil ? "GET" : "POST")).uppercased()
        let quiet = transfer.quiet || outputOptions.json
        let board = parallelism > 1 ? ProgressBoard(quiet: quiet) : nil

        // One download's work, ready to run.
        func job(_ item: GetItem) throws -> @Sendable () async throws -> ForegroundDownload.Report {
            let url = item.url
            let requestHeaders = try downloadHeaders(headers, for: url, hasBody: body != nil)
            if output == "-" {
                var job = StandardOutputDownload(url: url, headers: requestHeaders, quiet: quiet, transport: transport, limit: limit)
                job.deadline = transfer.deadline()
                job.maximumRedirects = maxRedirects
                job.method = verb
                job.requestBody = body
                job.decodesContent = compressed
                job.cache = transfer.cacheUse
                job.board = board
                job.speedFloor = speedFloor
                let finalJob = job
                return { try await finalJob.run() }
            }
            var job = ForegroundDownload(
                url: url,
                headers: requestHeaders,
                target: target(for: item),
                resume: resume,
                retries: tries.map { $0 - 1 } ?? retry,
                checksum: checksum.flatMap(ContentDigest.init),
                connections: connections,
                limit: limit,
                quiet: quiet,
                transport: transport,
                interruption: interruption
            )
            job.decodesContent = compressed
            job.includesHeads = include
            job.cache = transfer.cacheUse
            job.deadline = transfer.deadline()
            job.maximumRedirects = maxRedirects
            job.method = verb
            job.requestBody = body
            job.board = board
            job.speedFloor = speedFloor
            job.keepsErrorBody = failWithBody
            job.retryDelay = retryDelay
            job.takesRemoteTime = remoteTime
            job.takesServerName = remoteHeaderName
            let finalJob = job
            return { try await finalJob.run() }
        }
        let jobs = try items.map(job)

        // Said as each download ends (-w's figures, a failure among several), kept for the end.
        let count = items.count
        let ended = Mutex<[(Int, Result<ForegroundDownload.Report, CLIFailure>)]>([])
        let report: @Sendable (Int, Result<ForegroundDownload.Report, CLIFailure>) -> Void = { index, outcome in
            switch outcome {
            case .success(let report):
                if let format, let values = report.writeOut { Console.out(format.render(values)) }
            case .failure(let failure):
                if count > 1, failure.status != .interrupted { Console.errorLine(failure.message) }
                if let format, let values = failure.writeOut { Console.out(format.render(values)) }
            }
            ended.withLock { $0.append((index, outcome)) }
        }
        let width = parallelism
        let work = Task {
            // At most `width` at once; the next starts when one ends (-Z, -j); one by one otherwise.
            await withTaskGroup(of: (Int, Result<ForegroundDownload.Report, CLIFailure>).self) { group in
                var next = 0
                func start() {
                    let index = next
                    let run = jobs[index]
                    next += 1
                    group.addTask {
                        do {
                            return (index, .success(try await run()))
                        } catch let failure as CLIFailure {
                            return (index, .failure(failure))
                        } catch {
                            return (index, .failure(CLIFailure("\(error)", status: .transferFailed)))
                        }
                    }
                }
                while next < jobs.count, next < width { start() }
                while let (index, outcome) = await group.next() {
                    report(index, outcome)
                    if case .failure(let failure) = outcome, failure.status == .interrupted {
                        group.cancelAll()
                        continue
                    }
                    if next < jobs.count, !Task.isCancelled { start() }
                }
            }
        }
        interruption.onSignal { work.cancel() }
        await work.value
        var results: [GetResult?] = Array(repeating: nil, count: items.count)
        var firstFailure: CLIFailure?
        for (index, outcome) in ended.withLock({ $0 }) {
            switch outcome {
            case .success(let report):
                results[index] = .saved(report)
            case .failure(let failure):
                // The status is the first failure's, in the order they happened.
                if firstFailure == nil { firstFailure = failure }
                results[index] = .failed(url: items[index].url.absoluteString, failure)
            }
        }
        board?.close()
        try await close(transport)
        let reported = results.compactMap { $0 }
        if outputOptions.json {
            // Every URL, failures included, in the order given.
            CLI.printJSON(reported)
        } else if !transfer.quiet {
            for case .saved(let report) in reported where report.path != "-" {
                let rate = report.seconds > 0 ? Double(report.bytes - report.resumedFrom) / report.seconds : 0
                CLI.note("saved \(report.path) (\(ByteFormat.bytes(report.bytes)), \(ByteFormat.rate(rate)))")
            }
        }
        try Self.end(firstFailure, of: items.count)
    }

    /// What a new file's mode would be for this process (0o666 less the umask).
    static var fileMode: Int { Int(DownloadDestination.newFileMode) }

    /// The header fields a download of `url` sends, in the foreground and handed to ferryd alike: `-H`
    /// and the transfer options' (`-A`, `-e`, `-u`, cookies), then `-r`'s Range, a body's Content-Type
    /// and `--compressed`'s Accept-Encoding, each unless `-H` gave it.
    private func downloadHeaders(_ given: Headers, for url: URL, hasBody: Bool) throws -> Headers {
        var headers = try transfer.headers(given, for: url)
        if let range, headers["range"] == nil { headers.add(name: "Range", value: "bytes=" + range) }
        if hasBody, headers["content-type"] == nil {
            headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        }
        if compressed, headers["accept-encoding"] == nil {
            headers.add(name: "Accept-Encoding", value: ContentDecoder.acceptEncoding)
        }
        return headers
    }

    /// `--max-redirs`, `--retry`/`--tries` and `--speed-limit`/`--speed-time` as a background task's own
    /// limits (nil when none is given: ferryd's apply).
    private var backgroundLimits: TaskLimits? {
        let limits = TaskLimits(
            maximumRedirects: maxRedirects,
            maximumAttempts: tries ?? (retry > 0 ? retry + 1 : nil),
            lowSpeedLimit: speedFloor?.bytesPerSecond,
            lowSpeedTime: speedFloor?.seconds
        )
        return limits == TaskLimits() ? nil : limits
    }

    private func submit(_ items: [GetItem], headers: Headers) async throws {
        // The connection settings travel with each task: its CA's contents, this shell's proxy.
        let connection = try transfer.connectionSettings()
        let limit = try transfer.rateLimit()
        let body = try requestBody().map { Data($0.readableBytesView) }
        if let body, body.count > ControlAPI.TaskCreation.maximumRequestBody {
            throw CLIFailure(
                "-d: ferryd takes a request body of at most \(ControlAPI.TaskCreation.maximumRequestBody / 1024) KiB, not \(body.count) bytes; download it in the foreground",
                status: .usage
            )
        }
        // -C: the records of the partial files handed to ferryd, removed once it has the tasks (it
        // records their progress itself from then on).
        var handedOver: [String] = []
        let creations = try items.map { item -> ControlAPI.TaskCreation in
            let url = item.url
            let destination: String
            switch target(for: item) {
            case .file(let file): destination = CLI.absolute(file)
            case .directory(let directory): destination = CLI.absolute(directory) + "/" + RemoteName.fromURL(url)
            }
            // ferryd would refuse it too, but as the daemon's error (5): a local file problem is 4.
            let folder = (destination as NSString).deletingLastPathComponent
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CLIFailure("cannot save into \(folder): it is not an existing directory", status: .localFile)
            }
            var request = Request(url: url)
            request.method = (method ?? (body == nil ? "GET" : "POST")).uppercased()
            request.headers = try downloadHeaders(headers, for: url, hasBody: body != nil)
            request.connections = connections
            request.expectedDigest = checksum.flatMap(ContentDigest.init)
            var creation = ControlAPI.TaskCreation(
                kind: .download,
                request: request,
                taskDescription: destination,
                destination: destination,
                destinationMode: Self.fileMode,
                connection: connection
            )
            try policy.apply(to: &creation, limit: limit)
            // --max-time: the task's resource timeout, counted by ferryd from its creation.
            if let maxTime = transfer.maxTime { creation.resourceTimeout = maxTime }
            creation.limits = backgroundLimits
            creation.requestBody = body
            if compressed { creation.decodesContent = true }
            if resume, let continued = try handOver(destination, url: url, headers: request.headers) {
                creation.resumeData = continued
                handedOver.append(ResumeRecord.path(beside: destination))
            }
            return creation
        }
        // Only now ferryd is asked (and started): what is wrong here was said without it.
        let client = try await CLI.daemon()
        let path = CLI.sessionPath(session.session)
        if let onComplete {
            try await CLI.perform(client, "PUT", "\(path)/launch", body: ControlAPI.LaunchRegistration(command: onComplete))
        }
        var created: [BackgroundTaskInfo] = []
        if creations.count == 1 {
            created.append(try await CLI.call(client, "POST", "\(path)/tasks", body: creations[0]))
        } else {
            // Several at once: the batch route, all or none per request.
            var start = 0
            while start < creations.count {
                let end = min(start + ControlAPI.TaskBatch.maximumCount, creations.count)
                let batch = ControlAPI.TaskBatch(tasks: Array(creations[start..<end]))
                let infos: [BackgroundTaskInfo] = try await CLI.call(client, "POST", "\(path)/tasks/batch", body: batch)
                created += infos
                start = end
            }
        }
        for record in handedOver { try? FileManager.default.removeItem(atPath: record) }
        if outputOptions.json {
            CLI.printJSON(created)
        } else {
            for info in created { Console.out("\(info.taskIdentifier)\n") }
        }
    }

    /// `-C --background`: the resume data that hands the partial file of an earlier `ferry get -C`
    /// (`destination.ferry-part` and its record) to ferryd, which goes on writing it in place and
    /// renames it to `destination` at the end; nil to start afresh (nothing to continue, or nothing
    /// that can be trusted: then the stale part and record are removed, as the foreground empties them).
    private func handOver(_ destination: String, url: URL, headers: Headers) throws -> ResumeData? {
        let target: DownloadDestination
        do {
            target = try DownloadDestination(inspecting: destination)
        } catch let error as FerryError {
            throw CLIFailure(error)
        }
        let (partial, record) = (target.partPath, ResumeRecord.path(beside: target.path))
        if target.isSpecial {
            if !transfer.quiet { CLI.note("\(destination) is not a regular file: -C cannot continue a download written to it") }
            return nil
        }
        guard FileManager.default.fileExists(atPath: partial) else {
            if !transfer.quiet { CLI.note("nothing to continue for \(url.absoluteString); ferryd downloads from the start") }
            return nil
        }
        // A foreground download still writing it keeps it: ferryd would write the same bytes.
        do {
            try PartFileLock.acquireNow(partial).release()
        } catch let error as FerryError {
            throw CLIFailure(error.message, status: .localFile)
        }
        let continuation = try ResumeRecord.continuation(
            partial: partial,
            record: record,
            url: url,
            headers: headers,
            connections: connections,
            expectedDigest: checksum.flatMap(ContentDigest.init),
            quiet: transfer.quiet
        )
        switch continuation {
        case .startOver:
            try? FileManager.default.removeItem(atPath: partial)
            try? FileManager.default.removeItem(atPath: record)
            return nil
        case .resume(let resumeData):
            return resumeData
        }
    }
}

/// One URL's entry in `get --json`: what was saved, or why nothing was.
enum GetResult: Encodable {
    case saved(ForegroundDownload.Report)
    case failed(url: String, CLIFailure)

    private enum Key: String, CodingKey {
        case url, error
    }

    /// A failure as `--json` shows it.
    private struct Failure: Encodable {
        var kind: String
        var message: String
        var exitStatus: Int32
        var httpStatus: Int?
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .saved(let report):
            try report.encode(to: encoder)
        case .failed(let url, let failure):
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(url, forKey: .url)
            try container.encode(
                Failure(kind: failure.kind, message: failure.message, exitStatus: failure.status.rawValue, httpStatus: failure.httpStatus),
                forKey: .error
            )
        }
    }
}

/// One download of `get`: a URL, and the name its input-file line gave (`out=`).
struct GetItem: Sendable {
    var url: URL
    var name: String?
}
