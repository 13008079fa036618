import ArgumentParser
import FerryCore
import Foundation

/// Parts of `get`'s validation, each for one option that excludes others.
extension GetCommand {
    /// `-r`: a byte range as curl takes it, and what it does not go with.
    func checkRange(_ range: String) throws {
        let spans = range.split(separator: ",", omittingEmptySubsequences: false)
        let valid = spans.allSatisfy { span in
            let parts = span.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, !(parts[0].isEmpty && parts[1].isEmpty) else { return false }
            return parts.allSatisfy { $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
                && (parts[0].isEmpty || parts[1].isEmpty || Int(parts[0])! <= Int(parts[1])!)
        }
        guard valid else { throw ValidationError("-r takes a byte range such as 0-499, 500- or -500 (several with commas), not '\(range)'") }
        if reliability.resume { throw ValidationError("-r cannot be continued with -C: the file holds a part, not the start of the whole") }
        if reliability.connections > 1 { throw ValidationError("-r asks for one range over one connection: -x \(reliability.connections) does not go with it") }
        if reliability.checksum != nil { throw ValidationError("--checksum checks a whole file; -r saves a part") }
    }

    /// `-I`: heads only, so nothing that saves or shapes a body.
    func checkHead() throws {
        let others: [(Bool, String)] = [
            (background, "--background"), (save.output != nil || save.dir != nil, "-o or --dir"), (reliability.resume, "-C"),
            (reliability.checksum != nil, "--checksum"), (reliability.connections > 1, "-x"), (save.include, "-i"), (save.writeOut != nil, "-w"),
            (!shape.data.isEmpty || !shape.dataBinary.isEmpty, "-d"),
        ]
        if let (_, name) = others.first(where: { $0.0 }) {
            throw ValidationError("-I prints the response heads on stdout and saves nothing: \(name) does not go with it")
        }
    }

    /// `-o -`: the body on stdout, so nothing that needs a file or another order.
    func checkStandardOutput() throws {
        if reliability.resume { throw ValidationError("-o - writes to stdout, which cannot be continued with -C") }
        if reliability.checksum != nil { throw ValidationError("-o - writes to stdout: --checksum needs a file to read back") }
        if reliability.connections > 1 { throw ValidationError("-o - writes to stdout, in order: one connection, not -x \(reliability.connections)") }
        if save.include { throw ValidationError("-o - with -i: use -D - to see the heads on stdout before the body") }
        if background { throw ValidationError("-o - writes to this command's stdout; ferryd cannot (give a file with -o)") }
    }
}

extension GetCommand {
    /// Other tools' habits that mean something else here (docs/CLI.md, "Coming from curl, wget or
    /// aria2"): the error names ferry's equivalent rather than the symptom ("not an http or https URL").
    func checkHabits() throws {
        if urls.isEmpty, batch.inputFile == nil, let jar = transfer.cookieJar, CLI.isTransferURL(jar) {
            // wget's -c (continue) is curl's cookie jar here, and it took the URL as its file.
            throw ValidationError("-c is the cookie jar file (curl's), and it took '\(jar)': to continue a download as wget's -c does, use -C: ferry get -C URL")
        }
        guard !urls.isEmpty || batch.inputFile != nil else { throw ValidationError("give at least one URL (or --input-file FILE)") }
        if let notURL = urls.first(where: { !CLI.isTransferURL($0) }) {
            if save.include {
                // wget's and aria2's -i FILE: here -i is curl's --include, and FILE became a URL.
                throw ValidationError("'\(notURL)' is not a URL: -i is curl's --include here; for a file of URLs (wget's and aria2's -i) use --input-file \(notURL)")
            }
            if save.remoteName {
                // wget's -O FILE: here -O is curl's --remote-name, a flag, and FILE became a URL.
                throw ValidationError("'\(notURL)' is not a URL: -O is curl's --remote-name here (save under the server's name); to name the file as wget's -O does, use -o \(notURL)")
            }
            if transfer.quiet, !notURL.isEmpty, notURL.allSatisfy(\.isNumber) {
                // aria2's -s N (splits): here -s is curl's --silent, a flag, and N became a URL.
                throw ValidationError("'\(notURL)' is not a URL: -s is curl's --silent here; to split a download over \(notURL) connections as aria2's -s does, use -x \(notURL)")
            }
        }
        // aria2's -d DIR: here -d is curl's --data, and a directory's name would be sent as the body.
        if let directory = shape.data.first(where: { !$0.hasPrefix("@") && Self.isDirectory($0) }) {
            throw ValidationError("-d is curl's --data here, and '\(directory)' is a directory: to save into it as aria2's -d does, use --dir \(directory); to send the text as the body, use --data-binary \(directory)")
        }
    }

    private static func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return !path.isEmpty && FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }

    /// The options of different groups that do not go together.
    func checkCombinations() throws {
        if batch.parallelism > 1 {
            if save.output == "-" { throw ValidationError("-o - with -Z would mix the bodies on stdout; download them one by one") }
            if save.include || transfer.dumpHeader == "-" { throw ValidationError("-Z with -i or -D - would mix the heads; download them one by one") }
        }
        if batch.inputFile != nil, save.output != nil { throw ValidationError("--input-file names several files: use --dir, and out=NAME in the file") }
        if let range = shape.range { try checkRange(range) }
        if reliability.failWithBody, save.output == "-" || background {
            throw ValidationError("--fail-with-body saves an error page to a file: not with -o - or --background")
        }
        if !shape.data.isEmpty || !shape.dataBinary.isEmpty {
            if reliability.resume { throw ValidationError("-d cannot be continued with -C: a range request would not send the body again") }
            if reliability.connections > 1 { throw ValidationError("-d asks once, over one connection: -x \(reliability.connections) does not go with it") }
        }
        if shape.head { try checkHead() }
        if save.output == "-" { try checkStandardOutput() }
        if save.include, reliability.resume {
            throw ValidationError("-i cannot be continued with -C: the file starts with the heads, not the server's bytes")
        }
        if shape.compressed, reliability.resume {
            throw ValidationError("--compressed cannot be continued with -C: a decoded file's offsets are not the server's")
        }
    }

    /// What `--background` does not go with: options of foreground downloads, and limits ferryd does
    /// not take.
    func checkBackground() throws {
        do {
            try backgroundLimits?.validate()
        } catch let error as FerryError {
            throw ValidationError("with --background, \(error.message) (--max-redirs up to \(TaskLimits.redirectLimit), --tries up to \(TaskLimits.attemptLimit))")
        }
        let foregroundOnly: [(Bool, String)] = [
            (save.include, "-i is for foreground downloads: ferryd delivers the body as sent; see the head with ferry ls --json"),
            (transfer.dumpHeader != nil, "-D is for foreground downloads: ferryd makes the requests; see the response head with ferry ls --json"),
            (save.writeOut != nil, "-w is for foreground downloads: a background one ends later; see its figures with ferry ls --json"),
            (
                transfer.cache != nil,
                "--cache is for foreground downloads: background downloads do not use the HTTP cache, as URLSession's do not"
            ),
            (transfer.verbose, "-v is for foreground downloads; follow a background one with ferry watch"),
            (
                transfer.altSvc != nil,
                "--alt-svc is for foreground downloads: ferryd keeps the Alt-Svc answers it gets in alt-svc.txt in its state directory"
            ),
            (
                reliability.retryDelay != nil,
                "--retry-delay is for foreground downloads: ferryd waits by its own backoff between tries (--tries sets how many)"
            ),
            (
                save.remoteHeaderName,
                "-J is for foreground downloads: ferryd names the file when the task is created, before any answer; give the name with -o"
            ),
            (
                save.remoteTime,
                "-R is for foreground downloads: ferryd delivers the file as it arrived; the server's Last-Modified is in ferry ls --json"
            ),
        ]
        if let (_, message) = foregroundOnly.first(where: { $0.0 }) { throw ValidationError(message) }
    }
}
