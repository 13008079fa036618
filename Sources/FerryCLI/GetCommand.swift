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
        if let range { try checkRange(range) }
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
        if head { try checkHead() }
        if output == "-" { try checkStandardOutput() }
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
    func checkURLCount() throws {
        guard inputFile == nil else { return }
        if output != nil, urls.count > 1 { throw CLIFailure("-o takes one URL; use --dir for several", status: .usage) }
        if checksum != nil, urls.count > 1 { throw CLIFailure("--checksum is for one URL", status: .usage) }
    }

    /// `-d` and `--data-binary` joined with `&` as curl joins them (the `-d` ones first), or nil.
    /// `-d @FILE` loses the file's CR and LF, as curl's; `--data-binary @FILE` keeps every byte.
    func requestBody() throws -> ByteBuffer? {
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
    func writeOutFormat() throws -> WriteOut? {
        guard let writeOut else { return nil }
        guard writeOut.hasPrefix("@") else { return try WriteOut(writeOut) }
        let file = String(writeOut.dropFirst())
        let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: CLI.absolute(file))
        guard let data else { throw CLIFailure("-w: cannot read the format from \(file)", status: .localFile) }
        return try WriteOut(String(decoding: data, as: UTF8.self))
    }

    /// The downloads asked for: the URLs given, then those of `--input-file`.
    func items() throws -> [GetItem] {
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
