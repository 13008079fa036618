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

    let clock: @Sendable () -> Date

    /// The journal mode SQLite reports (`wal`).
    public func journalMode() throws -> String {
        try pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    /// The migrations applied, oldest first.
    public func appliedMigrations() throws -> [String] {
        try pool.read { db in try StoreSchema.migrator.appliedMigrations(db) }
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

    static func task(_ db: Database, session: String, identifier: Int) throws -> StoredTask {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM task WHERE session = ? AND taskIdentifier = ?"),
                arguments: [session, identifier]
            )
        else { throw FerryStoreError("no task \(identifier) in session '\(session)'") }
        return try StoredTask(row: row)
    }

    static func requireChange(_ db: Database, session: String, identifier: Int) throws {
        guard db.changesCount > 0 else { throw FerryStoreError("no task \(identifier) in session '\(session)'") }
    }

    /// A session's counters: never reused, so identifiers and sequence numbers only grow.
    enum Counter: String {
        case nextTaskIdentifier, nextEventSequence
    }

    /// Takes a session's next value of `counter` and advances it; nil when there is no such session.
    static func takeNext(_ counter: Counter, of session: String, _ db: Database) throws -> Int64? {
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

    static func journal(
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
            arguments: [session, sequence, task, kind.rawValue, payload, StoreTime(now)]
        )
        return StoredEvent(session: session, sequence: sequence, taskIdentifier: task, kind: kind, payload: payload)
    }
}
