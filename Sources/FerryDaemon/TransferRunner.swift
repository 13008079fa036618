import FerryCore
import FerryEngine
import FerryStore
import Foundation
import Logging
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs one background task's transfer once, with FerryEngine (the same code as in-process sessions),
/// and records what must survive a crash: checkpoints of the partial file (D1), the response, and the
/// delivered file. It changes no task state: the ``Scheduler`` does, from the outcome.
struct TransferRunner: Sendable {
    /// How one run ended.
    enum Outcome: Sendable {
        /// A download is complete and moved to `location` in the delivery directory.
        case downloaded(location: String)
        /// An upload's response has arrived and is recorded.
        case uploaded
        /// The transfer failed or was stopped; partial data is checkpointed.
        case failed(FerryError)
        /// The server is busy (503 or 429 with Retry-After): try again after `after` seconds.
        case retryLater(after: Double, FerryError)
    }

    let task: StoredTask
    /// Where the run writes its progress (never its state).
    let record: TaskRecord
    let hub: EventHub
    let configuration: DaemonConfiguration
    let transport: any HTTPTransport
    let meter: ProgressMeter
    /// Where checkpoint sync times go; nil: nowhere.
    var metrics: DaemonMetrics? = nil

    func run() async -> Outcome {
        let outcome = await runOnce()
        saveCookieJar()
        return outcome
    }

    /// Writes the task's cookie jar (curl's `-c`), when it asked for one: every cookie of its store,
    /// session cookies included, as curl does at exit.
    private func saveCookieJar() {
        guard let jar = task.connection?.cookies?.jar, let store = (transport as? SessionTransport)?.cookies else { return }
        do {
            try store.write(netscapeFile: jar)
        } catch {
            Logger(label: "ferryd").warning("task \(task.taskIdentifier): \(error)")
        }
    }

    private func runOnce() async -> Outcome {
        if secondsLeft <= 0 {
            return .failed(Self.resourceTimedOut(task))
        }
        do {
            let (kind, meter) = (task.kind, meter)
            // curl's --speed-limit for this task: a try under its floor fails with timedOut (retried
            // like a lost connection, its partial data kept).
            return try await SpeedFloor.enforce(
                task.limits?.speedFloor,
                bytes: { meter.total },
                now: { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
            ) {
                switch kind {
                case .download: try await download()
                case .upload: try await upload()
                }
            }
        } catch is SpeedFloor.TooSlow {
            let floor = task.limits!.speedFloor!
            var error = FerryError(
                .timedOut,
                "the transfer stayed under \(floor.bytesPerSecond) bytes a second for \(Int(floor.seconds)) seconds (the task's speed limit); the partial data is kept",
                failingURL: task.originalRequest.url.absoluteString
            )
            error.resumeData = (try? record.stored())?.resumeData
            return .failed(error)
        } catch let error as FerryError {
            return .failed(error)
        } catch is CancellationError {
            return .failed(FerryError(.cancelled, "the transfer was stopped"))
        } catch {
            return .failed(FerryError(.unknown, "the transfer failed: \(error)"))
        }
    }

    /// Seconds until the task's resource deadline (creation plus the session's
    /// timeoutIntervalForResource), or the daemon's own limit for one run, whichever comes first.
    private var secondsLeft: Double {
        guard let end = task.resourceDeadline else { return configuration.resourceTimeout }
        return min(configuration.resourceTimeout, end.timeIntervalSince(configuration.clock.now()))
    }

    /// The error of a task whose resource deadline has passed.
    static func resourceTimedOut(_ task: StoredTask) -> FerryError {
        var error = FerryError(
            .timedOut,
            "the task's resource timeout (timeoutIntervalForResource) passed before it finished",
            failingURL: (task.currentRequest ?? task.originalRequest).url.absoluteString
        )
        error.resumeData = task.resumeData
        return error
    }

    /// Where a finished download is handed over: a name of its own, known before the move, so that a
    /// daemon killed between the move and its record finds the file instead of fetching it again.
    static func deliveryPath(of task: StoredTask, _ configuration: DaemonConfiguration) -> String {
        configuration.paths.deliveryDirectory + "/\(fileStem(of: task)).download"
    }

    /// A download that finished before the daemon died but was not recorded as completed: its file is
    /// in place, whole. Only a finished download is ever renamed there, so its presence is the proof.
    static func finishedFile(of task: StoredTask, _ configuration: DaemonConfiguration) -> String? {
        guard task.kind == .download, task.state != .completed else { return nil }
        var candidates = [deliveryPath(of: task, configuration)]
        // Recorded at the delivery path (or the destination) with every byte: the move was recorded.
        if let recorded = task.partialPath, recorded != candidates[0], recorded == task.destination,
            task.expectedLength == task.bytesReceived, task.bytesReceived > 0
        {
            // A device or FIFO has no size to check: the record of every byte is the proof.
            if DownloadDestination.isSpecialFile(recorded) { return recorded }
            candidates.append(recorded)
        }
        for path in candidates {
            guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber else {
                continue
            }
            if path == candidates[0] || size.int64Value == task.bytesReceived { return path }
        }
        return nil
    }

    private var fileStem: String { Self.fileStem(of: task) }

    /// The name stem of a task's files: unique per session and task, safe for any identifier.
    private static func fileStem(of task: StoredTask) -> String {
        let safe = task.session.unicodeScalars.map { scalar -> String in
            CharacterSet.alphanumerics.contains(scalar) || scalar == "." || scalar == "-" ? String(scalar) : "_"
        }.joined()
        return "\(safe.prefix(64))-\(UInt32(truncatingIfNeeded: task.session.hashValueStable))-\(task.taskIdentifier)"
    }

    private func download() async throws -> Outcome {
        // A destination that is a device or FIFO is written through: no partial file, no rename.
        let destination = try task.destination.map(DownloadDestination.init(inspecting:))
        let special = destination?.isSpecial == true
        let partial =
            special
            ? destination!.path : task.partialPath ?? configuration.paths.partialDirectory + "/\(fileStem).part"
        if special, let destination, task.partialPath == destination.path {
            // An earlier run already wrote part of the body into it; those bytes cannot be taken back.
            throw FerryError(
                .cannotWriteToFile,
                destination.notAFile("the download was interrupted after writing to its destination and cannot be continued")
                    + "; create the task again",
                failingURL: task.originalRequest.url.absoluteString
            )
        }
        // A partial file outside ferryd's own directory (handed over by `ferry get -C --background`)
        // is locked as a foreground download locks it: one writer at a time.
        let lock =
            special || partial.hasPrefix(configuration.paths.partialDirectory + "/")
            ? nil : try await PartFileLock.acquire(partial)
        defer { lock?.release() }
        // A run that writes into a device or FIFO cannot be repeated once a byte went out: it is marked
        // before it starts (a kill then finds the mark), and unmarked if it ends having written nothing.
        if special {
            try recordNoProgress(at: partial)
        }
        let (events, wroteThrough) = downloadEvents()
        let plan = downloadPlan(partial: partial, destination: destination, events: events)
        let outcome: DownloadDriver.Outcome
        do {
            var driver = DownloadDriver(transport: transport)
            driver.downloader.requestBody = task.requestBody.map { ByteBuffer(bytes: $0) }
            driver.downloader.decodesContent = task.decodesContent == true
            if let redirects = task.limits?.maximumRedirects { driver.downloader.maximumRedirects = redirects }
            outcome = try await driver.run(plan)
        } catch var error as FerryError {
            if special, !wroteThrough() {
                try? recordNoProgress(at: configuration.paths.partialDirectory + "/\(fileStem).part")
            }
            checkpointAfterFailure(error.resumeData)
            if error.resumeData == nil, let stored = try? record.stored() {
                error.resumeData = stored.resumeData
            }
            throw error
        }
        let result: Downloader.Result
        switch outcome {
        case .tryLater(let delay, var error):
            if error.resumeData == nil, let stored = try? record.stored() { error.resumeData = stored.resumeData }
            return .retryLater(after: delay, error)
        case .refused(_, let error):
            try recordNoProgress(at: partial)
            throw error
        case .finished(let finished):
            result = finished
        }
        if destination != nil {
            try recordFinished(at: result.path, result)
            return .downloaded(location: result.path)
        }
        // Hand over: the file is made durable and moved out of the partial directory (S6.9).
        try DownloadDriver.synchronize(partial)
        let location = Self.deliveryPath(of: task, configuration)
        do {
            try FileManager.default.moveItem(atPath: partial, toPath: location)
        } catch {
            throw FerryError(.cannotMoveFile, "cannot move the finished download to \(location): \(error)")
        }
        try recordFinished(at: location, result)
        return .downloaded(location: location)
    }

    /// A download's events: checkpoints into the store, progress through the meter to the session's
    /// clients. The second value says whether any byte was written (for a device or FIFO, which cannot
    /// be written again).
    private func downloadEvents() -> (Downloader.Events, wroteThrough: @Sendable () -> Bool) {
        let (hub, meter, session, info) = (hub, meter, task.session, task.info)
        let wroteThrough = Mutex(false)
        var events = Downloader.Events()
        events.checkpoint = Downloader.Checkpoint(
            into: record,
            everyBytes: configuration.checkpointBytes,
            everySeconds: configuration.checkpointSeconds
        )
        if let metrics { events.checkpoint?.didSynchronize = { metrics.checkpointSynchronized($0) } }
        events.didWrite = { written, total, expected in
            if written > 0 { wroteThrough.withLock { $0 = true } }
            meter.add(written)
            meter.setPosition(total, of: expected)
            guard meter.shouldEmit(now: Int64(DispatchTime.now().uptimeNanoseconds)) else { return }
            var progress = info
            progress.state = .running
            progress.bytesReceived = total
            progress.expectedLength = expected
            let event = BackgroundEvent(kind: .didWriteData, task: progress, bytes: written, totalBytes: total, totalBytesExpected: expected)
            hub.signal(session, .event(event))
        }
        events.didResume = { offset, expected in
            var progress = info
            progress.state = .running
            hub.signal(
                session,
                .event(BackgroundEvent(kind: .didResume, task: progress, totalBytes: offset, totalBytesExpected: expected))
            )
        }
        return (events, { wroteThrough.withLock { $0 } })
    }

    /// The engine's one driver's plan: no waits inside a run (the Scheduler retries without holding a
    /// slot), a busy server's Retry-After handed back, checkpoints into the store, delivery to the
    /// destination, and the last progress event always sent, whatever the rate limit dropped.
    private func downloadPlan(
        partial: String,
        destination: DownloadDestination?,
        events: Downloader.Events
    ) -> DownloadDriver.Plan {
        var plan = DownloadDriver.Plan(
            request: task.originalRequest,
            path: partial,
            deadline: .now() + .nanoseconds(Int64(secondsLeft * 1e9)),
            events: events
        )
        plan.resumeData = task.resumeData
        plan.destination = destination
        plan.durableDelivery = true
        plan.mode = mode_t(task.destinationMode ?? 0o600)
        plan.retries = .handedBack
        plan.now = { [clock = configuration.clock] in clock.now() }
        let (record, hub, session, info) = (record, hub, task.session, task.info)
        plan.didDiscard = { try? record.progress(at: partial, bytes: 0, expected: nil, entityTag: nil, lastModified: nil) }
        plan.didFinishBody = { result in
            try record.response(status: result.status, headers: result.headers, request: result.finalRequest, protocolName: result.protocolName)
            var last = info
            last.bytesReceived = result.length
            last.expectedLength = result.length
            let event = BackgroundEvent(kind: .didWriteData, task: last, bytes: 0, totalBytes: result.length, totalBytesExpected: result.length)
            hub.signal(session, .event(event))
        }
        return plan
    }

    /// The wait a busy answer asks for (503 or 429 with a usable Retry-After), or nil.
    private func retryDelay(_ status: Int, _ headers: Headers) -> Double? {
        guard RetryPolicy.busyStatuses.contains(status), let value = headers["retry-after"] else { return nil }
        return RetryPolicy.retryAfter(value, now: configuration.clock.now())
    }

    /// Records that the task's file at `path` holds nothing to continue from.
    private func recordNoProgress(at path: String) throws {
        try record.progress(at: path, bytes: 0, expected: nil, entityTag: nil, lastModified: nil)
    }

    /// Records the finished file: where it is now, all of it.
    private func recordFinished(at location: String, _ result: Downloader.Result) throws {
        try record.progress(
            at: location,
            bytes: result.length,
            expected: result.length,
            entityTag: result.headers["etag"],
            lastModified: result.headers["last-modified"]
        )
    }

    /// The upload's request and body: the task's file, or its multipart form (with the form's
    /// Content-Type when the request has none), read afresh for every run.
    private func uploadBody() throws -> (Request, TransportRequestBody) {
        var request = task.originalRequest
        if let fields = task.form {
            var form = MultipartFormData()
            for field in fields { try form.append(field) }
            if !request.headers.contains("content-type") {
                request.headers.add(name: "Content-Type", value: form.contentType)
            }
            return (request, form.makeBody())
        }
        guard let file = task.bodyFile else {
            throw FerryError(.fileDoesNotExist, "the upload task has no file to send")
        }
        return (request, try TransportRequestBody.file(path: file))
    }

    private func upload() async throws -> Outcome {
        let (request, body) = try uploadBody()
        guard case .stream(let length, let stream) = body else {
            preconditionFailure("file and form bodies stream")
        }
        let (hub, meter, session) = (hub, meter, task.session)
        let sent = Mutex<Int64>(0)
        let info = task.info
        // Progress as the body leaves (S6.3 didSendBodyData), at most ten events a second; the last
        // one always goes out after the response, below.
        let report = { @Sendable (delta: Int64, total: Int64) in
            meter.add(delta)
            meter.setPosition(total)
            guard meter.shouldEmit(now: Int64(DispatchTime.now().uptimeNanoseconds)) else { return }
            var progress = info
            progress.state = .running
            progress.bytesSent = total
            hub.signal(
                session,
                .event(
                    BackgroundEvent(
                        kind: .didSendBodyData,
                        task: progress,
                        bytes: delta,
                        totalBytes: total,
                        totalBytesExpected: length
                    )
                )
            )
        }
        let deadline = NIODeadline.now() + .nanoseconds(Int64(secondsLeft * 1e9))
        var resumable: DataLoader.Result?
        let track = { @Sendable (delta: Int64, total: Int64) in
            sent.withLock { $0 = total }
            report(delta, total)
        }
        if let file = task.bodyFile, let progress = task.chunkedUpload {
            resumable = try await chunkedUpload(file: file, progress: progress, deadline: deadline, didSend: track)
        } else if let file = task.bodyFile, task.originalRequest.resumableUpload, let length {
            resumable = try await resumableUpload(file: file, length: length, deadline: deadline, didSend: track)
        }
        let loaded: DataLoader.Result
        if let resumable {
            loaded = resumable
        } else {
            let counted = stream.map { @Sendable (chunk: ByteBuffer) -> ByteBuffer in
                let delta = Int64(chunk.readableBytes)
                let total = sent.withLock { total in
                    total += delta
                    return total
                }
                report(delta, total)
                return chunk
            }
            let body = TransportRequestBody.stream(length: length, TransportBodyStream(counted))
            var loader = DataLoader(transport: transport)
            if let redirects = task.limits?.maximumRedirects { loader.maximumRedirects = redirects }
            var hooks = DataLoader.Hooks()
            hooks.collect = false
            let result = try await loader.perform(request, body: body, deadline: deadline, hooks: hooks)
            guard case .loaded(let plain) = result else {
                throw FerryError(.unknown, "the upload's response became a download unexpectedly")
            }
            loaded = plain
        }
        if let delay = retryDelay(loaded.status, loaded.headers) {
            return .retryLater(
                after: delay,
                FerryError(
                    .badServerResponse,
                    "the server answered \(loaded.status) and asked to send again in \(Int(delay.rounded(.up))) s",
                    failingURL: loaded.finalRequest.url.absoluteString
                )
            )
        }
        let size = length ?? sent.withLock { $0 }
        var finished = info
        finished.state = .running
        finished.bytesSent = size
        hub.signal(
            session,
            .event(
                BackgroundEvent(
                    kind: .didSendBodyData,
                    task: finished,
                    bytes: 0,
                    totalBytes: size,
                    totalBytesExpected: length
                )
            )
        )
        try record.response(status: loaded.status, headers: loaded.headers, request: loaded.finalRequest, bytesSent: size)
        return .uploaded
    }

    /// An upload in tus chunks (``StoredTask/chunkedUpload``): the chunks the server stored in earlier
    /// runs are not sent again; each newly stored one is recorded before the upload goes on. Stored
    /// chunks of a file that has changed since are forgotten, and so are those a server no longer knows
    /// (its concatenation answers 400, 404 or 410): the upload then starts over, once.
    private func chunkedUpload(
        file: String,
        progress recorded: ChunkedUploadProgress,
        deadline: NIODeadline,
        didSend: @escaping @Sendable (Int64, Int64) -> Void
    ) async throws -> DataLoader.Result {
        let attributes = try? FileManager.default.attributesOfItem(atPath: file)
        let size = (attributes?[.size] as? NSNumber)?.int64Value ?? -1
        let modified = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        var options = ChunkPlanner.Options()
        options.maximumChunksInFlight = recorded.chunksInFlight
        let uploader = ParallelChunkedUploader(transport: transport, options: options)
        var progress = recorded
        if !progress.matches(fileLength: size, modified: modified) {
            // Chunks of the file as it was: not its bytes now. The server may let them go.
            if !progress.stored.isEmpty {
                await uploader.terminate(progress.stored, of: task.originalRequest, deadline: deadline)
            }
            progress.stored = []
            progress.fileLength = size
            progress.fileModified = modified
        }
        let state = Mutex(progress)
        let record = self.record
        let report = try await uploader.upload(
            task.originalRequest,
            file: file,
            deadline: deadline,
            resumption: ParallelChunkedUploader.Resumption(stored: progress.stored) { chunk in
                try record.chunkedUpload(state.withLock { $0.stored.append(chunk); return $0 })
            },
            didSend: didSend
        )
        let status = report.result.status
        if !progress.stored.isEmpty, [400, 404, 410].contains(status) {
            Logger(label: "ferryd").notice(
                "task \(task.taskIdentifier): the server no longer concatenates the \(progress.stored.count) chunks stored before (it answered \(status)); sending the file again"
            )
            progress.stored = []
            try record.chunkedUpload(progress)
            return try await chunkedUpload(file: file, progress: progress, deadline: deadline, didSend: didSend)
        }
        return report.result
    }

    /// A resumable upload (``Request/resumableUpload``): continues the recorded upload resource, or creates
    /// one; each state the server confirms is recorded before the upload goes on, so after a restart only
    /// what the server lacks is sent. Nil when the server does not speak the protocol (nothing was sent).
    private func resumableUpload(
        file: String,
        length: Int64,
        deadline: NIODeadline,
        didSend: @escaping @Sendable (Int64, Int64) -> Void
    ) async throws -> DataLoader.Result? {
        let record = self.record
        var events = ResumableUploader.Events()
        events.didSend = { delta, total, _ in didSend(delta, total) }
        events.didConfirm = { state in try record.uploadState(state) }
        do {
            let outcome = try await ResumableUploader(transport: transport).upload(
                task.originalRequest,
                body: .file(path: file, length: length),
                resumingFrom: task.uploadState,
                filePath: file,
                deadline: deadline,
                events: events
            )
            guard case .finished(let result) = outcome else { return nil }
            return result
        } catch let error as FerryError where error.resumeData == nil && task.uploadState != nil {
            // The server forgot the upload: the next try starts a new one.
            try? record.uploadState(nil)
            throw error
        }
    }

    /// D1 for a transfer that stopped: the partial file is made durable, then its length recorded.
    private func checkpointAfterFailure(_ resumeData: ResumeData?) {
        guard let resumeData, (try? DownloadDriver.synchronize(resumeData.partialFilePath)) != nil else { return }
        try? record.durable(resumeData)
    }
}

extension String {
    /// FNV-1a of the UTF-8 bytes: stable across processes (Swift's hashValue is seeded per process).
    var hashValueStable: UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }
}
