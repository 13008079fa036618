public import FerryCore
public import Foundation
import GRDB

/// The session table: the identifiers of background sessions ferryd knows.
extension FerryStore {
    /// Records a session identifier (idempotent).
    public func registerSession(_ identifier: String) throws {
        let now = clock()
        try write { db in try Self.registerSession(identifier, at: now, db) }
    }

    static func registerSession(_ identifier: String, at now: Date, _ db: Database) throws {
        try db.cachedStatement(
            sql: "INSERT INTO session (identifier, createdAt) VALUES (?, ?) ON CONFLICT(identifier) DO NOTHING"
        ).execute(arguments: [identifier, StoreTime(now)])
    }

    /// The session identifiers, sorted.
    public func sessions() throws -> [String] {
        try pool.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM session ORDER BY identifier") }
    }

    /// Forgets a session, its tasks, events and launch registration (invalidateAndCancel, S6.11).
    public func removeSession(_ identifier: String) throws {
        try write { db in try db.execute(sql: "DELETE FROM session WHERE identifier = ?", arguments: [identifier]) }
    }
}
