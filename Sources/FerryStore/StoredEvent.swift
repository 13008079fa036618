public import Foundation
import GRDB

/// An event journaled for a session's client (D2): written in the same transaction as the state change
/// that caused it, delivered in ``sequence`` order, removed when the client acknowledges it.
public struct StoredEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// A download succeeded; the payload names the file to hand over.
        case didFinishDownloading
        /// A task completed (successfully, failed or cancelled).
        case didComplete
        /// A task may not run on the network as it is now and waits (once per task); the payload is the
        /// reason (``FerryCore/NetworkPolicy/WaitReason``'s raw value).
        case taskIsWaitingForConnectivity
    }

    /// The session's identifier.
    public var session: String
    /// Increasing within the session, never reused.
    public var sequence: Int64
    /// The task it concerns.
    public var taskIdentifier: Int?
    /// What happened.
    public var kind: Kind
    /// Kind-specific details (JSON), if any.
    public var payload: Data?
}

extension StoredEvent {
    /// Reads a row of its table.
    init(row: Row) throws {
        session = row["session"]
        sequence = row["sequence"]
        taskIdentifier = row["taskIdentifier"]
        let raw: String = row["kind"]
        guard let kind = Kind(rawValue: raw) else {
            throw FerryStoreError("the journal holds an unknown event kind '\(raw)'; was it written by a newer ferryd?")
        }
        self.kind = kind
        payload = row["payload"]
    }
}

/// A store operation that cannot be done, with what to do about it.
public struct FerryStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What happened.
    public var message: String
    /// The request collides with what is stored (a task identifier in use): the caller's to change.
    public var isConflict: Bool

    init(_ message: String, conflict: Bool = false) {
        self.message = message
        self.isConflict = conflict
    }

    public var description: String { message }
}
