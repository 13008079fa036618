public import FerryCore
public import Foundation
import GRDB

/// The task table, creating and reading: new tasks (with their first event), one task, a session's
/// tasks, and the next time a task may begin.
extension FerryStore {
    /// A task to create: what the client asked for. Its ``options`` read and write as its own
    /// properties (`task.destination`).
    @dynamicMemberLookup
    public struct NewTask: Sendable {
        public var kind: StoredTask.Kind
        public var request: Request
        public var bodyFile: String?
        public var taskDescription: String?
        public var priority: Double
        public var discretionary: Bool
        public var resourceTimeout: Double?
        /// How it transfers (form, request body, limits, destination, connection, ...).
        public var options = TaskOptions()
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
        /// An upload in tus chunks, this many at once.
        public var chunks: Int?
        /// Not before: the task stays pending until then.
        public var earliestBegin: Date?

        /// An option, as if it were the new task's own property.
        public subscript<Value>(dynamicMember option: WritableKeyPath<TaskOptions, Value>) -> Value {
            get { options[keyPath: option] }
            set { options[keyPath: option] = newValue }
        }

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
            self.options.connection = connection
            self.kind = kind
            self.request = request
            self.bodyFile = bodyFile
            self.taskDescription = taskDescription
            self.priority = priority
            self.discretionary = discretionary
            self.resourceTimeout = resourceTimeout
            self.options.destination = destination
            self.options.destinationMode = destinationMode
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
            if limit < .max, try Self.mayExceed(limit, adding: tasks.count, session: session, db) {
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

    /// Whether adding `count` tasks might take the session past `limit`, as far as its identifier counter
    /// tells: every task it holds has an identifier below the next one, so while that bound is within the
    /// limit the tasks need no counting. (Counting them on every creation scanned the session's tasks each
    /// time: submissions slowed as a session filled.)
    private static func mayExceed(_ limit: Int, adding count: Int, session: String, _ db: Database) throws -> Bool {
        let issued = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT nextTaskIdentifier - 1 FROM session WHERE identifier = ?"),
            arguments: [session]
        ) ?? 0
        return issued + Int64(count) > Int64(limit)
    }

    static func insert(
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
                                  taskDescription, priority, discretionary, resourceDeadline, options,
                                  createdAt, updatedAt, allowsMetered, allowsConstrained, bandwidthLimit,
                                  chunkedUpload, earliestBegin)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            session, identifier, task.kind.rawValue, state.rawValue, encoded,
            try task.resumeData.map { try JSONEncoder().encode($0.currentRequest) }, task.bodyFile,
            task.taskDescription, task.priority, task.discretionary, deadline.map(StoreTime.init),
            // No options (most tasks): nothing to encode or store.
            task.options.isEmpty ? nil : try JSONEncoder().encode(task.options), StoreTime(now), StoreTime(now),
            task.allowsMetered, task.allowsConstrained, task.bandwidthLimit,
            try chunkedUpload.map { try JSONEncoder().encode($0) }, task.earliestBegin.map(StoreTime.init),
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
            options: task.options,
            bytesReceived: 0,
            bytesSent: 0
        )
        stored.allowsMetered = task.allowsMetered
        stored.allowsConstrained = task.allowsConstrained
        stored.bandwidthLimit = task.bandwidthLimit
        stored.chunkedUpload = chunkedUpload
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
            arguments += [StoreTime(now)]
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
                arguments: [StoreTime(now)]
            )
        }
    }

    /// A date as the store gives it back (SQLite keeps milliseconds): through GRDB's own conversion
    /// both ways, so that a task returned without reading it back equals the one read.
    static func asStored(_ date: Date) -> Date {
        Date.fromDatabaseValue(date.databaseValue) ?? date
    }
}
