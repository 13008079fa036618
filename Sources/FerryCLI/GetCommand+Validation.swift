import ArgumentParser
import FerryCore

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
