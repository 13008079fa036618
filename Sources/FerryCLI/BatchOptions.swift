import ArgumentParser
import FerryCore

/// `get`'s options for many downloads: an input file, and how many run at once.
///
/// Shown under "Many URLs" in `ferry get --help`. Each value is checked on its own here, and against the
/// other groups in ``GetCommand/validate()``.
struct BatchOptions: ParsableArguments {
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

    mutating func validate() throws {
        guard (1...1000).contains(parallelMax) else { throw ValidationError("--parallel-max takes 1 to 1000") }
        if let concurrentDownloads, !(1...1000).contains(concurrentDownloads) { throw ValidationError("-j takes 1 to 1000") }
    }
}
