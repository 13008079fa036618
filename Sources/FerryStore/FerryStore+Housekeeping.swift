public import Foundation
import GRDB

/// What operations read and tidy: counts for the metrics, and the pruning of finished tasks.
extension FerryStore {
    /// How many tasks each session has in each state, for the metrics (sessions without tasks are left out).
    public func taskCounts() throws -> [(session: String, state: StoredTask.State, count: Int)] {
        try readRows(sql: "SELECT session, state, COUNT(*) AS n FROM task GROUP BY session, state ORDER BY session, state")
            .compactMap { row in
                guard let state = StoredTask.State(rawValue: row["state"]) else { return nil }
                return (row["session"], state, row["n"])
            }
    }

    /// How many events each session has that its client has not acknowledged (the backlog).
    public func eventBacklog() throws -> [(session: String, count: Int)] {
        try readRows(
            sql: """
                SELECT s.identifier AS session, COUNT(e.sequence) AS n
                FROM session s LEFT JOIN event e ON e.session = s.identifier
                GROUP BY s.identifier ORDER BY s.identifier
                """
        ).map { ($0["session"], $0["n"]) }
    }

    /// The bytes the database takes on disk: the main file and its write-ahead log.
    public func sizeOnDisk() -> Int64 {
        [path, path + "-wal", path + "-shm"].reduce(0) { total, file in
            total + ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int64) ?? 0)
        }
    }

    /// Removes completed tasks that finished before `cutoff` (all of them when nil), of `session` only
    /// when given, with their events, in one transaction.
    /// - Returns: the removed tasks as they were, each with the events it still had, so that leftover
    ///   files (a partial file kept for resume data, a delivered file nobody collected) can go.
    public func removeFinishedTasks(
        finishedBefore cutoff: Date?,
        session: String?
    ) throws -> [(task: StoredTask, events: [StoredEvent])] {
        try write { db in
            var conditions = ["state = ?"]
            var arguments: StatementArguments = [StoredTask.State.completed.rawValue]
            if let cutoff {
                conditions.append("updatedAt < ?")
                arguments += [cutoff]
            }
            if let session {
                conditions.append("session = ?")
                arguments += [session]
            }
            let tasks = try Row.fetchAll(
                db,
                sql: "SELECT * FROM task WHERE \(conditions.joined(separator: " AND ")) ORDER BY session, taskIdentifier",
                arguments: arguments
            ).map(StoredTask.init(row:))
            return try tasks.map { task in
                let key: StatementArguments = [task.session, task.taskIdentifier]
                let events = try Row.fetchAll(
                    db,
                    sql: "SELECT * FROM event WHERE session = ? AND taskIdentifier = ? ORDER BY sequence",
                    arguments: key
                ).map(StoredEvent.init(row:))
                try db.execute(sql: "DELETE FROM event WHERE session = ? AND taskIdentifier = ?", arguments: key)
                try db.execute(sql: "DELETE FROM task WHERE session = ? AND taskIdentifier = ?", arguments: key)
                return (task, events)
            }
        }
    }

    /// Compacts the database after acknowledgements and pruning: the write-ahead log is folded into the
    /// main file and truncated, and free pages are given back to the file system when a quarter or
    /// more of the file is free.
    public func compact() throws {
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            let free = try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
            if pages > 0, free * 4 >= pages {
                try db.execute(sql: "VACUUM")
                try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            }
        }
    }

    private func readRows(sql: String) throws -> [Row] {
        try pool.read { db in try Row.fetchAll(db, sql: sql) }
    }
}

extension FerryStore {
    /// A bounded page of every session's tasks, for a view of them all (the status page): the unfinished
    /// ones first (by session and identifier), then the most recently finished, `limit` in all; and how
    /// many tasks there are. Reading every task for each view grew ferryd to 400 MB with 60,000 tasks.
    public func page(limit: Int) throws -> (tasks: [StoredTask], total: Int) {
        try pool.read { db in
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM task") ?? 0
            var tasks = try Row.fetchAll(
                db,
                sql: "SELECT * FROM task WHERE state != 'completed' ORDER BY session, taskIdentifier LIMIT ?",
                arguments: [limit]
            ).map(StoredTask.init(row:))
            if tasks.count < limit {
                tasks += try Row.fetchAll(
                    db,
                    sql: "SELECT * FROM task WHERE state = 'completed' ORDER BY updatedAt DESC, session, taskIdentifier LIMIT ?",
                    arguments: [limit - tasks.count]
                ).map(StoredTask.init(row:))
            }
            return (tasks, total)
        }
    }
}
