public import FerryCore
public import Foundation
import GRDB

/// The launch registrations: the command ferryd runs to wake a session's app, and its rate limit.
extension FerryStore {
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
}
