import FerryCore
import FerryEngine
import FerryStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The control API's routes (``ControlAPI`` lists them; `docs/openapi.json` describes them). Every
/// request is checked before anything changes: a malformed body, an unknown task or a bad identifier
/// gets a 4xx with a ``ControlAPI/ErrorBody`` and changes nothing (D6).
struct ControlRoutes: Sendable {
    let store: FerryStore
    let hub: EventHub
    let scheduler: Scheduler
    let launcher: Launcher
    let configuration: DaemonConfiguration
    let logger: Logger
    /// What `/metrics` renders.
    var metrics = DaemonMetrics()
    /// The status page `ferry ui` asks for; nil: refused (503).
    var statusPage: StatusPageServer? = nil
    /// The network's state and settings; nil: `/v1/network` and `/v1/bandwidth` are refused (503).
    var network: NetworkControl? = nil

    private var housekeeper: Housekeeper {
        Housekeeper(store: store, configuration: configuration, metrics: metrics, logger: logger)
    }

    /// The routes, on Hummingbird's codable plumbing: each handler decodes its body (``ControlBodyDecoder``),
    /// asks the ``Scheduler`` or the store, and returns a value Hummingbird encodes; whatever it throws
    /// becomes a ``ControlError`` answer.
    func router() -> Router<ControlContext> {
        let router = Router(context: ControlContext.self)
        router.add(middleware: ControlErrorMiddleware(logger: logger))
        var root = RouteTable(group: router.group())
        root.on(String(ControlAPI.metricsPath.dropFirst()), .get) { _, _ in try await self.metricsText() }
        root.refuseOtherMethods(Self.methodNotAllowed)
        let v1 = router.group(RouterPath(ControlAPI.prefix))
        var routes = RouteTable(group: v1)
        routes.on("daemon", .get) { _, _ in try await self.status() }
        routes.on("clean", .post) { request, _ in
            let cleaning =
                try await ControlBodyDecoder.decodeIfPresent(ControlAPI.Cleaning.self, from: request)
                ?? ControlAPI.Cleaning()
            if let age = cleaning.olderThan, !(age >= 0 && age.isFinite) {
                throw FerryError(.invalidOperation, "olderThan is a number of seconds, 0 or more")
            }
            if let session = cleaning.session { try ControlAPI.validateIdentifier(session) }
            return try self.housekeeper.clean(olderThan: cleaning.olderThan, session: cleaning.session)
        }
        routes.on("ui", .post) { _, _ in
            guard let statusPage = self.statusPage else {
                throw ControlError(.serviceUnavailable, FerryError(.invalidOperation, "this daemon serves no status page"))
            }
            return try await statusPage.start()
        }
        routes.on("ui", .delete) { _, _ in
            await self.statusPage?.stop()
            return HTTPResponse.Status.noContent
        }
        routes.on("network", .get) { _, _ in try await self.networkControl().report() }
        routes.on("network", .put) { request, context in
            let update = try await request.decode(as: ControlAPI.NetworkUpdate.self, context: context)
            return try await self.networkControl().update(update)
        }
        routes.on("bandwidth", .get) { _, _ in try await self.networkControl().bandwidth() }
        routes.on("bandwidth", .put) { request, context in
            let limit = try await request.decode(as: ControlAPI.BandwidthLimit.self, context: context)
            if let bytes = limit.bytesPerSecond, bytes < 0 {
                throw FerryError(.invalidOperation, "bytesPerSecond is 0 (no limit) or more")
            }
            return try await self.networkControl().setBandwidth(limit)
        }
        routes.on("tasks", .get) { request, _ in
            let secrets = request.uri.queryParameters.get("secrets")
            guard secrets == nil || secrets == "show" else {
                throw FerryError(.invalidOperation, "secrets takes one value, show, not '\(secrets!)'")
            }
            return try await self.allTasks(showingSecrets: secrets == "show")
        }
        routes.on("sessions/:session/attach", .post) { request, context in try self.attach(request, context) }
        routes.on("sessions/:session/tasks", .get) { _, context in try await self.tasks(try self.session(context)) }
        routes.on("sessions/:session/tasks", .post) { request, context in
            EditedResponse(status: .created, response: try await self.create(request, context))
        }
        routes.on("sessions/:session/tasks/batch", .post) { request, context in
            EditedResponse(status: .created, response: try await self.createBatch(request, context))
        }
        routes.on("sessions/:session/tasks/:task", .patch) { request, context in
            let task = try self.task(context)
            let update = try await request.decode(as: ControlAPI.TaskUpdate.self, context: context)
            try update.validate()
            return await self.scheduler.info(of: try await self.scheduler.update(task.key, update))
        }
        routes.on("sessions/:session/tasks/:task/resume", .post) { request, context in
            try await self.resume(request, context)
        }
        routes.on("sessions/:session/tasks/:task/suspend", .post) { _, context in try await self.suspend(context) }
        routes.on("sessions/:session/tasks/:task/cancel", .post) { request, context in
            try await self.cancel(request, context)
        }
        routes.on("sessions/:session/events", .get) { _, context in
            try self.pendingEvents(try self.session(context))
        }
        routes.on("sessions/:session/ack", .post) { request, context in
            try await self.acknowledge(request, context)
            return HTTPResponse.Status.noContent
        }
        routes.on("sessions/:session/launch", .put) { request, context in
            try await self.registerLaunch(request, context)
            return HTTPResponse.Status.noContent
        }
        routes.on("sessions/:session/launch", .delete) { _, context in
            // sessionSendsLaunchEvents false: no command runs for this session's events.
            try store.removeLaunchCommand(session: try self.session(context))
            return HTTPResponse.Status.noContent
        }
        routes.on("sessions/:session/invalidate", .post) { request, context in
            try await self.invalidate(request, context)
            return HTTPResponse.Status.noContent
        }
        routes.refuseOtherMethods(Self.methodNotAllowed)
        return router
    }

    /// The answer to a method a known path does not take.
    private static func methodNotAllowed(_ allowed: [HTTPRequest.Method]) -> ControlError {
        var headers = HTTPFields()
        headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
        return ControlError(
            .methodNotAllowed,
            FerryError(.invalidOperation, "this route answers \(allowed.map(\.rawValue).joined(separator: " and ")) only"),
            headers: headers
        )
    }

    // MARK: Handlers

    /// The metrics in the Prometheus text format (version 0.0.4).
    func metricsText() async throws -> Response {
        let text = try metrics.exposition(
            store: store,
            rate: await scheduler.currentRate(),
            network: try await scheduler.networkSample()
        )
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    private func networkControl() throws -> NetworkControl {
        guard let network else {
            throw ControlError(.serviceUnavailable, FerryError(.invalidOperation, "this daemon does not watch the network"))
        }
        return network
    }

    private func status() async throws -> ControlAPI.DaemonStatus {
        ControlAPI.DaemonStatus(
            version: FerryVersion.current,
            pid: getpid(),
            socketPath: configuration.paths.socket,
            stateDirectory: configuration.paths.stateDirectory,
            running: await scheduler.runningCount,
            maximumConcurrentTransfers: configuration.maximumConcurrentTransfers
        )
    }

    /// Every session's tasks: credentials and query tokens redacted unless `secrets=show` asks for them.
    private func allTasks(showingSecrets: Bool) async throws -> [BackgroundTaskInfo] {
        let tasks = try await scheduler.listing(session: nil)
        return showingSecrets ? tasks : tasks.map(configuration.redaction.task)
    }

    private func tasks(_ session: String) async throws -> [BackgroundTaskInfo] {
        try await scheduler.listing(session: session)
    }

    private func create(_ request: Request, _ context: ControlContext) async throws -> BackgroundTaskInfo {
        let session = try session(context)
        let creation = try await request.decode(as: ControlAPI.TaskCreation.self, context: context)
        return try await scheduler.create(session: session, [try newTask(creation, in: session)])[0].info
    }

    /// A creation request checked (D6: nothing is stored until every check has passed).
    private func newTask(_ creation: ControlAPI.TaskCreation, in session: String) throws -> FerryStore.NewTask {
        let resumeData = creation.resumeData
        let target = resumeData?.originalRequest ?? creation.request
        try target.validate()
        // The request resume data continues from is stored and sent too: the same rules.
        try resumeData?.currentRequest.validate()
        // The partial file is written when the task runs: an absolute path, checked like a destination
        // (a relative one would be made in ferryd's working directory).
        if let partial = resumeData?.partialFilePath, !ControlAPI.isAbsoluteFilePath(partial) {
            throw FerryError(.invalidOperation, "resume data's partialFilePath must be an absolute file path, not '\(partial)'")
        }
        guard let scheme = target.url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw FerryError(
                .unsupportedURL,
                "background sessions transfer http and https URLs only, not \(target.url.absoluteString)"
            )
        }
        // The URL grammar of docs/openapi.json, for every URL the creation carries.
        for url in [creation.request.url, resumeData?.originalRequest.url, resumeData?.currentRequest.url]
        where url.map({ !ControlAPI.isHTTPURL($0.absoluteString) }) ?? false {
            throw FerryError(
                .badURL,
                "\(url!.absoluteString) is not an absolute http or https URL (RFC 3986, percent-encoded)",
                failingURL: url!.absoluteString
            )
        }
        if let priority = creation.priority, !(0...1).contains(priority) {
            throw FerryError(.invalidOperation, "priority must be between 0 and 1")
        }
        if let chosen = creation.taskIdentifier, !(1...ControlAPI.TaskCreation.maximumTaskIdentifier).contains(chosen) {
            throw FerryError(.invalidOperation, "taskIdentifier must be a whole number from 1 to 2^53")
        }
        if let timeout = creation.resourceTimeout, !(timeout > 0 && timeout <= 365 * 24 * 3600) {
            throw FerryError(.invalidOperation, "resourceTimeout must be a number of seconds above 0, at most a year")
        }
        switch creation.kind {
        case .upload:
            guard resumeData == nil else {
                throw FerryError(.invalidOperation, "resume data continues downloads, not uploads")
            }
        case .download:
            guard creation.uploadFile == nil, creation.chunks == nil else {
                throw FerryError(.invalidOperation, "a download has no upload file, form or chunks; use kind \"upload\"")
            }
        }
        try creation.options.validate(for: creation.kind)
        if let limit = creation.bandwidthLimit, limit <= 0 {
            throw FerryError(.invalidOperation, "bandwidthLimit is bytes a second, above 0 (leave it out for none)")
        }
        try ControlAPI.validateEarliestBeginTime(creation.earliestBeginTime)
        // What the daemon's file system says: the rest of the checks.
        if creation.kind == .upload { try Self.checkUploadBody(creation) }
        if let destination = creation.destination, creation.kind == .download {
            try ControlError.conflict { try Self.checkDestinationDirectory(destination) }
        }
        if let connection = creation.connection {
            // A cookie file to load that cannot be read: the daemon's file system contradicts a
            // well-formed request (409, as for a missing upload file).
            if let load = connection.cookies?.load {
                try ControlError.conflict {
                    guard (try? String(contentsOfFile: load, encoding: .utf8)) != nil else {
                        throw FerryError(.invalidOperation, "cannot read the cookie file \(load)")
                    }
                }
            }
            // Refused now, not when the transfer starts: CA and identity PEM, usable settings. The
            // transport made here is the one the task will use (one per distinct settings).
            _ = try scheduler.transports.transport(for: connection)
        }
        var task = FerryStore.NewTask(
            kind: creation.kind,
            request: target,
            bodyFile: creation.uploadFile,
            taskDescription: creation.taskDescription,
            priority: creation.priority ?? 0.5,
            discretionary: creation.discretionary ?? !hub.isAttached(session),
            resourceTimeout: creation.resourceTimeout
        )
        task.options = creation.options
        task.suspended = creation.start == false
        task.allowsMetered = target.allowsCellularAccess && target.allowsExpensiveNetworkAccess
        task.allowsConstrained = target.allowsConstrainedNetworkAccess
        task.bandwidthLimit = creation.bandwidthLimit
        task.resumeData = resumeData
        task.identifier = creation.taskIdentifier
        task.chunks = creation.chunks
        task.earliestBegin = creation.earliestBeginTime.map(Date.init(timeIntervalSince1970:))
        return task
    }

    /// An upload's body: a readable file (sent whole, resumably, or in tus chunks), or a multipart form
    /// whose files are readable now.
    private static func checkUploadBody(_ creation: ControlAPI.TaskCreation) throws {
        if let form = creation.form {
            guard creation.uploadFile == nil else {
                throw FerryError(.invalidOperation, "an upload sends uploadFile or a form, not both")
            }
            guard !form.isEmpty, form.count <= 1000 else {
                throw FerryError(.invalidOperation, "a form has 1 to 1000 fields, not \(form.count)")
            }
            guard creation.chunks == nil, !creation.request.resumableUpload else {
                throw FerryError(.invalidOperation, "chunks and resumableUpload send a file, not a form")
            }
            for field in form { try field.validate() }
            try ControlError.conflict {
                for file in form.compactMap(\.file) { try Self.checkReadableFile(file) }
            }
            return
        }
        guard let file = creation.uploadFile, !file.isEmpty else {
            throw FerryError(
                .fileDoesNotExist,
                "a background upload needs uploadFile, the path of the file to send (or a form)"
            )
        }
        if let chunks = creation.chunks {
            guard ControlAPI.TaskCreation.chunkCounts.contains(chunks) else {
                throw FerryError(.invalidOperation, "chunks takes 1 to \(ControlAPI.TaskCreation.chunkCounts.upperBound), not \(chunks)")
            }
            guard !creation.request.resumableUpload else {
                throw FerryError(.invalidOperation, "chunks (tus) and resumableUpload are different protocols; ask for one")
            }
        }
        try ControlError.conflict { try checkReadableFile(file) }
    }

    /// `POST …/tasks/batch`: many tasks in one transaction (all or none), each checked as a single
    /// creation is.
    private func createBatch(_ request: Request, _ context: ControlContext) async throws -> [BackgroundTaskInfo] {
        let session = try session(context)
        let batch = try await request.decode(as: ControlAPI.TaskBatch.self, context: context)
        guard !batch.tasks.isEmpty, batch.tasks.count <= ControlAPI.TaskBatch.maximumCount else {
            throw FerryError(
                .invalidOperation,
                "a batch holds 1 to \(ControlAPI.TaskBatch.maximumCount) tasks, not \(batch.tasks.count)"
            )
        }
        var tasks: [FerryStore.NewTask] = []
        for (index, creation) in batch.tasks.enumerated() {
            do {
                tasks.append(try newTask(creation, in: session))
            } catch let refusal as ControlError {
                throw ControlError(
                    refusal.status,
                    FerryError(refusal.error.code, "task \(index) of the batch: \(refusal.error.message)")
                )
            } catch let error as FerryError {
                throw FerryError(error.code, "task \(index) of the batch: \(error.message)")
            }
        }
        return try await scheduler.create(session: session, tasks).map(\.info)
    }

    /// The task a route names.
    private func task(_ context: ControlContext) throws -> StoredTask {
        let session = try session(context)
        guard let identifier = context.parameters.get("task", as: Int.self) else {
            throw FerryError(.invalidOperation, "the task identifier must be a whole number from 1 to 2^63-1")
        }
        guard let task = try? store.task(session: session, identifier: identifier) else {
            throw ControlError.notFound("no task \(identifier) in session '\(session)'")
        }
        return task
    }

    private func resume(_ request: Request, _ context: ControlContext) async throws -> BackgroundTaskInfo {
        let task = try task(context)
        let update = try await ControlBodyDecoder.decodeIfPresent(ControlAPI.TaskUpdate.self, from: request)
        try update?.validate()
        return try await scheduler.resume(task.key, update: update).info
    }

    private func suspend(_ context: ControlContext) async throws -> BackgroundTaskInfo {
        try await scheduler.suspend(try task(context).key).info
    }

    private func cancel(_ request: Request, _ context: ControlContext) async throws -> ControlAPI.CancelResult {
        let task = try task(context)
        let cancellation =
            try await ControlBodyDecoder.decodeIfPresent(ControlAPI.Cancellation.self, from: request)
            ?? ControlAPI.Cancellation()
        let (after, resumeData) = try await scheduler.cancel(
            task.key,
            produceResumeData: cancellation.produceResumeData,
            reason: cancellation.reason
        )
        return ControlAPI.CancelResult(task: after.info, resumeData: resumeData)
    }

    private func pendingEvents(_ session: String) throws -> [BackgroundEvent] {
        try store.events(session: session).map { try backgroundEvent($0) }
    }

    private func acknowledge(_ request: Request, _ context: ControlContext) async throws {
        let session = try session(context)
        let acknowledgement = try await request.decode(as: ControlAPI.Acknowledgement.self, context: context)
        guard acknowledgement.through >= 0 else {
            throw FerryError(.invalidOperation, "through is an event sequence number, 0 or more")
        }
        // A delivered file that the client did not move goes now (D2, S6.9).
        for event in try store.events(session: session)
        where event.sequence <= acknowledgement.through && event.kind == .didFinishDownloading {
            if let location = Scheduler.deliveredFile(event.payload, configuration) { try? FileManager.default.removeItem(atPath: location) }
        }
        try store.acknowledge(session: session, through: acknowledgement.through)
    }

    private func registerLaunch(_ request: Request, _ context: ControlContext) async throws {
        let session = try session(context)
        let registration = try await request.decode(as: ControlAPI.LaunchRegistration.self, context: context)
        guard registration.command.unicodeScalars.contains(where: { (0x21...0x7E).contains($0.value) }),
            !registration.command.utf8.contains(0)
        else {
            throw FerryError(
                .invalidOperation,
                "the launch command has no visible ASCII character or holds a NUL byte; give a shell command"
            )
        }
        try store.registerSession(session)
        try store.setLaunchCommand(session: session, command: registration.command)
    }

    private func invalidate(_ request: Request, _ context: ControlContext) async throws {
        let session = try session(context)
        let invalidation = try await request.decode(as: ControlAPI.Invalidation.self, context: context)
        guard invalidation.cancelTasks else { return }
        if let reason = invalidation.reason {
            // A force quit (S6.4 scenario 5): cancelled, no launch; the next attach hears of it.
            await launcher.suppressUntilAttach(session)
            try await scheduler.cancelAll(session: session, reason: reason, forceQuit: true)
            return
        }
        try await scheduler.cancelAll(session: session, reason: "the session was invalidated and cancelled", forceQuit: false)
        try await scheduler.forget(session: session)
        hub.signal(session, .close)
    }

    // MARK: Attach

    private func attach(_ request: Request, _ context: ControlContext) throws -> Response {
        let session = try session(context)
        let pid = request.uri.queryParameters.get("pid").flatMap { Int32($0) }
        try store.registerSession(session)
        let (attachment, signals) = try hub.attach(session: session, pid: pid)
        logger.info("client \(pid.map(String.init) ?? "?") attached to '\(session)'")
        let (store, hub, launcher, logger) = (store, hub, launcher, logger)
        let heartbeat = configuration.heartbeatInterval
        let routes = self
        let body = ResponseBody { writer in
            await launcher.clientAttached(session)
            let beats = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(Int64(heartbeat * 1000)))
                    hub.signal(session, .heartbeat)
                }
            }
            defer {
                beats.cancel()
                hub.detach(session: session, id: attachment)
                logger.info("client detached from '\(session)'")
                Task { await launcher.eventsJournaled(session) }
            }
            try await writer.write(routes.line(BackgroundEvent(kind: .attached, message: FerryVersion.current)))
            // The backlog first, in journal order, then didFinishEvents once (S6.3).
            let backlog = try store.events(session: session)
            var last: Int64 = 0
            for event in backlog {
                try await writer.write(routes.line(try routes.backgroundEvent(event)))
                last = event.sequence
            }
            if !backlog.isEmpty { try await writer.write(routes.line(BackgroundEvent(kind: .didFinishEvents))) }
            signalLoop: for await signal in signals {
                switch signal {
                case .journal:
                    for event in try store.events(session: session, after: last) {
                        try await writer.write(routes.line(try routes.backgroundEvent(event)))
                        last = event.sequence
                    }
                case .event(let event):
                    try await writer.write(routes.line(event))
                case .heartbeat:
                    try await writer.write(routes.line(BackgroundEvent(kind: .heartbeat)))
                case .close:
                    break signalLoop
                }
            }
            try await writer.finish(nil)
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/x-ndjson"
        return Response(status: .ok, headers: headers, body: body)
    }

    private func line(_ event: BackgroundEvent) throws -> ByteBuffer {
        var data = try JSONEncoder().encode(event)
        data.append(0x0A)
        return ByteBuffer(bytes: data)
    }

    /// A journaled event as the client sees it, with its task as it is now.
    private func backgroundEvent(_ event: StoredEvent) throws -> BackgroundEvent {
        let task = try event.taskIdentifier.map { try store.task(session: event.session, identifier: $0).info }
        switch event.kind {
        case .didFinishDownloading:
            return BackgroundEvent(
                kind: .didFinishDownloading,
                sequence: event.sequence,
                task: task,
                location: Scheduler.location(event.payload)
            )
        case .didComplete:
            let error = try event.payload.map { try JSONDecoder().decode(FerryError.self, from: $0) }
            return BackgroundEvent(kind: .didComplete, sequence: event.sequence, task: task, error: error)
        case .taskIsWaitingForConnectivity:
            return BackgroundEvent(
                kind: .taskIsWaitingForConnectivity,
                sequence: event.sequence,
                task: task,
                message: event.payload.map { String(decoding: $0, as: UTF8.self) }
            )
        }
    }

    // MARK: Plumbing

    private func session(_ context: ControlContext) throws -> String {
        let raw = context.parameters.get("session") ?? ""
        let session = raw.removingPercentEncoding ?? raw
        try ControlAPI.validateIdentifier(session)
        return session
    }

    /// The daemon's files against an absolute destination path: its directory exists and can be written,
    /// and the path is not a directory.
    private static func checkDestinationDirectory(_ path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw FerryError(.cannotCreateFile, "the destination's directory \(directory) does not exist")
        }
        guard FileManager.default.isWritableFile(atPath: directory) else {
            throw FerryError(.cannotWriteToFile, "the daemon cannot write in \(directory)")
        }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw FerryError(.fileIsDirectory, "the destination \(path) is a directory")
        }
    }

    private static func checkReadableFile(_ path: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw FerryError(.fileDoesNotExist, "the upload file \(path) does not exist")
        }
        guard !isDirectory.boolValue else {
            throw FerryError(.fileIsDirectory, "the upload file \(path) is a directory")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw FerryError(.noPermissionsToReadFile, "the daemon cannot read the upload file \(path)")
        }
    }
}
