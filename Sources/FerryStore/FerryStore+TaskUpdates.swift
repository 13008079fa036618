public import FerryCore
public import Foundation
import GRDB

/// The task table, changing: descriptions and priorities, what a running task records (its request,
/// response, progress and upload state), state transitions with their events, and recovery after a restart.
extension FerryStore {
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
                    limit != nil, limit ?? nil,
                    change.earliestBeginTime.map { StoreTime(Date(timeIntervalSince1970: $0)) }, StoreTime(clock()),
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
    static func heldBack(by network: NetworkState, offline: Bool) -> String? {
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
                arguments: [encoded, StoreTime(clock()), session, identifier]
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
                arguments: [encoded, state?.offset ?? 0, StoreTime(clock()), session, identifier]
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
                arguments: [encoded, progress.storedBytes, StoreTime(clock()), session, identifier]
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
        bytesSent: Int64? = nil,
        protocolName: String? = nil
    ) throws {
        let encoded = try JSONEncoder().encode(headers)
        try write { db in
            try db.execute(
                sql: """
                    UPDATE task SET responseStatus = ?, responseHeaders = ?, bytesSent = COALESCE(?, bytesSent),
                                    networkProtocol = COALESCE(?, networkProtocol), updatedAt = ?
                    WHERE session = ? AND taskIdentifier = ?
                    """,
                arguments: [status, encoded, bytesSent, protocolName, StoreTime(clock()), session, identifier]
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
    struct Progress {
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
                    partialPath, bytesReceived, expectedLength, entityTag, lastModified, segments, StoreTime(now), session,
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
                    state.rawValue, error?.code.rawValue, error?.code.name, error?.message, StoreTime(clock()), session,
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
                        StoreTime(clock()), session, identifier, StoredTask.State.completed.rawValue,
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
                arguments: [StoredTask.State.pending.rawValue, StoreTime(clock()), StoredTask.State.running.rawValue]
            )
            return running.map { task in
                var task = task
                task.state = .pending
                return task
            }
        }
    }
}
