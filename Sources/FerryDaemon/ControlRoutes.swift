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

    func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        let v1 = router.group(RouterPath(ControlAPI.prefix))
        var routes = RouteTable(group: v1)
        routes.on("daemon", .get) { _, _ in try await self.handle { try await self.status() } }
        routes.on("tasks", .get) { _, _ in try await self.handle { try await self.allTasks() } }
        routes.on("sessions/:session/attach", .post) { request, context in
            do {
                return try self.attach(request, context)
            } catch {
                return self.errorResponse(error)
            }
        }
        routes.on("sessions/:session/tasks", .get) { _, context in
            try await self.handle { try await self.tasks(try self.session(context)) }
        }
        routes.on("sessions/:session/tasks", .post) { request, context in
            try await self.handle(status: .created) { try await self.create(request, context) }
        }
        routes.on("sessions/:session/tasks/batch", .post) { request, context in
            try await self.handle(status: .created) { try await self.createBatch(request, context) }
        }
        for action in ["resume", "suspend", "cancel"] {
            routes.on("sessions/:session/tasks/:task/\(action)", .post) { request, context in
                try await self.handle { try await self.act(action, request, context) }
            }
        }
        routes.on("sessions/:session/events", .get) { _, context in
            try await self.handle { try self.pendingEvents(try self.session(context)) }
        }
        routes.on("sessions/:session/ack", .post) { request, context in
            try await self.handleNoContent { try await self.acknowledge(request, context) }
        }
        routes.on("sessions/:session/launch", .put) { request, context in
            try await self.handleNoContent { try await self.registerLaunch(request, context) }
        }
        routes.on("sessions/:session/invalidate", .post) { request, context in
            try await self.handleNoContent { try await self.invalidate(request, context) }
        }
        routes.refuseOtherMethods { allowed in
            var headers = HTTPFields()
            headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
            return self.errorResponse(
                MethodNotAllowed(message: "this route answers \(allowed.map(\.rawValue).joined(separator: " and ")) only"),
                headers: headers
            )
        }
        return router
    }

    // MARK: Handlers

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

    private func allTasks() async throws -> [BackgroundTaskInfo] {
        await scheduler.withLiveProgress(try store.sessions().flatMap { try store.tasks(session: $0).map(\.info) })
    }

    private func tasks(_ session: String) async throws -> [BackgroundTaskInfo] {
        await scheduler.withLiveProgress(try store.tasks(session: session).map(\.info))
    }

    private func create(_ request: Request, _ context: BasicRequestContext) async throws -> BackgroundTaskInfo {
        let session = try session(context)
        let creation = try await decode(ControlAPI.TaskCreation.self, from: request)
        return try await scheduler.create(session: session, [try newTask(creation, in: session)])[0].info
    }

    /// A creation request checked (D6: nothing is stored until every check has passed).
    private func newTask(_ creation: ControlAPI.TaskCreation, in session: String) throws -> FerryStore.NewTask {
        let resumeData = creation.resumeData
        let target = resumeData?.originalRequest ?? creation.request
        try target.validate()
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
            guard let file = creation.uploadFile, !file.isEmpty else {
                throw FerryError(.fileDoesNotExist, "a background upload needs uploadFile, the path of the file to send")
            }
            try Conflict.onFailure { try Self.checkReadableFile(file) }
        case .download:
            guard creation.uploadFile == nil else {
                throw FerryError(.invalidOperation, "a download has no upload file; use kind \"upload\"")
            }
            if let destination = creation.destination {
                guard destination.hasPrefix("/"), !destination.hasSuffix("/"), !destination.contains("\0") else {
                    throw FerryError(
                        .invalidOperation,
                        "the destination must be an absolute file path, not '\(destination)'"
                    )
                }
                try Conflict.onFailure { try Self.checkDestinationDirectory(destination) }
            }
            if let mode = creation.destinationMode, !(0...0o777).contains(mode) {
                throw FerryError(.invalidOperation, "destinationMode holds permission bits, 0 to 0o777 (511)")
            }
        }
        if let connection = creation.connection {
            try connection.validate()
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
            discretionary: creation.discretionary == true || !hub.isAttached(session),
            resourceTimeout: creation.resourceTimeout,
            destination: creation.destination,
            destinationMode: creation.destinationMode,
            connection: creation.connection
        )
        task.suspended = creation.start == false
        task.resumeData = resumeData
        task.identifier = creation.taskIdentifier
        return task
    }

    /// `POST …/tasks/batch`: many tasks in one transaction (all or none), each checked as a single
    /// creation is.
    private func createBatch(_ request: Request, _ context: BasicRequestContext) async throws -> [BackgroundTaskInfo] {
        let session = try session(context)
        let batch = try await decode(ControlAPI.TaskBatch.self, from: request)
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
            } catch let conflict as Conflict {
                throw Conflict(error: FerryError(conflict.error.code, "task \(index) of the batch: \(conflict.error.message)"))
            } catch let error as FerryError {
                throw FerryError(error.code, "task \(index) of the batch: \(error.message)")
            }
        }
        return try await scheduler.create(session: session, tasks).map(\.info)
    }

    private func act(_ action: String, _ request: Request, _ context: BasicRequestContext) async throws -> Data {
        let session = try session(context)
        guard let identifier = context.parameters.get("task", as: Int.self) else {
            throw FerryError(.invalidOperation, "the task identifier must be a whole number from 1 to 2^63-1")
        }
        guard let task = try? store.task(session: session, identifier: identifier) else {
            throw NotFound("no task \(identifier) in session '\(session)'")
        }
        let encoder = JSONEncoder()
        switch action {
        case "resume":
            let update = try await decodeIfPresent(ControlAPI.TaskUpdate.self, from: request)
            if let priority = update?.priority, !(0...1).contains(priority) {
                throw FerryError(.invalidOperation, "priority must be between 0 and 1")
            }
            return try encoder.encode(try await scheduler.resume(task.key, update: update).info)
        case "suspend":
            return try encoder.encode(try await scheduler.suspend(task.key).info)
        default:
            let cancellation =
                try await decodeIfPresent(ControlAPI.Cancellation.self, from: request) ?? ControlAPI.Cancellation()
            let (after, resumeData) = try await scheduler.cancel(
                task.key,
                produceResumeData: cancellation.produceResumeData,
                reason: cancellation.reason
            )
            return try encoder.encode(ControlAPI.CancelResult(task: after.info, resumeData: resumeData))
        }
    }

    private func pendingEvents(_ session: String) throws -> [BackgroundEvent] {
        try store.events(session: session).map { try backgroundEvent($0) }
    }

    private func acknowledge(_ request: Request, _ context: BasicRequestContext) async throws {
        let session = try session(context)
        let acknowledgement = try await decode(ControlAPI.Acknowledgement.self, from: request)
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

    private func registerLaunch(_ request: Request, _ context: BasicRequestContext) async throws {
        let session = try session(context)
        let registration = try await decode(ControlAPI.LaunchRegistration.self, from: request)
        guard registration.command.unicodeScalars.contains(where: { (0x21...0x7E).contains($0.value) }),
            !registration.command.contains("\0")
        else {
            throw FerryError(
                .invalidOperation,
                "the launch command has no visible ASCII character or holds a NUL byte; give a shell command"
            )
        }
        try store.registerSession(session)
        try store.setLaunchCommand(session: session, command: registration.command)
    }

    private func invalidate(_ request: Request, _ context: BasicRequestContext) async throws {
        let session = try session(context)
        let invalidation = try await decode(ControlAPI.Invalidation.self, from: request)
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

    private func attach(_ request: Request, _ context: BasicRequestContext) throws -> Response {
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
        }
    }

    // MARK: Plumbing

    /// A 404 with a message.
    struct NotFound: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    private func session(_ context: BasicRequestContext) throws -> String {
        let raw = context.parameters.get("session") ?? ""
        let session = raw.removingPercentEncoding ?? raw
        try ControlAPI.validateIdentifier(session)
        return session
    }

    private func decode<Value: Decodable>(_ type: Value.Type, from request: Request) async throws -> Value {
        guard let value = try await decodeIfPresent(type, from: request) else {
            throw FerryError(.invalidOperation, "the request needs a JSON body (\(Value.self))")
        }
        return value
    }

    private func decodeIfPresent<Value: Decodable>(_ type: Value.Type, from request: Request) async throws -> Value? {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: ControlAPI.maximumBodySize)
        } catch {
            throw PayloadTooLarge()
        }
        guard buffer.readableBytes > 0 else { return nil }
        do {
            return try JSONDecoder().decode(Value.self, from: Data(buffer.readableBytesView))
        } catch {
            throw FerryError(.invalidOperation, "the JSON body is not a valid \(Value.self): \(Self.describe(error))")
        }
    }

    struct PayloadTooLarge: Error {}

    /// A well-formed request that the daemon's files contradict (a missing upload file, a destination
    /// directory that does not exist or cannot be written): 409, with the reason.
    struct Conflict: Error {
        let error: FerryError

        static func onFailure(_ check: () throws -> Void) throws {
            do { try check() } catch let error as FerryError { throw Conflict(error: error) }
        }
    }

    /// A method the route does not answer (405, with Allow).
    struct MethodNotAllowed: Error {
        let message: String
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

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "the field '\(key.stringValue)' is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty
                ? context.debugDescription
                : "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        default: "\(error)"
        }
    }

    /// Runs a handler and answers with its value as JSON, or with the error it threw.
    private func handle<Value: Encodable & Sendable>(
        status: HTTPResponse.Status = .ok,
        _ body: () async throws -> Value
    ) async throws -> Response {
        do {
            let value = try await body()
            let data: Data
            if let raw = value as? Data { data = raw } else { data = try JSONEncoder().encode(value) }
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
        } catch {
            return errorResponse(error)
        }
    }

    /// Runs a handler and answers 204, or with the error it threw.
    private func handleNoContent(_ body: () async throws -> Void) async throws -> Response {
        do {
            try await body()
            return Response(status: .noContent)
        } catch {
            return errorResponse(error)
        }
    }

    private func errorResponse(_ error: any Error, headers extra: HTTPFields = [:]) -> Response {
        let (status, ferryError): (HTTPResponse.Status, FerryError)
        switch error {
        case let error as FerryError:
            switch error.code {
            case .backgroundSessionInUseByAnotherProcess: status = .conflict
            case .cannotWriteToFile, .cannotCreateFile, .cannotMoveFile, .unknown: status = .internalServerError
            default: status = .badRequest
            }
            ferryError = error
        case let error as NotFound:
            (status, ferryError) = (.notFound, FerryError(.invalidOperation, error.message))
        case let conflict as Conflict:
            (status, ferryError) = (.conflict, conflict.error)
        case let error as MethodNotAllowed:
            (status, ferryError) = (.methodNotAllowed, FerryError(.invalidOperation, error.message))
        case is PayloadTooLarge:
            (status, ferryError) = (
                .contentTooLarge,
                FerryError(.invalidOperation, "the request body is larger than \(ControlAPI.maximumBodySize) bytes")
            )
        case let error as FerryStoreError where error.isConflict:
            (status, ferryError) = (.conflict, FerryError(.invalidOperation, error.message))
        case let error as FerryStoreError:
            (status, ferryError) = (.internalServerError, FerryError(.unknown, error.message))
        default:
            (status, ferryError) = (.internalServerError, FerryError(.unknown, "\(error)"))
        }
        if status == .internalServerError { logger.error("control API: \(ferryError)") }
        var headers = extra
        headers[.contentType] = "application/json"
        let data = (try? JSONEncoder().encode(ControlAPI.ErrorBody(error: ferryError))) ?? Data()
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
