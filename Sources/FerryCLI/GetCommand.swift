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

    @OptionGroup(title: "Many URLs") var batch: BatchOptions
    @OptionGroup(title: "Saving") var save: SaveOptions
    @OptionGroup(title: "The request") var shape: RequestShapeOptions
    @OptionGroup(title: "Continuing, retrying, checking") var reliability: ReliabilityOptions

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
        if reliability.resume {
            // curl's `-C -` ("find the offset yourself") is what ferry's -C always does: the `-` is taken
            // as its value. curl's `-C OFFSET` has no equal (a file's size alone is never trusted).
            urls.removeAll { $0 == "-" }
            if let offset = urls.first(where: { !$0.isEmpty && $0.allSatisfy(\.isNumber) }) {
                throw ValidationError(
                    "-C takes no offset (\(offset)): ferry continues from the part file's record, checked with If-Range; for bytes from an offset use -r \(offset)-"
                )
            }
        }
        try checkHabits()
        try checkCombinations()
        if background { try checkBackground() } else if onComplete != nil { throw ValidationError("--on-complete needs --background") }
    }

    /// The checks that count URLs. They run after the parser has reported options it does not know:
    /// an unknown option's value lands among the URLs (`-Z ua URL -o x`), and the error must name the
    /// option, not the count.
    func checkURLCount() throws {
        guard batch.inputFile == nil else { return }
        if save.output != nil, urls.count > 1 { throw CLIFailure("-o takes one URL; use --dir for several", status: .usage) }
        if reliability.checksum != nil, urls.count > 1 { throw CLIFailure("--checksum is for one URL", status: .usage) }
    }

    /// `-d` and `--data-binary` joined with `&` as curl joins them (the `-d` ones first), or nil.
    /// `-d @FILE` loses the file's CR and LF, as curl's; `--data-binary @FILE` keeps every byte.
    func requestBody() throws -> ByteBuffer? {
        guard !shape.data.isEmpty || !shape.dataBinary.isEmpty else { return nil }
        func read(_ value: String, stripsLineBreaks: Bool) throws -> [UInt8] {
            guard value.hasPrefix("@") else { return Array(value.utf8) }
            let file = String(value.dropFirst())
            let contents = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: CLI.absolute(file))
            guard let contents else { throw CLIFailure("cannot read \(file) to send it", status: .localFile) }
            return stripsLineBreaks ? contents.filter { $0 != 0x0A && $0 != 0x0D } : Array(contents)
        }
        let parts = try shape.data.map { try read($0, stripsLineBreaks: true) } + shape.dataBinary.map { try read($0, stripsLineBreaks: false) }
        return ByteBuffer(bytes: Array(parts.joined(separator: [UInt8(ascii: "&")])))
    }

    /// `-w`'s format, read from a file for `@FILE` (`@-`: stdin).
    func writeOutFormat() throws -> WriteOut? {
        guard let writeOut = save.writeOut else { return nil }
        guard writeOut.hasPrefix("@") else { return try WriteOut(writeOut) }
        let file = String(writeOut.dropFirst())
        let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: CLI.absolute(file))
        guard let data else { throw CLIFailure("-w: cannot read the format from \(file)", status: .localFile) }
        return try WriteOut(String(decoding: data, as: UTF8.self))
    }

    /// The downloads asked for: the URLs given, then those of `--input-file`.
    func items() throws -> [GetItem] {
        var items = try urls.map { GetItem(url: try CLI.url($0), name: nil) }
        if let inputFile = batch.inputFile {
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
