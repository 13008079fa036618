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
        if resume { throw ValidationError("-r cannot be continued with -C: the file holds a part, not the start of the whole") }
        if connections > 1 { throw ValidationError("-r asks for one range over one connection: -x \(connections) does not go with it") }
        if checksum != nil { throw ValidationError("--checksum checks a whole file; -r saves a part") }
    }

    /// `-I`: heads only, so nothing that saves or shapes a body.
    func checkHead() throws {
        let others: [(Bool, String)] = [
            (background, "--background"), (output != nil || dir != nil, "-o or --dir"), (resume, "-C"),
            (checksum != nil, "--checksum"), (connections > 1, "-x"), (include, "-i"), (writeOut != nil, "-w"),
            (!data.isEmpty || !dataBinary.isEmpty, "-d"),
        ]
        if let (_, name) = others.first(where: { $0.0 }) {
            throw ValidationError("-I prints the response heads on stdout and saves nothing: \(name) does not go with it")
        }
    }

    /// `-o -`: the body on stdout, so nothing that needs a file or another order.
    func checkStandardOutput() throws {
        if resume { throw ValidationError("-o - writes to stdout, which cannot be continued with -C") }
        if checksum != nil { throw ValidationError("-o - writes to stdout: --checksum needs a file to read back") }
        if connections > 1 { throw ValidationError("-o - writes to stdout, in order: one connection, not -x \(connections)") }
        if include { throw ValidationError("-o - with -i: use -D - to see the heads on stdout before the body") }
        if background { throw ValidationError("-o - writes to this command's stdout; ferryd cannot (give a file with -o)") }
    }
}
