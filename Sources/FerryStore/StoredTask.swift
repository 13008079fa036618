public import FerryCore
public import Foundation
import GRDB

/// A background task as the daemon keeps it (SPEC S6.8: its identifier, description and original request
/// survive restarts). Its ``options`` (form, request body, limits, destination, connection, ...) read and
/// write as its own properties (`task.destination`).
@dynamicMemberLookup
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
    /// How the task transfers, as its client asked (one JSON column).
    public var options = TaskOptions()
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
    /// An upload of ``bodyFile`` in tus chunks: how many at once, and the chunks the server has stored.
    public var chunkedUpload: ChunkedUploadProgress?
    /// Not before: a pending task waits until then (URLSession's `earliestBeginDate`).
    public var earliestBegin: Date?
    /// Request body bytes sent (uploads).
    public var bytesSent: Int64
    /// The final response's status, once known.
    public var responseStatus: Int?
    /// The final response's header fields, once known.
    public var responseHeaders: Headers?
    /// The protocol the response came over (ALPN's name: `http/1.1`, `h2`, `h3`).
    public var networkProtocol: String?
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

    /// An option, as if it were the task's own property.
    public subscript<Value>(dynamicMember option: WritableKeyPath<TaskOptions, Value>) -> Value {
        get { options[keyPath: option] }
        set { options[keyPath: option] = newValue }
    }

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
        options: TaskOptions,
        bytesReceived: Int64,
        bytesSent: Int64
    ) {
        self.options = options
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
        options = try (row["options"] as Data?).map { try decoder.decode(TaskOptions.self, from: $0) } ?? TaskOptions()
        partialPath = row["partialPath"]
        bytesReceived = row["bytesReceived"]
        expectedLength = row["expectedLength"]
        entityTag = row["entityTag"]
        lastModified = row["lastModified"]
        segments = try (row["segments"] as Data?).map { try decoder.decode(SegmentPlan.self, from: $0) }
        uploadState = try (row["uploadState"] as Data?).map { try decoder.decode(UploadResumption.self, from: $0) }
        chunkedUpload = try (row["chunkedUpload"] as Data?).map { try decoder.decode(ChunkedUploadProgress.self, from: $0) }
        earliestBegin = row["earliestBegin"]
        bytesSent = row["bytesSent"]
        allowsMetered = row["allowsMetered"]
        allowsConstrained = row["allowsConstrained"]
        bandwidthLimit = row["bandwidthLimit"]
        waitReported = row["waitReported"]
        responseStatus = row["responseStatus"]
        responseHeaders = try (row["responseHeaders"] as Data?).map { try decoder.decode(Headers.self, from: $0) }
        networkProtocol = row["networkProtocol"]
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
