public import FerryCore
public import Foundation
public import GRDB

/// A background task as the daemon keeps it (SPEC S6.8: its identifier, description and original request
/// survive restarts): a row of the `task` table, read and written as a GRDB record. Each stored property
/// is the column of its name (nested values are JSON), so a new field is a property here and a column
/// in a migration (``StoreSchema``), and nothing maps it by hand.
public struct StoredTask: Sendable, Hashable, Codable {
    /// What the task transfers: the control API's kinds, stored by their raw values.
    public typealias Kind = BackgroundTaskInfo.Kind
    /// Where the task is in the daemon's lifecycle (pending also holds every task that was running when
    /// the daemon stopped, D4).
    public typealias State = BackgroundTaskInfo.State

    /// The session's identifier.
    public var session: String
    /// Unique within the session, never reused.
    public var taskIdentifier: Int
    /// Download or upload.
    public var kind: Kind
    /// The lifecycle state.
    public var state: State
    /// The request as created.
    public var originalRequest: Request
    /// For uploads: the file whose bytes are the body.
    public var bodyFile: String?
    /// The request after redirects, once known.
    public var currentRequest: Request?
    /// The client's description.
    public var taskDescription: String?
    /// 0...1.
    public var priority = 0.5
    /// Created while no client was attached (S6.10): it runs when nothing else waits.
    public var isDiscretionary = false
    /// When the task fails with `timedOut` if it has not finished (creation plus the session's
    /// `timeoutIntervalForResource`); nil: the daemon's own limit.
    public var resourceDeadline: Date?
    /// Where the daemon moves the finished download itself, if the client asked.
    public var destination: String?
    /// The permission bits of the file at ``destination``.
    public var destinationMode: Int?
    /// How its connections are made, as the creating client asked; nil: direct, ferryd's trust roots.
    public var connection: ConnectionSettings?
    /// The partial file, once the transfer has started.
    public var partialPath: String?
    /// Bytes on disk and flushed (D1: never more than what is on disk).
    public var bytesReceived: Int64 = 0
    /// The expected total, when known.
    public var expectedLength: Int64?
    /// The validators of the version being downloaded.
    public var entityTag: String?
    /// See ``entityTag``.
    public var lastModified: String?
    /// A segmented download's ranges and their progress (``bytesReceived`` is their sum); nil for a
    /// download whose file holds its first ``bytesReceived`` bytes.
    public var segments: SegmentPlan?
    /// A resumable upload's state: its upload resource and the offset the server confirmed.
    public var uploadState: UploadResumption?
    /// An upload whose body is a multipart form of these fields (``bodyFile`` is nil then).
    public var form: [FormField]?
    /// An upload of ``bodyFile`` in tus chunks: how many at once, and the chunks the server has stored.
    public var chunkedUpload: ChunkedUploadProgress?
    /// A download's request body (curl's `-d`), sent with every try; such a download starts over each try.
    public var requestBody: Data?
    /// A download whose gzip or deflate Content-Encoding is undone as it is written (curl's `--compressed`).
    public var decodesContent = false
    /// The task's own redirect, retry and speed limits; nil: ferryd's.
    public var limits: TaskLimits?
    /// Not before: a pending task waits until then (URLSession's `earliestBeginDate`).
    public var earliestBegin: Date?
    /// Request body bytes sent (uploads).
    public var bytesSent: Int64 = 0
    /// The final response's status, once known.
    public var responseStatus: Int?
    /// The final response's header fields, once known.
    public var responseHeaders: Headers?
    /// The error the task completed with (code and message), if any.
    public var error: FerryError? {
        get {
            errorCode.map { code in FerryError(FerryError.Code(rawValue: code, name: errorName ?? "code \(code)"), errorMessage ?? "") }
        }
        set {
            errorCode = newValue?.code.rawValue
            errorName = newValue?.code.name
            errorMessage = newValue?.message
        }
    }
    /// ``error``'s code, name and message, each a column.
    var errorCode: Int?
    var errorName: String?
    var errorMessage: String?
    /// May use a metered network (the request's and the session's allowsCellularAccess and
    /// allowsExpensiveNetworkAccess, or a later `ferry policy`).
    public var allowsMetered = true
    /// May use a constrained network.
    public var allowsConstrained = true
    /// The task's own bandwidth limit, bytes a second; nil: none.
    public var bandwidthLimit: Int64?
    /// taskIsWaitingForConnectivity was journaled for it (it fires once).
    public var waitReported = false
    /// When the task was created, and last changed (to the millisecond, as SQLite keeps them).
    public var createdAt: Date
    public var updatedAt: Date

    /// What the task may use, and whether it is deferred.
    public var networkPolicy: NetworkPolicy {
        NetworkPolicy(allowsMetered: allowsMetered, allowsConstrained: allowsConstrained, isDiscretionary: isDiscretionary)
    }
}

extension StoredTask {
    /// A task as created at `now`: nothing transferred yet; the other fields are set by the caller.
    init(session: String, taskIdentifier: Int, kind: Kind, state: State, originalRequest: Request, at now: Date) {
        self.session = session
        self.taskIdentifier = taskIdentifier
        self.kind = kind
        self.state = state
        self.originalRequest = originalRequest
        self.createdAt = now
        self.updatedAt = now
    }
}

extension StoredTask: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "task"

    /// Nested values are JSON as Foundation writes it by default (dates as seconds since 2001), as
    /// rows written before the task was a record hold them; GRDB's default would write milliseconds
    /// since 1970.
    public static func databaseJSONEncoder(for column: String) -> JSONEncoder { JSONEncoder() }
    public static func databaseJSONDecoder(for column: String) -> JSONDecoder { JSONDecoder() }
}
