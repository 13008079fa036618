/// One line of an attached client's event stream (the control API sends them as JSON lines).
///
/// Journaled events (``Kind/didFinishDownloading``, ``Kind/didComplete`` and
/// ``Kind/taskIsWaitingForConnectivity``) carry a ``sequence``: the
/// client acknowledges them, in order, once its delegate has returned (D2). The others are not kept:
/// progress is only sent while a client is attached, and ``Kind/didFinishEvents`` closes a replay.
public struct BackgroundEvent: Sendable, Hashable, Codable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The stream is open: the client is attached. ``message`` holds the daemon's version.
        case attached
        /// A download succeeded; ``location`` is the file to move away before acknowledging.
        case didFinishDownloading
        /// A task completed; ``error`` is nil for success.
        case didComplete
        /// Every event queued while the client was away has been sent (S6.3); sent once after a replay.
        case didFinishEvents
        /// Bytes were written (downloads): ``bytes``, ``totalBytes``, ``totalBytesExpected``.
        case didWriteData
        /// Bytes were sent (uploads): ``bytes``, ``totalBytes``, ``totalBytesExpected``.
        case didSendBodyData
        /// A resumed download continues at ``totalBytes`` of ``totalBytesExpected``.
        case didResume
        /// Nothing happened; keeps the stream's liveness visible to both ends.
        case heartbeat
        /// The task may not run on the network as it is now and waits (sent once per task, journaled);
        /// ``message`` says why (``NetworkPolicy/WaitReason``'s raw value).
        case taskIsWaitingForConnectivity
    }

    /// What happened.
    public var kind: Kind
    /// The journal's sequence number, for events that are acknowledged.
    public var sequence: Int64?
    /// The task it concerns.
    public var task: BackgroundTaskInfo?
    /// For ``Kind/didFinishDownloading``: the file holding the body.
    public var location: String?
    /// For ``Kind/didComplete``: the failure, if any.
    public var error: FerryError?
    /// For progress: this time.
    public var bytes: Int64?
    /// For progress: in all so far.
    public var totalBytes: Int64?
    /// For progress: expected in all, when known.
    public var totalBytesExpected: Int64?
    /// Free text (the daemon's version on ``Kind/attached``, the reason on
    /// ``Kind/taskIsWaitingForConnectivity``).
    public var message: String?

    /// An event.
    public init(
        kind: Kind,
        sequence: Int64? = nil,
        task: BackgroundTaskInfo? = nil,
        location: String? = nil,
        error: FerryError? = nil,
        bytes: Int64? = nil,
        totalBytes: Int64? = nil,
        totalBytesExpected: Int64? = nil,
        message: String? = nil
    ) {
        self.kind = kind
        self.sequence = sequence
        self.task = task
        self.location = location
        self.error = error
        self.bytes = bytes
        self.totalBytes = totalBytes
        self.totalBytesExpected = totalBytesExpected
        self.message = message
    }
}
