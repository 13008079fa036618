import FerryCore
import FerryEngine
import Foundation
import NIOCore
import Synchronization

/// The steps of ``ForegroundDownload/run()``: where it writes, the request, the events it watches, the
/// driver's plan, the transfer, what a failure leaves, and the report.
extension ForegroundDownload {
    /// Where one run writes: the destination, its part file and its resume record.
    struct Files {
        /// The directory the file goes into.
        let directory: String
        /// The name to start with (the progress line shows it).
        let name: String
        /// Whether that name is final (`-o`), or the server may choose one (`-J`).
        let fixedName: Bool
        /// What -o names, links followed.
        let destination: DownloadDestination
        /// TARGET.ferry-resume.
        let record: String
        /// The file the user gets.
        var target: String { destination.path }
        /// Where the bytes go while they arrive.
        var partial: String { destination.writePath }
    }

    /// What the download's events saw, read when it ends.
    final class Observed: Sendable {
        /// Bytes written in all, counting those continued from.
        let moved = ByteCounter()
        /// Whether the answer is the download (an error status's body draws no progress).
        let showsProgress = Mutex(true)
        /// The offset the transfer continued from.
        let resumedFrom = Mutex<Int64>(0)
    }

    /// The destination, checked: a writable directory; a device or FIFO is written through (no part file,
    /// no rename); a file is replaced once the download is complete.
    func prepareFiles() throws -> Files {
        let (directory, initialName, fixedName) = try place()
        try Self.checkWritableDirectory(directory)
        let destination = try DownloadDestination(inspecting: directory + "/" + initialName)
        if includesHeads, destination.isSpecial {
            throw CLIFailure(
                "-i writes the heads into the file before the body, and \(destination.path) is not a regular file; use -D - to see the heads",
                status: .usage
            )
        }
        return Files(
            directory: directory,
            name: initialName,
            fixedName: fixedName,
            destination: destination,
            record: ResumeRecord.path(beside: destination.path)
        )
    }

    /// The request as the flags make it; to a device or FIFO, over one connection and without a
    /// checksum (its bytes cannot be read back).
    func makeRequest(_ destination: DownloadDestination) throws -> Request {
        var request = Request(url: url)
        request.method = method
        for field in headers { request.headers.add(name: field.name, value: field.value) }
        request.connections = connections
        request.expectedDigest = checksum
        if destination.isSpecial {
            if checksum != nil {
                throw CLIFailure(destination.notAFile("--checksum cannot read the bytes back"), status: .usage)
            }
            if connections > 1, !quiet {
                CLI.note(destination.notAFile("one connection, not \(connections): its bytes must arrive in order"))
            }
            request.connections = 1
        }
        return request
    }

    /// The downloader's events: progress on `display`, what `observed` keeps, and checkpoints into the
    /// resume record when there is one to write.
    func events(
        _ display: ProgressDisplay,
        _ observed: Observed,
        continuing: Bool,
        checkpoints writer: ResumeRecordWriter?
    ) -> Downloader.Events {
        var events = Downloader.Events()
        // An error status's body is not the download: no progress for it (a 404 drew a full bar
        // before "nothing was saved").
        events.didReceiveResponse = { status, _ in
            observed.showsProgress.withLock { $0 = (200..<300).contains(status) }
        }
        events.didWrite = { _, total, expected in
            observed.moved.set(total)
            if observed.showsProgress.withLock({ $0 }) { display.update(done: total, total: expected) }
        }
        let (quiet, name) = (quiet, url.absoluteString)
        events.didResume = { offset, _ in
            observed.resumedFrom.withLock { $0 = offset }
        }
        events.didStartOver = { reason in
            if continuing, !quiet { CLI.note("\(name): \(reason); downloading from the start") }
        }
        // Written out every second (not every 8 MiB as in ferryd: at 1 GB/s that was 128 records a
        // second); made durable at most every 30 s (ResumeRecord says why).
        if let writer {
            events.checkpoint = Downloader.Checkpoint(into: writer, everyBytes: Int64.max / 2, everySeconds: 1, durableEverySeconds: 30)
        }
        return events
    }

    /// The engine driver's plan: curl's --retry rules, checkpoints into the resume record, delivery to
    /// the destination (or, with -J, to the server's name beside it).
    func makePlan(
        _ request: Request,
        files: Files,
        resumeData: ResumeData?,
        events: Downloader.Events
    ) -> DownloadDriver.Plan {
        var plan = DownloadDriver.Plan(request: request, path: files.partial, deadline: deadline, events: events)
        plan.resumeData = resumeData
        plan.retries = .curl(retries)
        if let retryDelay, retryDelay > 0 { plan.retries.backoff = { _ in retryDelay } }
        let (interruption, url, quiet, record) = (interruption, url, quiet, files.record)
        plan.mayRetry = { !interruption.happened }
        plan.willRetry = { attempt, delay, reason in
            if !quiet { CLI.note("\(url.absoluteString): \(reason); try \(attempt) in \(Self.seconds(delay))") }
        }
        plan.didDiscard = { try? FileManager.default.removeItem(atPath: record) }
        plan.deliversErrorBodies = keepsErrorBody
        if files.fixedName || !takesServerName {
            plan.destination = files.destination
        } else {
            // -J: the server's Content-Disposition name, in the directory, never replacing what is there.
            let (directory, destination) = (files.directory, files.destination)
            plan.chooseDestination = { result in
                guard let name = RemoteName.fromContentDisposition(result.headers) else { return destination }
                return DownloadDestination(newFileIn: directory, named: name)
            }
        }
        return plan
    }

    /// Runs the plan under the speed floor; a non-2xx answer is a failure that says what was saved.
    func transfer(
        _ plan: DownloadDriver.Plan,
        context: TransferContext,
        counter: ByteCounter,
        display: ProgressDisplay,
        files: Files
    ) async throws -> Downloader.Result {
        var driver = DownloadDriver(transport: transport)
        driver.downloader.decodesContent = decodesContent
        if let maximumRedirects { driver.downloader.maximumRedirects = maximumRedirects }
        driver.downloader.requestBody = requestBody
        let ready = driver
        let outcome = try await TransferContext.$current.withValue(context) {
            try await SpeedFloor.enforce(speedFloor, counter: counter) { try await ready.run(plan) }
        }
        switch outcome {
        case .finished(let finished):
            return finished
        case .refused(let answer, _):
            // A non-2xx answer: nothing saved (a device or FIFO got the error page), or with
            // --fail-with-body the error page.
            display.finish(failed: true)
            try? FileManager.default.removeItem(atPath: files.record)
            let why = UnfollowedRedirect.explanation(status: answer.status, headers: answer.headers, base: answer.finalRequest.url)
            throw CLIFailure(
                files.destination.isSpecial || keepsErrorBody
                    ? "\(url.absoluteString): the server answered \(answer.status)\(why); its error page went to \(answer.path)"
                    : "\(url.absoluteString): the server answered \(answer.status)\(why); nothing was saved",
                status: .transferFailed,
                httpStatus: answer.status
            )
        case .tryLater(_, let error):
            throw CLIFailure(error, context: url.absoluteString)
        }
    }

    /// What a failed transfer leaves, and the failure that says so: its resume record when it can be
    /// continued, nothing when it cannot (-C would not trust a part file without a record).
    func failure(
        _ error: FerryError,
        files: Files,
        writer: ResumeRecordWriter,
        continuedFromRecord: Bool,
        ranged: Bool
    ) async -> CLIFailure {
        if error.code == .checksumMismatch, let checksum {
            return await mismatch(checksum, partial: files.partial, record: files.record, target: files.target)
        }
        // -C can continue only what its record describes: a record that cannot be written (the
        // disk that filled up holds it too) means nothing can be continued.
        var recordFailure: String?
        if let data = error.resumeData, !ranged {
            do {
                try writer.written(data)
            } catch {
                recordFailure = (error as? CLIFailure)?.message ?? "\(error)"
            }
        }
        let continuable = error.resumeData != nil && recordFailure == nil && !ranged
        // A download that started afresh and cannot be continued leaves nothing behind. (One continued
        // from a record keeps what it had.)
        if !continuable, !continuedFromRecord, !files.destination.isSpecial, !interruption.happened {
            Self.remove(files.partial, files.record)
        }
        if interruption.happened {
            return CLIFailure(
                "interrupted; \(continuable ? "continue with -C" : "start again") to finish \(files.target)",
                status: .interrupted
            )
        }
        var failure = CLIFailure(error, context: url.absoluteString)
        if continuable {
            failure.message += "; the partial download is kept: continue with -C"
        } else if let recordFailure, !continuedFromRecord {
            failure.message += "; its resume record could not be written either (\(recordFailure)), so nothing was kept: download it again"
        } else if error.code == .cannotWriteToFile, !continuedFromRecord, !files.destination.isSpecial {
            failure.message += decodesContent
                ? "; nothing was kept (a decoded download cannot be continued): download it again"
                : "; nothing was kept: download it again"
        }
        return failure
    }

    /// The report of a finished download (`--json`, `-w`).
    func report(
        _ result: Downloader.Result,
        transactions: [TransactionMetrics],
        resumedFrom: Int64,
        start: Date,
        seconds: Double
    ) -> Report {
        let last = transactions.last
        return Report(
            url: url.absoluteString,
            path: result.path,
            status: result.status,
            bytes: result.length,
            resumedFrom: resumedFrom,
            seconds: seconds,
            sha256: checksum?.algorithm == .sha256 ? checksum?.hex : nil,
            checksum: checksum?.description,
            connections: connections,
            protocol: result.protocolName,
            tlsVersion: last?.negotiatedTLSProtocolVersion,
            proxy: last?.proxy,
            remoteAddress: last?.remoteAddress,
            fetchType: Self.fetchTypeName(last?.resourceFetchType ?? .networkLoad),
            writeOut: WriteOut.Values(
                transactions: transactions,
                status: result.status,
                protocolName: result.protocolName,
                url: result.finalRequest.url,
                redirects: result.redirectCount,
                bytes: result.length - resumedFrom,
                start: start,
                total: seconds,
                file: target.asGiven(result.path)
            )
        )
    }
}
