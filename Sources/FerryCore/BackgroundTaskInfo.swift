public import Foundation

/// A background task as the daemon reports it over the control API: what a client or `ferry ls` sees.
public struct BackgroundTaskInfo: Sendable, Hashable, Codable {
    /// What the task transfers.
    public enum Kind: String, Sendable, Hashable, Codable {
        case download, upload
    }

    /// Where the task is in the daemon's lifecycle.
    public enum State: String, Sendable, Hashable, Codable {
        /// Waiting for a transfer slot (or for its retry's backoff).
        case pending
        /// Transferring.
        case running
        /// Paused by the client.
        case suspended
        /// Finished; ``error`` says whether it failed or was cancelled.
        case completed
    }

    /// The session identifier.
    public var session: String
    /// Unique within the session; kept across restarts of the daemon (S6.8).
    public var taskIdentifier: Int
    /// Download or upload.
    public var kind: Kind
    /// The lifecycle state.
    public var state: State
    /// The request as created.
    public var originalRequest: Request
    /// The request after redirects, once known.
    public var currentRequest: Request?
    /// The client's description, kept across restarts.
    public var taskDescription: String?
    /// 0...1.
    public var priority: Double
    /// Created while no client was attached (S6.10).
    public var isDiscretionary: Bool
    /// Body bytes received (and, in the daemon's database, flushed to disk).
    public var bytesReceived: Int64
    /// The expected body length, when known.
    public var expectedLength: Int64?
    /// Body bytes sent (uploads).
    public var bytesSent: Int64
    /// The final response's status, once it has arrived.
    public var statusCode: Int?
    /// The final response's header fields, once they have arrived.
    public var responseHeaders: Headers?
    /// The error the task completed with; nil while running and for a success.
    public var error: FerryError?
    /// Where the daemon puts the finished file itself (``ControlAPI/TaskCreation/destination``).
    public var destination: String?
    /// While running: the recent transfer rate, bytes a second (the listing's live view).
    public var bytesPerSecond: Double?
    /// While the task waits to try again after a failed attempt: that attempt's error (the task is
    /// pending, and ``error`` stays nil until it completes).
    public var lastError: FerryError?
    /// While the task waits to try again: when the next attempt starts, in seconds since 1970 (Unix time).
    public var nextAttemptTime: Double?
    /// Failed attempts since the task last started afresh (retries counted by the daemon).
    public var failedAttempts: Int?
    /// May use a metered network (nil in answers from daemons before this field).
    public var allowsMeteredNetwork: Bool?
    /// May use a constrained network.
    public var allowsConstrainedNetwork: Bool?
    /// The task's own bandwidth limit, bytes a second; nil: none.
    public var bandwidthLimit: Int64?
    /// While a pending task may not run on the network as it is now: why (``NetworkPolicy/WaitReason``'s
    /// raw value: `offline`, `metered network`, `constrained network`, `on battery`).
    public var waitingReason: String?
    /// A task held until a time (``ControlAPI/TaskCreation/earliestBeginTime``): that time, seconds
    /// since 1970. It stays after the task started.
    public var earliestBeginTime: Double?
    /// The HTTP version the response came over, as curl's `%{http_version}` writes it: `1.1`, `2`, `3`;
    /// nil before a response.
    public var httpVersion: String?

    /// curl's version number for an ALPN protocol name (`h2` → `2`, `h3` → `3`, else `1.1`).
    public static func httpVersion(ofProtocol name: String) -> String {
        switch name {
        case "h2": "2"
        case "h3": "3"
        default: "1.1"
        }
    }

    /// A task description.
    public init(
        session: String,
        taskIdentifier: Int,
        kind: Kind,
        state: State,
        originalRequest: Request,
        currentRequest: Request? = nil,
        taskDescription: String? = nil,
        priority: Double = 0.5,
        isDiscretionary: Bool = false,
        bytesReceived: Int64 = 0,
        expectedLength: Int64? = nil,
        bytesSent: Int64 = 0,
        statusCode: Int? = nil,
        responseHeaders: Headers? = nil,
        error: FerryError? = nil,
        destination: String? = nil,
        bytesPerSecond: Double? = nil,
        lastError: FerryError? = nil,
        nextAttemptTime: Double? = nil,
        failedAttempts: Int? = nil
    ) {
        self.session = session
        self.taskIdentifier = taskIdentifier
        self.kind = kind
        self.state = state
        self.originalRequest = originalRequest
        self.currentRequest = currentRequest
        self.taskDescription = taskDescription
        self.priority = priority
        self.isDiscretionary = isDiscretionary
        self.bytesReceived = bytesReceived
        self.expectedLength = expectedLength
        self.bytesSent = bytesSent
        self.statusCode = statusCode
        self.responseHeaders = responseHeaders
        self.error = error
        self.destination = destination
        self.bytesPerSecond = bytesPerSecond
        self.lastError = lastError
        self.nextAttemptTime = nextAttemptTime
        self.failedAttempts = failedAttempts
    }
}
