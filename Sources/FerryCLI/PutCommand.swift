import ArgumentParser
import Ferry
import FerryEngine
import Foundation
import NIOCore

/// `ferry put FILE URL`: uploads a file (PUT unless -X says otherwise) or a multipart form
/// (`--form`), in the foreground with progress or handed to ferryd (`--background`).
struct PutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Upload a file (or a multipart form with --form) to a URL.",
        discussion: """
            ferry put FILE URL sends FILE's bytes; ferry put --form name=@FILE --form key=value URL sends a \
            multipart/form-data body. The response body is printed on stdout. Exit status 1 when the server \
            answers with an error status.
            """
    )

    @Argument(help: "FILE URL, or just URL with --form.")
    var arguments: [String]

    @Option(name: [.customShort("X"), .customLong("method")], help: "The method (default PUT; POST with --form).")
    var method: String?

    @Option(name: .long, help: "A multipart field: name=value or name=@FILE (repeatable).")
    var form: [String] = []

    @Flag(
        name: .long,
        help:
            "Use the IETF resumable-upload protocol when the server speaks it: an interrupted upload goes on from the server's offset."
    )
    var resumable = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Send the file in chunks, this many at once, with tus 1.0 concatenation (URL is the tus endpoint).",
            valueName: "n"
        )
    )
    var chunks: Int?

    @Flag(name: .long, help: "Hand the upload to ferryd and return at once, printing the task id.")
    var background = false

    @OptionGroup var session: SessionOptions
    @OptionGroup var transfer: TransferOptions
    @OptionGroup var policy: BackgroundPolicyOptions
    @OptionGroup var outputOptions: OutputOptions

    func validate() throws {
        try policy.validate(background: background)
        if form.isEmpty {
            guard arguments.count == 2 else { throw ValidationError("give FILE and URL (or --form fields and URL)") }
        } else {
            guard arguments.count == 1 else { throw ValidationError("with --form, give only the URL") }
            if background, form.contains(where: { $0.contains("=@-") }) {
                throw ValidationError("--form name=@- reads this command's stdin, which ferryd cannot; give a file")
            }
        }
        if form.isEmpty, arguments.first == "-" {
            if background { throw ValidationError("ferry put - reads this command's stdin, which ferryd cannot; upload a file") }
            if resumable || chunks != nil {
                throw ValidationError("--resumable and --chunks need a file they can read again; stdin is read once")
            }
        }
        if let method, method.isEmpty || !method.allSatisfy({ $0.isLetter || $0 == "-" }) {
            throw ValidationError("-X takes a method name such as PUT or POST")
        }
        if let chunks {
            guard ControlAPI.TaskCreation.chunkCounts.contains(chunks) else { throw ValidationError("--chunks takes 1 to 32") }
            if resumable { throw ValidationError("--chunks and --resumable are different protocols; pick one") }
        }
        if resumable || chunks != nil, !form.isEmpty {
            throw ValidationError("--resumable and --chunks upload a file, not --form fields")
        }
        if background, transfer.verbose {
            throw ValidationError("-v is for foreground uploads; follow a background one with ferry watch")
        }
        if background, transfer.dumpHeader != nil {
            throw ValidationError("-D is for foreground uploads: ferryd makes the requests; see the response head with ferry ls --json")
        }
        if background, transfer.cache != nil {
            throw ValidationError("--cache is for foreground transfers: background uploads do not use the HTTP cache")
        }
    }

    func run() async throws {
        let url = try CLI.url(arguments.last!)
        let headers = try transfer.headers(try CLI.headers(transfer.headerLines), for: url)
        let verb = (method ?? (form.isEmpty ? "PUT" : "POST")).uppercased()
        if background {
            try await submit(url: url, headers: headers, method: verb)
            return
        }
        let transport = try transfer.makeTransport(connectionsPerHost: max(6, chunks ?? 1))
        let upload = ForegroundUpload(
            url: url,
            method: verb,
            headers: headers,
            source: !form.isEmpty ? .form(form) : arguments[0] == "-" ? .standardInput : .file(arguments[0]),
            mode: chunks.map { .chunks($0) } ?? (resumable ? .resumable : .plain),
            limit: try transfer.rateLimit(),
            quiet: transfer.quiet || outputOptions.json,
            transport: try transfer.delivering(transport),
            deadline: transfer.deadline()
        )
        let outcome: Result<(ForegroundUpload.Report, ByteBuffer), any Error>
        do {
            outcome = .success(try await upload.run())
        } catch let failure as CLIFailure {
            outcome = .failure(transfer.explained(failure))
        } catch {
            outcome = .failure(error)
        }
        let saved = Result { try transfer.saveCookies(transport) }
        try? await transport.shutdown()
        try saved.get()
        let (report, body) = try outcome.get()
        if outputOptions.json {
            CLI.printJSON(report)
        } else {
            Console.out(bytes: body.readableBytesView)
        }
        guard (200..<300).contains(report.status) else {
            throw CLIFailure("\(url.absoluteString): the server answered \(report.status)", status: .transferFailed)
        }
    }

    /// Hands the upload to ferryd: a file (whole, resumably, or in `--chunks`), or a `--form` whose
    /// files ferryd reads when it sends the form. Files are checked here first, so a typo is said
    /// before ferryd is asked (or started).
    private func submit(url: URL, headers: Headers, method: String) async throws {
        var file: String?
        var fields: [FormField]?
        if form.isEmpty {
            file = CLI.absolute(arguments[0])
        } else {
            fields = try form.map(ForegroundUpload.field)
        }
        // The checks the foreground's body makes (it exists, is a file, can be read); nothing is read yet.
        do {
            if let file { _ = try TransportRequestBody.file(path: file) }
            var probe = MultipartFormData()
            for field in fields ?? [] { try probe.append(field) }
        } catch let error as FerryError {
            throw CLIFailure(error)
        }
        let client = try await CLI.daemon()
        var request = Request(url: url)
        request.method = method
        request.headers = headers
        request.resumableUpload = resumable
        var creation = ControlAPI.TaskCreation(
            kind: .upload,
            request: request,
            uploadFile: file,
            taskDescription: file ?? "form: " + (fields ?? []).map(\.name).joined(separator: ", "),
            connection: try transfer.connectionSettings()
        )
        creation.form = fields
        creation.chunks = chunks
        try policy.apply(to: &creation, limit: try transfer.rateLimit())
        let info: BackgroundTaskInfo = try await CLI.call(
            client,
            "POST",
            "\(CLI.sessionPath(session.session))/tasks",
            body: creation
        )
        if outputOptions.json { CLI.printJSON(info) } else { Console.out("\(info.taskIdentifier)\n") }
    }
}
