import ArgumentParser
import FerryCore

/// `get`'s options that shape the request: redirects, method, body, range, `-I` and `--compressed`.
///
/// Shown under "The request" in `ferry get --help`. Each value is checked on its own here, and against the
/// other groups in ``GetCommand/validate()``.
struct RequestShapeOptions: ParsableArguments {
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

    @Flag(
        name: [.customShort("I"), .customLong("head")],
        help: "Send HEAD and print the response heads (redirects too) on stdout, as curl -sIL; no file is written."
    )
    var head = false

    @Flag(
        name: .customLong("compressed"),
        help: "Ask for a gzip or deflate body and save it decoded, as curl (one connection; it cannot be continued)."
    )
    var compressed = false

    mutating func validate() throws {
        if let maxRedirects, maxRedirects < 0 { throw ValidationError("--max-redirs takes 0 or more") }
        if let method, method.isEmpty || !method.allSatisfy({ $0.isLetter || $0 == "-" }) {
            throw ValidationError("-X takes a method name such as POST or DELETE, not '\(method)'")
        }
    }
}
