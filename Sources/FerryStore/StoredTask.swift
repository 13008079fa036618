public import FerryCore
public import Foundation
import GRDB

/// A background task as the daemon keeps it (SPEC S6.8: its identifier, description and original request
/// survive restarts).
public struct StoredTask: Sendable, Hashable {
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
    public var priority: Double
    /// Created while no client was attached (S6.10): it runs when nothing else waits.
    public var isDiscretionary: Bool
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
    public var bytesReceived: Int64
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
    public var bytesSent: Int64
    /// The final response's status, once known.
    public var responseStatus: Int?
    /// The final response's header fields, once known.
    public var responseHeaders: Headers?
    /// The error the task completed with (code and message), if any.
    public var error: FerryError?
    /// May use a metered network (the request's and the session's allowsCellularAccess and
    /// allowsExpensiveNetworkAccess, or a later `ferry policy`).
    public var allowsMetered = true
    /// May use a constrained network.
    public var allowsConstrained = true
    /// The task's own bandwidth limit, bytes a second; nil: none.
    public var bandwidthLimit: Int64?
    /// taskIsWaitingForConnectivity was journaled for it (it fires once).
    public var waitReported = false

    /// What the task may use, and whether it is deferred.
    public var networkPolicy: NetworkPolicy {
        NetworkPolicy(allowsMetered: allowsMetered, allowsConstrained: allowsConstrained, isDiscretionary: isDiscretionary)
    }
}

extension StoredTask {
    /// A task as created: nothing transferred yet.
    init(
        session: String,
        taskIdentifier: Int,
        kind: Kind,
        state: State,
        originalRequest: Request,
        bodyFile: String?,
        taskDescription: String?,
        priority: Double,
        isDiscretionary: Bool,
        resourceDeadline: Date?,
        destination: String?,
        destinationMode: Int?,
        connection: ConnectionSettings?,
        bytesReceived: Int64,
        bytesSent: Int64
    ) {
        self.connection = connection
        self.session = session
        self.taskIdentifier = taskIdentifier
        self.kind = kind
        self.state = state
        self.originalRequest = originalRequest
        self.bodyFile = bodyFile
        self.taskDescription = taskDescription
        self.priority = priority
        self.isDiscretionary = isDiscretionary
        self.resourceDeadline = resourceDeadline
        self.destination = destination
        self.destinationMode = destinationMode
        self.bytesReceived = bytesReceived
        self.bytesSent = bytesSent
    }

    /// Reads a row of its table.
    init(row: Row) throws {
        let decoder = JSONDecoder()
        session = row["session"]
        taskIdentifier = row["taskIdentifier"]
        kind = try Self.decode(Kind.self, row["kind"])
        state = try Self.decode(State.self, row["state"])
        originalRequest = try decoder.decode(Request.self, from: row["originalRequest"] as Data)
        bodyFile = row["bodyFile"]
        currentRequest = try (row["currentRequest"] as Data?).map { try decoder.decode(Request.self, from: $0) }
        taskDescription = row["taskDescription"]
        priority = row["priority"]
        isDiscretionary = row["discretionary"]
        resourceDeadline = row["resourceDeadline"]
        destination = row["destination"]
        destinationMode = row["destinationMode"]
        connection = try (row["connection"] as Data?).map { try decoder.decode(ConnectionSettings.self, from: $0) }
        partialPath = row["partialPath"]
        bytesReceived = row["bytesReceived"]
        expectedLength = row["expectedLength"]
        entityTag = row["entityTag"]
        lastModified = row["lastModified"]
        segments = try (row["segments"] as Data?).map { try decoder.decode(SegmentPlan.self, from: $0) }
        uploadState = try (row["uploadState"] as Data?).map { try decoder.decode(UploadResumption.self, from: $0) }
        form = try (row["form"] as Data?).map { try decoder.decode([FormField].self, from: $0) }
        chunkedUpload = try (row["chunkedUpload"] as Data?).map { try decoder.decode(ChunkedUploadProgress.self, from: $0) }
        requestBody = row["requestBody"]
        decodesContent = row["decodesContent"]
        earliestBegin = row["earliestBegin"]
        limits = try (row["limits"] as Data?).map { try decoder.decode(TaskLimits.self, from: $0) }
        bytesSent = row["bytesSent"]
        allowsMetered = row["allowsMetered"]
        allowsConstrained = row["allowsConstrained"]
        bandwidthLimit = row["bandwidthLimit"]
        waitReported = row["waitReported"]
        responseStatus = row["responseStatus"]
        responseHeaders = try (row["responseHeaders"] as Data?).map { try decoder.decode(Headers.self, from: $0) }
        if let code: Int = row["errorCode"] {
            error = FerryError(
                FerryError.Code(rawValue: code, name: row["errorName"] ?? "code \(code)"),
                row["errorMessage"] ?? ""
            )
        }
    }

    private static func decode<Value: RawRepresentable>(_ type: Value.Type, _ raw: String) throws -> Value
    where Value.RawValue == String {
        guard let value = Value(rawValue: raw) else {
            throw FerryStoreError("the store holds an unknown \(type) '\(raw)'; was it written by a newer ferryd?")
        }
        return value
    }
}
