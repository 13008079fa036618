public import FerryCore
public import Foundation
import GRDB

/// The daemon's durable state on SQLite in WAL mode (GRDB): sessions, tasks, the event journal and
/// launch registrations. Every method is one transaction; a state change and the event it causes are
/// written together (D2), so a crash leaves either both or neither.
///
/// Thread safe: reads run concurrently, writes one at a time.
public final class FerryStore: Sendable {
    let pool: DatabasePool
    /// The database file.
    public let path: String

    /// Opens (or creates) the store at `path` and brings its schema up to date.
    /// - Throws: ``FerryStoreError`` when the file cannot be opened or is not a Ferry store.
    public init(path: String, clock: @escaping @Sendable () -> Date = Date.init) throws {
        self.path = path
        self.clock = clock
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(5)
            pool = try DatabasePool(path: path, configuration: configuration)
            try StoreSchema.migrator.migrate(pool)
        } catch {
            throw FerryStoreError("cannot open the state database at \(path): \(error)")
        }
    }

    private let clock: @Sendable () -> Date

    /// The journal mode SQLite reports (`wal`).
    public func journalMode() throws -> String {
        try pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    /// The migrations applied, oldest first.
    public func appliedMigrations() throws -> [String] {
        try pool.read { db in try StoreSchema.migrator.appliedMigrations(db) }
    }

    // MARK: Sessions

    /// Records a session identifier (idempotent).
    public func registerSession(_ identifier: String) throws {
        let now = clock()
        try write { db in try Self.registerSession(identifier, at: now, db) }
    }

    private static func registerSession(_ identifier: String, at now: Date, _ db: Database) throws {
        try db.cachedStatement(
            sql: "INSERT INTO session (identifier, createdAt) VALUES (?, ?) ON CONFLICT(identifier) DO NOTHING"
        ).execute(arguments: [identifier, now])
    }

    /// The session identifiers, sorted.
    public func sessions() throws -> [String] {
        try pool.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM session ORDER BY identifier") }
    }

    /// Forgets a session, its tasks, events and launch registration (invalidateAndCancel, S6.11).
    public func removeSession(_ identifier: String) throws {
        try write { db in try db.execute(sql: "DELETE FROM session WHERE identifier = ?", arguments: [identifier]) }
    }

    // MARK: Tasks

    /// A task to create: what the client asked for.
    public struct NewTask: Sendable {
        public var kind: StoredTask.Kind
        public var request: Request
        public var bodyFile: String?
        public var taskDescription: String?
        public var priority: Double
        public var discretionary: Bool
        public var resourceTimeout: Double?
        public var destination: String?
        public var destinationMode: Int?
        public var connection: ConnectionSettings?
        /// Created suspended (resumed later by a client) instead of pending.
        public var suspended = false
        /// The identifier the client chose; nil: the session's next.
        public var identifier: Int?
        /// A download continued from resume data: its partial file and progress, recorded with the task.
        public var resumeData: ResumeData?
        /// May use a metered network.
        public var allowsMetered = true
        /// May use a constrained network.
        public var allowsConstrained = true
        /// The task's own bandwidth limit, bytes a second; nil: none.
        public var bandwidthLimit: Int64?
        /// An upload whose body is a multipart form of these fields.
        public var form: [FormField]?
        /// An upload in tus chunks, this many at once.
        public var chunks: Int?
        /// The task's own redirect, retry and speed limits.
        public var limits: TaskLimits?
        /// A download's request body.
        public var requestBody: Data?
        /// A download whose Content-Encoding is undone.
        public var decodesContent = false
        /// Not before: the task stays pending until then.
        public var earliestBegin: Date?

        /// A task description; see ``StoredTask`` for the fields.
        public init(
            kind: StoredTask.Kind,
            request: Request,
            bodyFile: String? = nil,
            taskDescription: String? = nil,
            priority: Double = 0.5,
            discretionary: Bool = false,
            resourceTimeout: Double? = nil,
            destination: String? = nil,
            destinationMode: Int? = nil,
            connection: ConnectionSettings? = nil
        ) {
            self.connection = connection
            self.kind = kind
            self.request = request
            self.bodyFile = bodyFile
            self.taskDescription = taskDescription
            self.priority = priority
            self.discretionary = discretionary
            self.resourceTimeout = resourceTimeout
            self.destination = destination
            self.destinationMode = destinationMode
        }
    }

    /// Creates a pending task with the session's next identifier, in one transaction.
    /// - Parameter registeringSession: registers the session first when it is new (otherwise an
    ///   unknown session is an error).
    /// - Throws: ``FerryStoreError`` when the session is not registered.
    public func createTask(
        registeringSession: Bool = false,
        session: String,
        kind: StoredTask.Kind,
        request: Request,
        bodyFile: String? = nil,
        taskDescription: String? = nil,
        priority: Double = 0.5,
        discretionary: Bool = false,
        resourceTimeout: Double? = nil,
        destination: String? = nil,
        destinationMode: Int? = nil
    ) throws -> StoredTask {
        let task = NewTask(
            kind: kind,
            request: request,
            bodyFile: bodyFile,
            taskDescription: taskDescription,
            priority: priority,
            discretionary: discretionary,
            resourceTimeout: resourceTimeout,
            destination: destination,
            destinationMode: destinationMode
        )
        return try createTasks(registeringSession: registeringSession, session: session, [task])[0]
    }

    /// Creates pending tasks with the session's next identifiers, in order, all in one transaction
    /// (all or none).
    /// - Throws: ``FerryStoreError`` when the session is not registered.
    /// - Parameter limit: the most tasks the session may hold with these (finished ones count until they
    ///   are removed); past it nothing is created and the error is a conflict.
    public func createTasks(
        registeringSession: Bool = false,
        session: String,
        limit: Int = .max,
        _ tasks: [NewTask]
    ) throws -> [StoredTask] {
        let encoder = JSONEncoder()
        let encoded = try tasks.map { try encoder.encode($0.request) }
        let now = clock()
        return try write { db in
            if registeringSession { try Self.registerSession(session, at: now, db) }
            if limit < .max {
                let held = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM task WHERE session = ?"), arguments: [session]) ?? 0
                guard held + tasks.count <= limit else {
                    throw FerryStoreError(
                        "session '\(session)' holds \(held) tasks, and a session holds at most \(limit) (finished ones count until removed): wait for some to finish and remove them (`ferry clean`), or use another session",
                        conflict: true
                    )
                }
            }
            var created: [StoredTask] = []
            created.reserveCapacity(tasks.count)
            for (task, request) in zip(tasks, encoded) {
                created.append(try Self.insert(task, encoded: request, session: session, at: now, db))
            }
            return created
        }
    }

    private static func insert(
        _ task: NewTask,
        encoded: Data,
        session: String,
        at now: Date,
        _ db: Database
    ) throws -> StoredTask {
        guard let next = try takeNext(.nextTaskIdentifier, of: session, db) else {
            throw FerryStoreError("no session '\(session)'; register it before creating tasks")
        }
        var identifier = Int(next)
        if let chosen = task.identifier {
            let taken = try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM task WHERE session = ? AND taskIdentifier = ?)"),
                arguments: [session, chosen]
            )
            guard taken != true else {
                throw FerryStoreError("session '\(session)' has a task \(chosen) already; choose another identifier", conflict: true)
            }
            identifier = chosen
            // The counter stays past every identifier in use: the session's next ones are never taken.
            try db.cachedStatement(
                sql: "UPDATE session SET nextTaskIdentifier = MAX(nextTaskIdentifier, ?) WHERE identifier = ?"
            ).execute(arguments: [Int64(chosen) + 1, session])
        }
        let deadline = task.resourceTimeout.map { now.addingTimeInterval($0) }
        // The task is born in its first state, with its resume data: no moment exists in which the
        // scheduler could start a task that was asked to wait, or start it without its progress.
        let state: StoredTask.State = task.suspended ? .suspended : .pending
        let chunkedUpload = task.chunks.map(ChunkedUploadProgress.init(chunksInFlight:))
        try db.cachedStatement(
            sql: """
                INSERT INTO task (session, taskIdentifier, kind, state, originalRequest, currentRequest, bodyFile,
                                  taskDescription, priority, discretionary, resourceDeadline,
                                  destination, destinationMode, connection, createdAt, updatedAt,
                                  allowsMetered, allowsConstrained, bandwidthLimit, form, chunkedUpload,
                                  limits, requestBody, decodesContent, earliestBegin)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            session, identifier, task.kind.rawValue, state.rawValue, encoded,
            try task.resumeData.map { try JSONEncoder().encode($0.currentRequest) }, task.bodyFile,
            task.taskDescription, task.priority, task.discretionary, deadline, task.destination,
            task.destinationMode, try task.connection.map { try JSONEncoder().encode($0) }, now, now,
            task.allowsMetered, task.allowsConstrained, task.bandwidthLimit,
            try task.form.map { try JSONEncoder().encode($0) }, try chunkedUpload.map { try JSONEncoder().encode($0) },
            try task.limits.map { try JSONEncoder().encode($0) }, task.requestBody, task.decodesContent,
            task.earliestBegin,
        ])
        // What was just inserted, without reading it back (decoding the request again costs more than
        // the insert).
        var stored = StoredTask(
            session: session,
            taskIdentifier: identifier,
            kind: task.kind,
            state: state,
            originalRequest: task.request,
            bodyFile: task.bodyFile,
            taskDescription: task.taskDescription,
            priority: task.priority,
            isDiscretionary: task.discretionary,
            // As it reads back: SQLite keeps milliseconds.
            resourceDeadline: deadline.map(Self.asStored),
            destination: task.destination,
            destinationMode: task.destinationMode,
            connection: task.connection,
            bytesReceived: 0,
            bytesSent: 0
        )
        stored.allowsMetered = task.allowsMetered
        stored.allowsConstrained = task.allowsConstrained
        stored.bandwidthLimit = task.bandwidthLimit
        stored.form = task.form
        stored.chunkedUpload = chunkedUpload
        stored.limits = task.limits
        stored.requestBody = task.requestBody
        stored.decodesContent = task.decodesContent
        stored.earliestBegin = task.earliestBegin.map(Self.asStored)
        if let resumeData = task.resumeData {
            try Progress(resumeData).write(db, session: session, identifier: identifier, at: now)
            stored.currentRequest = resumeData.currentRequest
            stored.partialPath = resumeData.partialFilePath
            stored.bytesReceived = resumeData.bytesReceived
            stored.expectedLength = resumeData.expectedLength
            stored.entityTag = resumeData.entityTag
            stored.lastModified = resumeData.lastModified
            stored.segments = resumeData.segments
        }
        return stored
    }

    /// One task.
    /// - Throws: ``FerryStoreError`` when there is no such task.
    public func task(session: String, identifier: Int) throws -> StoredTask {
        try pool.read { db in try Self.task(db, session: session, identifier: identifier) }
    }

    /// The session's tasks by identifier.
    public func tasks(session: String) throws -> [StoredTask] {
        try pool.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM task WHERE session = ? ORDER BY taskIdentifier",
                arguments: [session]
            ).map(StoredTask.init(row:))
        }
    }

    /// Every session's tasks in `state`, the order the scheduler starts them in: non-discretionary first,
    /// then higher priority, then older.
    /// - Parameter network: when given, only the tasks whose policy lets them run on it, as far as SQL
    ///   can tell (metered, constrained and power; whether a host is on this machine is left to the
    ///   caller, ``FerryCore/NetworkPolicy/waitReason(in:host:)``).
    public func tasks(
        in state: StoredTask.State,
        limit: Int = Int.max,
        network: NetworkState? = nil,
        beginningBy now: Date? = nil
    ) throws -> [StoredTask] {
        var filter = network.flatMap { Self.heldBack(by: $0, offline: false) }.map { " AND NOT (\($0))" } ?? ""
        var arguments: StatementArguments = [state.rawValue]
        if let now {
            filter += " AND (earliestBegin IS NULL OR earliestBegin <= ?)"
            arguments += [now]
        }
        arguments += [Int64(clamping: limit)]
        return try pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM task WHERE state = ?\(filter)
                    ORDER BY discretionary, priority DESC, createdAt, session, taskIdentifier
                    LIMIT ?
                    """,
                arguments: arguments
            ).map(StoredTask.init(row:))
        }
    }

    /// The soonest not-before time of a pending task still held at `now`: when the scheduler looks again.
    public func nextBegin(after now: Date) throws -> Date? {
        try pool.read { db in
            try Date.fetchOne(
                db,
                sql: "SELECT MIN(earliestBegin) FROM task WHERE state = 'pending' AND earliestBegin > ?",
                arguments: [now]
            )
        }
    }

    /// A date as the store gives it back: SQLite keeps milliseconds.
    static func asStored(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }

    /// Changes what the client may change after creating a task: its description, priority, network
    /// policy and bandwidth limit.
    public func updateTask(session: String, identifier: Int, taskDescription: String?, priority: Double?) throws {
        try updateTask(
            session: session,
            identifier: identifier,
            ControlAPI.TaskUpdate(taskDescription: taskDescription, priority: priority)
        )
    }

    /// Applies `change` to a task, in one transaction (nil leaves a value as it is; a bandwidth limit of
    /// 0 removes the task's).
    public func updateTask(session: String, identifier: Int, _ change: ControlAPI.TaskUpdate) throws {
        let limit: Int64?? = change.bandwidthLimit.map { $0 > 0 ? $0 : nil }
        try write { db in
            try db.execute(
                sql: """
                    UPDATE task SET taskDescription = COALESCE(?, taskDescription), priority = COALESCE(?, priority),
                                    allowsMetered = COALESCE(?, allowsMetered),
                                    allowsConstrained = COALESCE(?, allowsConstrained),
                                    bandwidthLimit = CASE WHEN ? THEN ? ELSE bandwidthLimit END,
                                    earliestBegin = COALESCE(?, earliestBegin),
                                    updatedAt = ?
                    WHERE session = ? AND taskIdentifier = ?
                    """,
                arguments: [
                    change.taskDescription, change.priority, change.allowsMeteredNetwork, change.allowsConstrainedNetwork,
                    limit != nil, limit ?? nil, change.earliestBeginTime.map(Date.init(timeIntervalSince1970:)), clock(),
                    session, identifier,
                ]
            )
            try Self.requireChange(db, session: session, identifier: identifier)
        }
    }

    /// Pending tasks that `network` does not let run, as far as SQL can tell (offline: every one; the
    /// caller keeps those to this machine running).
    /// - Parameter onlyUnreported: only those not yet told they wait.
    public func pendingHeldBack(by network: NetworkState, onlyUnreported: Bool) throws -> [StoredTask] {
        guard let heldBack = Self.heldBack(by: network, offline: true) else { return [] }
        return try pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM task WHERE state = 'pending'\(onlyUnreported ? " AND NOT waitReported" : "")
                    AND (\(heldBack))
                    ORDER BY session, taskIdentifier
                    """
            ).map(StoredTask.init(row:))
        }
    }

    /// ``FerryCore/NetworkPolicy/waitReason(in:host:)`` as an SQL condition on the task table: true for a
    /// task `network` holds back (metered, constrained, on battery; and, with `offline`, every task when
    /// there is no default route, the host being left to the caller); nil when it holds back none.
    private static func heldBack(by network: NetworkState, offline: Bool) -> String? {
        var reasons: [String] = []
        if offline, !network.isOnline { reasons.append("1") }
        if network.isMetered { reasons.append("NOT allowsMetered OR discretionary") }
        if network.isConstrained { reasons.append("NOT allowsConstrained") }
        if network.power == .battery { reasons.append("discretionary") }
        return reasons.isEmpty ? nil : reasons.map { "(\($0))" }.joined(separator: " OR ")
    }

    /// Journals taskIsWaitingForConnectivity for a task that has not had it, with `reason`, and marks it
    /// as told, in one transaction.
    /// - Returns: the event, or nil when the task had it already (or is gone).
    @discardableResult
    public func reportWaiting(session: String, identifier: Int, reason: String) throws -> StoredEvent? {
        try reportWaiting([(session, identifier, reason)]).first
    }

    /// ``reportWaiting(session:identifier:reason:)`` for many tasks in one transaction (a batch created
    /// while the network holds it back costs one sync, not one a task).
    /// - Returns: the events journaled (tasks told already, or gone, have none).
    @discardableResult
    public func reportWaiting(_ tasks: [(session: String, identifier: Int, reason: String)]) throws -> [StoredEvent] {
        guard !tasks.isEmpty else { return [] }
        return try write { db in
            var events: [StoredEvent] = []
            for task in tasks {
                try db.cachedStatement(
                    sql: "UPDATE task SET waitReported = 1 WHERE session = ? AND taskIdentifier = ? AND NOT waitReported"
                ).execute(arguments: [task.session, task.identifier])
                guard db.changesCount > 0 else { continue }
                events.append(
                    try Self.journal(
                        db,
                        session: task.session,
                        task: task.identifier,
                        kind: .taskIsWaitingForConnectivity,
                        payload: Data(task.reason.utf8),
                        at: clock()
                    )
                )
            }
            return events
        }
    }

    /// Records the request a task's transfer ended up at (after redirects).
    public func setCurrentRequest(session: String, identifier: Int, request: Request) throws {
        let encoded = try JSONEncoder().encode(request)
        try write { db in
            try db.execute(
                sql: "UPDATE task SET currentRequest = ?, updatedAt = ? WHERE session = ? AND taskIdentifier = ?",
                arguments: [encoded, clock(), session, identifier]
            )
            try Self.requireChange(db, session: session, identifier: identifier)
        }
    }

    /// Records where a resumable upload stands (its upload resource and the offset the server confirmed),
    /// or forgets it (nil). Recorded before the upload goes on, so a restarted daemon continues it.
    public func recordUploadState(session: String, identifier: Int, state: UploadResumption?) throws {
        let encoded = try state.map { try JSONEncoder().encode($0) }
        try write { db in
            try db.execute(
                sql: """
                    UPDATE task SET uploadState = ?, bytesSent = MAX(bytesSent, ?), updatedAt = ?
                    WHERE session = ? AND taskIdentifier = ?
                    """,
                arguments: [encoded, state?.offset ?? 0, clock(), session, identifier]
            )
            try Self.requireChange(db, session: session, identifier: identifier)
        }
    }

    /// Records where an upload in tus chunks stands (the chunks the server has stored, and the file they
    /// came from); its bytes sent become the stored chunks' bytes. Recorded as each chunk is stored, so a
    /// restarted daemon sends only the others.
    public func recordChunkedUpload(session: String, identifier: Int, progress: ChunkedUploadProgress) throws {
        let encoded = try JSONEncoder().encode(progress)
        try write { db in
            try db.execute(
                sql: """
                    UPDATE task SET chunkedUpload = ?, bytesSent = ?, updatedAt = ?
                    WHERE session = ? AND taskIdentifier = ?
                    """,
                arguments: [encoded, progress.storedBytes, clock(), session, identifier]
            )
            try Self.requireChange(db, session: session, identifier: identifier)
        }
    }

    /// Records the final response's head (status and fields) and, for uploads, the bytes sent.
    public func recordResponse(
        session: String,
        identifier: Int,
        status: Int,
        headers: Headers,
        bytesSent: Int64? = nil
    ) throws {
        let encoded = try JSONEncoder().encode(headers)
        try write { db in
            try db.execute(
                sql: """
                    UPDATE task SET responseStatus = ?, responseHeaders = ?, bytesSent = COALESCE(?, bytesSent),
                                    updatedAt = ?
                    WHERE session = ? AND taskIdentifier = ?
                    """,
                arguments: [status, encoded, bytesSent, clock(), session, identifier]
            )
            try Self.requireChange(db, session: session, identifier: identifier)
        }
    }

    /// Records the bytes a download has on disk. Call only after the partial file is flushed
    /// (fdatasync) up to `bytesReceived` (D1).
    public func recordProgress(
        session: String,
        identifier: Int,
        partialPath: String,
        bytesReceived: Int64,
        expectedLength: Int64?,
        entityTag: String?,
        lastModified: String?,
        segments: SegmentPlan? = nil
    ) throws {
        let progress = try Progress(
            partialPath: partialPath,
            bytesReceived: bytesReceived,
            expectedLength: expectedLength,
            entityTag: entityTag,
            lastModified: lastModified,
            segments: segments
        )
        try write { db in
            try progress.write(db, session: session, identifier: identifier, at: clock())
            try Self.requireChange(db, session: session, identifier: identifier)
        }
    }

    /// A download's recorded progress, ready to write (``recordProgress`` and a task created from resume
    /// data write it alike).
    private struct Progress {
        let partialPath: String
        let bytesReceived: Int64
        let expectedLength: Int64?
        let entityTag: String?
        let lastModified: String?
        let segments: Data?

        init(
            partialPath: String,
            bytesReceived: Int64,
            expectedLength: Int64?,
            entityTag: String?,
            lastModified: String?,
            segments: SegmentPlan?
        ) throws {
            self.partialPath = partialPath
            self.bytesReceived = bytesReceived
            self.expectedLength = expectedLength
            self.entityTag = entityTag
            self.lastModified = lastModified
            self.segments = try segments.map { try JSONEncoder().encode($0) }
        }

        init(_ resumeData: ResumeData) throws {
            try self.init(
                partialPath: resumeData.partialFilePath,
                bytesReceived: resumeData.bytesReceived,
                expectedLength: resumeData.expectedLength,
                entityTag: resumeData.entityTag,
                lastModified: resumeData.lastModified,
                segments: resumeData.segments
            )
        }

        func write(_ db: Database, session: String, identifier: Int, at now: Date) throws {
            try db.execute(
                sql: """
                    UPDATE task SET partialPath = ?, bytesReceived = ?, expectedLength = ?, entityTag = ?,
                                    lastModified = ?, segments = ?, updatedAt = ?
                    WHERE session = ? AND taskIdentifier = ?
                    """,
                arguments: [
                    partialPath, bytesReceived, expectedLength, entityTag, lastModified, segments, now, session,
                    identifier,
                ]
            )
        }
    }

    /// Moves a task to `state` and, in the same transaction, journals `event` (if any) with the
    /// session's next sequence number (D2). A completed task keeps `error`.
    /// - Returns: the journaled event, if any.
    /// - Throws: ``FerryStoreError`` when there is no such task; nothing is written then.
    @discardableResult
    public func transition(
        session: String,
        identifier: Int,
        to state: StoredTask.State,
        error: FerryError? = nil,
        event: (kind: StoredEvent.Kind, payload: Data?)? = nil
    ) throws -> StoredEvent? {
        try transition(
            session: session,
            identifier: identifier,
            to: state,
            error: error,
            events: event.map { [$0] } ?? []
        ).first
    }

    /// Moves a task to `state` and journals `events`, in order, in the same transaction (D2).
    /// - Returns: the journaled events.
    /// - Throws: ``FerryStoreError`` when there is no such task; nothing is written then.
    @discardableResult
    public func transition(
        session: String,
        identifier: Int,
        to state: StoredTask.State,
        error: FerryError? = nil,
        events: [(kind: StoredEvent.Kind, payload: Data?)]
    ) throws -> [StoredEvent] {
        try write { db in
            try db.execute(
                sql: """
                    UPDATE task SET state = ?, errorCode = ?, errorName = ?, errorMessage = ?, updatedAt = ?
                    WHERE session = ? AND taskIdentifier = ?
                    """,
                arguments: [
                    state.rawValue, error?.code.rawValue, error?.code.name, error?.message, clock(), session,
                    identifier,
                ]
            )
            try Self.requireChange(db, session: session, identifier: identifier)
            return try events.map { event in
                try Self.journal(
                    db,
                    session: session,
                    task: identifier,
                    kind: event.kind,
                    payload: event.payload,
                    at: clock()
                )
            }
        }
    }

    /// Completes several tasks of one session with their errors, journaling each one's didComplete, all
    /// in one transaction (cancelling a session's hundreds of tasks costs one sync, not hundreds). Tasks
    /// that are gone or already completed are left out.
    /// - Returns: the identifiers completed here.
    @discardableResult
    public func complete(session: String, _ tasks: [(identifier: Int, error: FerryError)]) throws -> [Int] {
        let encoder = JSONEncoder()
        let payloads = try tasks.map { try encoder.encode($0.error) }
        return try write { db in
            var completed: [Int] = []
            for ((identifier, error), payload) in zip(tasks, payloads) {
                try db.execute(
                    sql: """
                        UPDATE task SET state = ?, errorCode = ?, errorName = ?, errorMessage = ?, updatedAt = ?
                        WHERE session = ? AND taskIdentifier = ? AND state != ?
                        """,
                    arguments: [
                        StoredTask.State.completed.rawValue, error.code.rawValue, error.code.name, error.message,
                        clock(), session, identifier, StoredTask.State.completed.rawValue,
                    ]
                )
                guard db.changesCount > 0 else { continue }
                _ = try Self.journal(
                    db,
                    session: session,
                    task: identifier,
                    kind: .didComplete,
                    payload: payload,
                    at: clock()
                )
                completed.append(identifier)
            }
            return completed
        }
    }

    /// D4 after a restart: every running task goes back to pending (its transfer resumes from the
    /// recorded offset with If-Range). Returns the tasks that were moved.
    public func recoverAfterRestart() throws -> [StoredTask] {
        try write { db in
            let running = try Row.fetchAll(
                db,
                sql: "SELECT * FROM task WHERE state = ? ORDER BY session, taskIdentifier",
                arguments: [StoredTask.State.running.rawValue]
            ).map(StoredTask.init(row:))
            try db.execute(
                sql: "UPDATE task SET state = ?, updatedAt = ? WHERE state = ?",
                arguments: [StoredTask.State.pending.rawValue, clock(), StoredTask.State.running.rawValue]
            )
            return running.map { task in
                var task = task
                task.state = .pending
                return task
            }
        }
    }

    // MARK: Events

    /// The session's unacknowledged events after `sequence`, in order.
    public func events(session: String, after sequence: Int64 = 0) throws -> [StoredEvent] {
        try pool.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM event WHERE session = ? AND sequence > ? ORDER BY sequence",
                arguments: [session, sequence]
            ).map(StoredEvent.init(row:))
        }
    }

    /// The client has handled every event up to `sequence`: they are removed.
    public func acknowledge(session: String, through sequence: Int64) throws {
        try write { db in
            try db.execute(
                sql: "DELETE FROM event WHERE session = ? AND sequence <= ?",
                arguments: [session, sequence]
            )
        }
    }

    // MARK: Launch registrations

    /// Registers (or replaces) the command the daemon runs when the session has events and no client
    /// (S6.5).
    public func setLaunchCommand(session: String, command: String) throws {
        try write { db in
            try db.execute(
                sql: """
                    INSERT INTO launch (session, command) VALUES (?, ?)
                    ON CONFLICT(session) DO UPDATE SET command = excluded.command
                    """,
                arguments: [session, command]
            )
        }
    }

    /// Forgets the session's launch command, if any (the limiter's state goes with it).
    public func removeLaunchCommand(session: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM launch WHERE session = ?", arguments: [session])
        }
    }

    /// The session's launch command, if one is registered.
    public func launchCommand(session: String) throws -> String? {
        try pool.read { db in
            try String.fetchOne(db, sql: "SELECT command FROM launch WHERE session = ?", arguments: [session])
        }
    }

    /// The launch limiter's state (S6.6): the delay before the next launch may happen and when the last
    /// one happened.
    public func launchLimiter(session: String) throws -> (delaySeconds: Double, lastLaunchAt: Date?)? {
        try pool.read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT delaySeconds, lastLaunchAt FROM launch WHERE session = ?",
                    arguments: [session]
                )
            else { return nil }
            return (row["delaySeconds"], row["lastLaunchAt"])
        }
    }

    /// Saves the launch limiter's state.
    public func setLaunchLimiter(session: String, delaySeconds: Double, lastLaunchAt: Date?) throws {
        try write { db in
            try db.execute(
                sql: "UPDATE launch SET delaySeconds = ?, lastLaunchAt = ? WHERE session = ?",
                arguments: [delaySeconds, lastLaunchAt, session]
            )
        }
    }

    // MARK: Helpers

    func write<Value: Sendable>(_ body: @Sendable (Database) throws -> Value) throws -> Value {
        do {
            return try pool.write(body)
        } catch let error as FerryStoreError {
            throw error
        } catch {
            throw FerryStoreError("the state database refused a write: \(error)")
        }
    }

    private static func task(_ db: Database, session: String, identifier: Int) throws -> StoredTask {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM task WHERE session = ? AND taskIdentifier = ?"),
                arguments: [session, identifier]
            )
        else { throw FerryStoreError("no task \(identifier) in session '\(session)'") }
        return try StoredTask(row: row)
    }

    private static func requireChange(_ db: Database, session: String, identifier: Int) throws {
        guard db.changesCount > 0 else { throw FerryStoreError("no task \(identifier) in session '\(session)'") }
    }

    /// A session's counters: never reused, so identifiers and sequence numbers only grow.
    private enum Counter: String {
        case nextTaskIdentifier, nextEventSequence
    }

    /// Takes a session's next value of `counter` and advances it; nil when there is no such session.
    private static func takeNext(_ counter: Counter, of session: String, _ db: Database) throws -> Int64? {
        let column = counter.rawValue
        guard
            let value = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT \(column) FROM session WHERE identifier = ?"),
                arguments: [session]
            )
        else { return nil }
        try db.cachedStatement(sql: "UPDATE session SET \(column) = \(column) + 1 WHERE identifier = ?")
            .execute(arguments: [session])
        return value
    }

    private static func journal(
        _ db: Database,
        session: String,
        task: Int,
        kind: StoredEvent.Kind,
        payload: Data?,
        at now: Date
    ) throws -> StoredEvent {
        guard let sequence = try takeNext(.nextEventSequence, of: session, db) else {
            throw FerryStoreError("no session '\(session)'")
        }
        try db.execute(
            sql:
                "INSERT INTO event (session, sequence, taskIdentifier, kind, payload, createdAt) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [session, sequence, task, kind.rawValue, payload, now]
        )
        return StoredEvent(session: session, sequence: sequence, taskIdentifier: task, kind: kind, payload: payload)
    }
}
