import ArgumentParser
import FerryCore

/// `get`'s options for what is saved where: the file's name and directory, its time, the heads, progress and `-w`.
///
/// Shown under "Saving" in `ferry get --help`. Each value is checked on its own here, and against the
/// other groups in ``GetCommand/validate()``.
struct SaveOptions: ParsableArguments {
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
        name: [.customShort("#"), .customLong("progress-bar")],
        help: "Show progress as a bar, as curl -# (ferry always does on a terminal; accepted for curl's habit)."
    )
    var progressBar = false

    @Option(
        name: [.customShort("w"), .customLong("write-out")],
        help: ArgumentHelp(
            "After each download print this format to stdout, as curl: %{http_code}, %{time_total}, %{json}, … (docs/CLI.md); @FILE reads it from a file.",
            valueName: "format"
        )
    )
    var writeOut: String?

    mutating func validate() throws {
        if let directoryPrefix {
            // wget's -P: --dir, and the directory is made when it is missing, as wget makes it.
            if dir != nil { throw ValidationError("give --dir or -P/--directory-prefix, not both") }
            dir = directoryPrefix
            createDirs = true
        }
        if output != nil, remoteName { throw ValidationError("-o cannot be combined with -O: -o names the file, -O takes the server's name") }
        if let output, dir != nil, output == "-" || output.hasPrefix("/") {
            throw ValidationError("--dir holds files named relative to it: -o \(output) does not go with it")
        }
        if output != nil, remoteHeaderName { throw ValidationError("-J names the file from the server's answer: not with -o, which names it") }
        if remoteTime, output == "-" { throw ValidationError("-R sets a file's time: -o - writes to stdout") }
    }
}
