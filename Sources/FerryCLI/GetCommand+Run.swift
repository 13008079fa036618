import ArgumentParser
import Ferry
import FerryEngine
import Foundation
import NIOCore
import Synchronization

/// What `get` does once its options are valid: HEAD requests (-I), downloads in the foreground, or
/// tasks handed to ferryd (--background).
extension GetCommand {
    func run() async throws {
        try checkURLCount()
        let items = try items()
        if save.createDirs, !shape.head { try makeDirectories(for: items) }
        let headers = try CLI.headers(transfer.headerLines)
        if shape.head {
            try await heads(items.map(\.url), headers: headers)
        } else if background {
            try await submit(items, headers: headers)
        } else {
            try await download(items, headers: headers)
        }
    }

    /// `--create-dirs`: the directories the files go into, made when missing, each with mode 0750 (less
    /// the umask), as curl makes them.
    func makeDirectories(for items: [GetItem]) throws {
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

    func target(for item: GetItem) -> ForegroundDownload.Target {
        // -o in --dir: the name within it, as aria2c's --out in --dir and curl's -o in --output-dir.
        if let output = save.output { return .file(save.dir.map { ($0 as NSString).appendingPathComponent(output) } ?? output) }
        // An input file's out=NAME: that name in --dir (or here).
        if let name = item.name { return .file(((save.dir ?? ".") as NSString).appendingPathComponent(name)) }
        return .directory(save.dir ?? ".")
    }

    /// `-I`: the heads of each URL on stdout; the status is the first failure's.
    func heads(_ urls: [URL], headers: Headers) async throws {
        let transport = try transfer.makeTransport(connectionsPerHost: 6)
        let sending = try transfer.delivering(transport)
        var firstFailure: CLIFailure?
        for url in urls {
            var job = HeadRequest(url: url, headers: try transfer.headers(headers, for: url), transport: sending)
            job.deadline = transfer.deadline()
            job.maximumRedirects = shape.maxRedirects
            do {
                _ = try await job.run()
            } catch let failure as CLIFailure {
                let failure = transfer.explained(failure)
                if firstFailure == nil { firstFailure = failure }
                if urls.count > 1 { Console.errorLine(failure.message) }
            }
        }
        try await close(transport)
        try Self.end(firstFailure, of: urls.count)
    }

    /// Writes `-c`'s cookie jar and closes the transport's connections (a jar that cannot be written
    /// fails the command, after the connections are closed).
    func close(_ transport: SessionTransport) async throws {
        let saved = Result { try transfer.saveCookies(transport) }
        try? await transport.shutdown()
        try saved.get()
    }

    /// Ends a command of `count` transfers whose first failure was `failure`: with several, each was
    /// printed as it happened and only the status remains; with one, its message too.
    static func end(_ failure: CLIFailure?, of count: Int) throws {
        guard let failure else { return }
        if count > 1 { throw ExitCode(failure.status.rawValue) }
        throw failure
    }

    func download(_ items: [GetItem], headers: Headers) async throws {
        // A --dir that is not there is said once, not once for each URL.
        if let dir = save.dir, items.count > 1 { try ForegroundDownload.checkWritableDirectory(CLI.absolute(dir)) }
        let transport = try transfer.makeTransport(connectionsPerHost: max(6, reliability.connections))
        let (sending, limit) = (try transfer.delivering(transport), try transfer.rateLimit())
        let interruption = Interruption()
        let format = try writeOutFormat()
        let body = try requestBody()
        let verb = (shape.method ?? (body == nil ? "GET" : "POST")).uppercased()
        let quiet = transfer.quiet || outputOptions.json
        let board = batch.parallelism > 1 ? ProgressBoard(quiet: quiet) : nil

        // One download's work, ready to run.
        func job(_ item: GetItem) throws -> @Sendable () async throws -> ForegroundDownload.Report {
            let url = item.url
            let requestHeaders = try downloadHeaders(headers, for: url, hasBody: body != nil)
            if save.output == "-" {
                var job = StandardOutputDownload(url: url, headers: requestHeaders, quiet: quiet, transport: sending, limit: limit)
                job.deadline = transfer.deadline()
                job.maximumRedirects = shape.maxRedirects
                job.method = verb
                job.requestBody = body
                job.decodesContent = shape.compressed
                job.cache = transfer.cacheUse
                job.board = board
                job.speedFloor = reliability.speedFloor
                let finalJob = job
                return transfer.explaining { try await finalJob.run() }
            }
            var job = ForegroundDownload(
                url: url,
                headers: requestHeaders,
                target: target(for: item),
                resume: reliability.resume,
                retries: reliability.tries.map { $0 - 1 } ?? reliability.retry,
                checksum: reliability.checksum.flatMap(ContentDigest.init),
                connections: reliability.connections,
                limit: limit,
                quiet: quiet,
                transport: sending,
                interruption: interruption
            )
            job.decodesContent = shape.compressed
            job.includesHeads = save.include
            job.cache = transfer.cacheUse
            job.deadline = transfer.deadline()
            job.maximumRedirects = shape.maxRedirects
            job.method = verb
            job.requestBody = body
            job.board = board
            job.speedFloor = reliability.speedFloor
            job.keepsErrorBody = reliability.failWithBody
            job.retryDelay = reliability.retryDelay
            job.takesRemoteTime = save.remoteTime
            job.takesServerName = save.remoteHeaderName
            let finalJob = job
            return transfer.explaining { try await finalJob.run() }
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
        await Self.runAll(jobs, width: batch.parallelism, interruption: interruption, report: report)
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

    /// Runs `jobs`, at most `width` at once, the next starting when one ends (-Z, -j; one by one
    /// otherwise); each outcome goes to `report` as it ends. An interruption cancels what runs, and
    /// nothing more starts.
    static func runAll(
        _ jobs: [@Sendable () async throws -> ForegroundDownload.Report],
        width: Int,
        interruption: Interruption,
        report: @escaping @Sendable (Int, Result<ForegroundDownload.Report, CLIFailure>) -> Void
    ) async {
        let work = Task {
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
    }

    /// What a new file's mode would be for this process (0o666 less the umask).
    static var fileMode: Int { Int(DownloadDestination.newFileMode) }

    /// The header fields a download of `url` sends, in the foreground and handed to ferryd alike: `-H`
    /// and the transfer options' (`-A`, `-e`, `-u`, cookies), then `-r`'s Range, a body's Content-Type
    /// and `--compressed`'s Accept-Encoding, each unless `-H` gave it.
    func downloadHeaders(_ given: Headers, for url: URL, hasBody: Bool) throws -> Headers {
        var headers = try transfer.headers(given, for: url)
        if let range = shape.range, headers["range"] == nil { headers.add(name: "Range", value: "bytes=" + range) }
        if hasBody, headers["content-type"] == nil {
            headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        }
        if shape.compressed, headers["accept-encoding"] == nil {
            headers.add(name: "Accept-Encoding", value: ContentDecoder.acceptEncoding)
        }
        return headers
    }

    /// `--max-redirs`, `--retry`/`--tries` and `--speed-limit`/`--speed-time` as a background task's own
    /// limits (nil when none is given: ferryd's apply).
    var backgroundLimits: TaskLimits? {
        let limits = TaskLimits(
            maximumRedirects: shape.maxRedirects,
            maximumAttempts: reliability.tries ?? (reliability.retry > 0 ? reliability.retry + 1 : nil),
            lowSpeedLimit: reliability.speedFloor?.bytesPerSecond,
            lowSpeedTime: reliability.speedFloor?.seconds
        )
        return limits == TaskLimits() ? nil : limits
    }

    func submit(_ items: [GetItem], headers: Headers) async throws {
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
            request.method = (shape.method ?? (body == nil ? "GET" : "POST")).uppercased()
            request.headers = try downloadHeaders(headers, for: url, hasBody: body != nil)
            request.connections = reliability.connections
            request.expectedDigest = reliability.checksum.flatMap(ContentDigest.init)
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
            if shape.compressed { creation.decodesContent = true }
            if reliability.resume, let continued = try handOver(destination, url: url, headers: request.headers) {
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
    func handOver(_ destination: String, url: URL, headers: Headers) throws -> ResumeData? {
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
            connections: reliability.connections,
            expectedDigest: reliability.checksum.flatMap(ContentDigest.init),
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
