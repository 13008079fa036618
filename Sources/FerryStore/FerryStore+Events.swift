public import FerryCore
public import Foundation
import GRDB

/// The event journal: a session's events after a sequence number, and acknowledging them.
extension FerryStore {
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
}
