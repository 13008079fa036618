public import Foundation

/// The daemon's control API: HTTP/1.1 with JSON bodies over its unix socket, described by
/// `docs/openapi.json`. These are the request and response bodies both ends share; the routes are:
///
/// | route | body → answer |
/// | --- | --- |
/// | `GET /v1/daemon` | → ``ControlAPI/DaemonStatus`` |
/// | `GET /v1/tasks` | → `[BackgroundTaskInfo]` of every session |
/// | `POST /v1/sessions/{id}/attach` | → a stream of ``BackgroundEvent`` JSON lines while attached |
/// | `GET /v1/sessions/{id}/tasks` | → `[BackgroundTaskInfo]` |
/// | `POST /v1/sessions/{id}/tasks` | ``ControlAPI/TaskCreation`` → ``BackgroundTaskInfo`` (201) |
/// | `POST /v1/sessions/{id}/tasks/{n}/resume` | optional ``ControlAPI/TaskUpdate`` → ``BackgroundTaskInfo`` |
/// | `POST /v1/sessions/{id}/tasks/{n}/suspend` | → ``BackgroundTaskInfo`` |
/// | `POST /v1/sessions/{id}/tasks/{n}/cancel` | ``ControlAPI/Cancellation`` → ``ControlAPI/CancelResult`` |
/// | `GET /v1/sessions/{id}/events` | → `[BackgroundEvent]` waiting, without attaching |
/// | `POST /v1/sessions/{id}/ack` | ``ControlAPI/Acknowledgement`` → 204 |
/// | `PUT /v1/sessions/{id}/launch` | ``ControlAPI/LaunchRegistration`` → 204 |
/// | `POST /v1/sessions/{id}/invalidate` | ``ControlAPI/Invalidation`` → 204 |
///
/// Errors answer 4xx/5xx with ``ControlAPI/ErrorBody``.
///
/// Written by hand, not generated from the document: swift-openapi-generator 1.14.3 skips the document's
/// `null` and `not {}` schemas (a generated creation has no resume data, limits or connection), makes 24
/// properties untyped, checks none of its patterns, and its types would be a second shape of these,
/// mapped field by field at both ends (measured 2026-11-27; docs/ARCHITECTURE.md, "The daemon").
/// `ControlAPITests`, `ControlAPISyntaxTests` and schemathesis keep these types and the document in step.
public enum ControlAPI {
    /// The path prefix of this version of the API.
    public static let prefix = "/v1"
    /// The largest request body the daemon reads.
    public static let maximumBodySize = 1 << 20
    /// Checks a session identifier by the rule of ``SessionConfiguration/background(identifier:)``.
    public static func validateIdentifier(_ identifier: String) throws {
        try SessionConfiguration.background(identifier: identifier).validate()
    }

    /// `GET /v1/daemon`.
    public struct DaemonStatus: Sendable, Hashable, Codable {
        /// ferryd's version.
        public var version: String
        /// Its process id.
        public var pid: Int32
        /// The control socket.
        public var socketPath: String
        /// The state directory (database, partial and delivered files).
        public var stateDirectory: String
        /// Tasks transferring now, and the daemon-wide limit.
        public var running: Int
        /// See ``running``.
        public var maximumConcurrentTransfers: Int

        /// A status.
        public init(
            version: String,
            pid: Int32,
            socketPath: String,
            stateDirectory: String,
            running: Int,
            maximumConcurrentTransfers: Int
        ) {
            self.version = version
            self.pid = pid
            self.socketPath = socketPath
            self.stateDirectory = stateDirectory
            self.running = running
            self.maximumConcurrentTransfers = maximumConcurrentTransfers
        }
    }

    /// `POST /v1/sessions/{id}/tasks`: what the task is (these properties), and how it transfers
    /// (``options``, whose properties read and write as the creation's own, and whose JSON keys sit
    /// beside these).
    @dynamicMemberLookup
    public struct TaskCreation: Sendable, Hashable, Codable {
        /// Download or upload.
        public var kind: BackgroundTaskInfo.Kind
        /// The request (http or https).
        public var request: Request
        /// For uploads: the file whose bytes are the body (background uploads come from files only).
        public var uploadFile: String?
        /// For uploads of ``uploadFile``: send the file in tus 1.0 partial uploads, this many at once
        /// (1 to 32), concatenated at the end (the request's URL is the tus endpoint). Every chunk the
        /// server stores is recorded, so after a ferryd restart only the unfinished chunks are sent.
        public var chunks: Int?
        /// Kept with the task across restarts.
        public var taskDescription: String?
        /// 0...1, default 0.5.
        public var priority: Double?
        /// For a download continued from resume data (`downloadTask(withResumeData:)`).
        public var resumeData: ResumeData?
        /// Start at once (default), or wait for `resume`.
        public var start: Bool?
        /// Let the system defer the task (the session's `isDiscretionary`): it starts after the others,
        /// and only on an unmetered network and, where power is known, on mains power (S6.10). Absent: a
        /// task created while no client of its session is attached is discretionary, as Apple's are when
        /// the app is in the background; `ferry get --background` sends false (the user asked now).
        public var discretionary: Bool?
        /// Seconds from creation after which the task fails with `timedOut` (the session's
        /// `timeoutIntervalForResource`); the daemon's own limit (7 days) when absent.
        public var resourceTimeout: Double?
        /// The task's own bandwidth limit, bytes a second (`ferry get --background --limit-rate`); absent:
        /// none (the daemon-wide limit still applies).
        public var bandwidthLimit: Int64?
        /// The identifier the client chose (1 to 2^53), for a client that must name the task before the
        /// daemon answers (a background `Session`'s task factories do not wait for ferryd); absent: the
        /// session's next. One that is taken is a 409 and nothing is created.
        public var taskIdentifier: Int?
        /// Not before: the task waits, pending, until this time (seconds since 1970, Unix time), then
        /// starts when the limits and the network allow (URLSession's `earliestBeginDate`). Kept across
        /// restarts; a time already past starts it at once.
        public var earliestBeginTime: Double?
        /// How the task transfers: form, request body, decoding, limits, destination, connection.
        public var options = TaskOptions()

        /// The largest ``TaskOptions/requestBody``: 512 KiB (its base64 fits the control API's 1 MiB body limit).
        public static let maximumRequestBody = 512 << 10

        /// What ``chunks`` may be.
        public static let chunkCounts = 1...32

        /// The largest identifier a client may choose (JSON numbers are exact up to it).
        public static let maximumTaskIdentifier = 1 << 53

        /// A creation request.
        public init(
            kind: BackgroundTaskInfo.Kind,
            request: Request,
            uploadFile: String? = nil,
            taskDescription: String? = nil,
            priority: Double? = nil,
            resumeData: ResumeData? = nil,
            start: Bool? = nil,
            discretionary: Bool? = nil,
            resourceTimeout: Double? = nil,
            destination: String? = nil,
            destinationMode: Int? = nil,
            connection: ConnectionSettings? = nil
        ) {
            self.options.connection = connection
            self.kind = kind
            self.request = request
            self.uploadFile = uploadFile
            self.taskDescription = taskDescription
            self.priority = priority
            self.resumeData = resumeData
            self.start = start
            self.discretionary = discretionary
            self.resourceTimeout = resourceTimeout
            self.options.destination = destination
            self.options.destinationMode = destinationMode
        }
            /// An option, as if it were the creation's own property (`creation.destination`).
        public subscript<Value>(dynamicMember option: WritableKeyPath<TaskOptions, Value>) -> Value {
            get { options[keyPath: option] }
            set { options[keyPath: option] = newValue }
        }

        private enum CodingKeys: String, CodingKey {
            case kind, request, uploadFile, chunks, taskDescription, priority, resumeData, start, discretionary
            case resourceTimeout, bandwidthLimit, taskIdentifier, earliestBeginTime
        }

        /// Reads a creation: its own keys and the options' from the same JSON object.
        public init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            kind = try fields.decode(BackgroundTaskInfo.Kind.self, forKey: .kind)
            request = try fields.decode(Request.self, forKey: .request)
            uploadFile = try fields.decodeIfPresent(String.self, forKey: .uploadFile)
            chunks = try fields.decodeIfPresent(Int.self, forKey: .chunks)
            taskDescription = try fields.decodeIfPresent(String.self, forKey: .taskDescription)
            priority = try fields.decodeIfPresent(Double.self, forKey: .priority)
            resumeData = try fields.decodeIfPresent(ResumeData.self, forKey: .resumeData)
            start = try fields.decodeIfPresent(Bool.self, forKey: .start)
            discretionary = try fields.decodeIfPresent(Bool.self, forKey: .discretionary)
            resourceTimeout = try fields.decodeIfPresent(Double.self, forKey: .resourceTimeout)
            bandwidthLimit = try fields.decodeIfPresent(Int64.self, forKey: .bandwidthLimit)
            taskIdentifier = try fields.decodeIfPresent(Int.self, forKey: .taskIdentifier)
            earliestBeginTime = try fields.decodeIfPresent(Double.self, forKey: .earliestBeginTime)
            options = try TaskOptions(from: decoder)
        }

        /// Writes one JSON object: the creation's own keys and the options'.
        public func encode(to encoder: any Encoder) throws {
            try options.encode(to: encoder)
            var fields = encoder.container(keyedBy: CodingKeys.self)
            try fields.encode(kind, forKey: .kind)
            try fields.encode(request, forKey: .request)
            try fields.encodeIfPresent(uploadFile, forKey: .uploadFile)
            try fields.encodeIfPresent(chunks, forKey: .chunks)
            try fields.encodeIfPresent(taskDescription, forKey: .taskDescription)
            try fields.encodeIfPresent(priority, forKey: .priority)
            try fields.encodeIfPresent(resumeData, forKey: .resumeData)
            try fields.encodeIfPresent(start, forKey: .start)
            try fields.encodeIfPresent(discretionary, forKey: .discretionary)
            try fields.encodeIfPresent(resourceTimeout, forKey: .resourceTimeout)
            try fields.encodeIfPresent(bandwidthLimit, forKey: .bandwidthLimit)
            try fields.encodeIfPresent(taskIdentifier, forKey: .taskIdentifier)
            try fields.encodeIfPresent(earliestBeginTime, forKey: .earliestBeginTime)
        }
    }

    /// The latest not-before time: the end of the year 9999, in seconds since 1970.
    public static let latestBeginTime = 253_402_300_799.0

    /// Checks a not-before time: a finite number of seconds since 1970, at most ``latestBeginTime``.
    /// - Throws: ``FerryError`` saying what is wrong.
    public static func validateEarliestBeginTime(_ time: Double?) throws {
        guard let time else { return }
        guard time.isFinite, (0...latestBeginTime).contains(time) else {
            throw FerryError(
                .invalidOperation,
                "earliestBeginTime is seconds since 1970 (Unix time), from 0 to the end of the year 9999, not \(time)"
            )
        }
    }

    /// `POST …/tasks/batch`: several tasks created in one transaction (all or none).
    public struct TaskBatch: Sendable, Hashable, Codable {
        /// At most this many tasks a batch (the body limit is 1 MiB).
        public static let maximumCount = 1000
        /// The tasks, created in this order.
        public var tasks: [TaskCreation]

        /// A batch.
        public init(tasks: [TaskCreation]) { self.tasks = tasks }
    }

    /// `PATCH …/tasks/{task}`, and `POST …/resume` (optional body): what the client changed since it
    /// created the task. Absent fields stay as they are; everything is kept across restarts (S6.8).
    public struct TaskUpdate: Sendable, Hashable, Codable {
        /// Kept with the task across restarts (S6.8).
        public var taskDescription: String?
        /// 0...1: the order tasks start in under the concurrency limit, and their share of the
        /// daemon-wide bandwidth limit.
        public var priority: Double?
        /// May use a metered network. Made false while the task runs on one, it stops at its last
        /// checkpoint and waits; made true, a waiting task may start.
        public var allowsMeteredNetwork: Bool?
        /// May use a constrained network.
        public var allowsConstrainedNetwork: Bool?
        /// The task's own bandwidth limit, bytes a second; 0 removes it. Applies at once to a running
        /// transfer.
        public var bandwidthLimit: Int64?
        /// Not before (seconds since 1970): a task that has not started waits, pending, until then
        /// (URLSession's `earliestBeginDate`, sent with a background task's resume). A time already past
        /// lets it start; a task running already is not stopped.
        public var earliestBeginTime: Double?

        /// An update.
        public init(
            taskDescription: String? = nil,
            priority: Double? = nil,
            allowsMeteredNetwork: Bool? = nil,
            allowsConstrainedNetwork: Bool? = nil,
            bandwidthLimit: Int64? = nil,
            earliestBeginTime: Double? = nil
        ) {
            self.earliestBeginTime = earliestBeginTime
            self.taskDescription = taskDescription
            self.priority = priority
            self.allowsMeteredNetwork = allowsMeteredNetwork
            self.allowsConstrainedNetwork = allowsConstrainedNetwork
            self.bandwidthLimit = bandwidthLimit
        }

        /// Whether it changes nothing.
        public var isEmpty: Bool { self == TaskUpdate() }

        /// Checks the values.
        /// - Throws: ``FerryError`` saying which value is out of range.
        public func validate() throws {
            if let priority, !(0...1).contains(priority) {
                throw FerryError(.invalidOperation, "priority must be between 0 and 1")
            }
            if let bandwidthLimit, bandwidthLimit < 0 {
                throw FerryError(.invalidOperation, "bandwidthLimit is bytes a second, 0 (none) or more")
            }
            try ControlAPI.validateEarliestBeginTime(earliestBeginTime)
        }
    }

    /// `POST …/cancel`.
    public struct Cancellation: Sendable, Hashable, Codable {
        /// Keep the partial data and answer with resume data (downloads).
        public var produceResumeData: Bool
        /// Why, when it is not the client's own call (e.g. "force quit").
        public var reason: String?

        /// A cancellation.
        public init(produceResumeData: Bool = false, reason: String? = nil) {
            self.produceResumeData = produceResumeData
            self.reason = reason
        }
    }

    /// The answer to a cancellation.
    public struct CancelResult: Sendable, Hashable, Codable {
        /// The task after the cancellation.
        public var task: BackgroundTaskInfo
        /// When asked for and the download can continue.
        public var resumeData: ResumeData?

        /// A result.
        public init(task: BackgroundTaskInfo, resumeData: ResumeData?) {
            self.task = task
            self.resumeData = resumeData
        }
    }

    /// `POST /v1/sessions/{id}/ack`: every journaled event up to ``through`` has been handled.
    public struct Acknowledgement: Sendable, Hashable, Codable {
        /// The last sequence number handled.
        public var through: Int64
        /// An acknowledgement.
        public init(through: Int64) { self.through = through }
    }

    /// `PUT /v1/sessions/{id}/launch`: the command run when the session has events and no client (S6.5).
    public struct LaunchRegistration: Sendable, Hashable, Codable {
        /// Run with `/bin/sh -c`; its environment has `FERRY_SESSION` set to the identifier.
        public var command: String
        /// A registration.
        public init(command: String) { self.command = command }
    }

    /// `POST /v1/sessions/{id}/invalidate`.
    public struct Invalidation: Sendable, Hashable, Codable {
        /// Cancel every task and forget the session (invalidateAndCancel, S6.11); else only detach
        /// (finishTasksAndInvalidate: tasks go on).
        public var cancelTasks: Bool
        /// Why the tasks are cancelled, given to each as its error (a force quit, S6.4 scenario 5). When
        /// set, the session is kept so that the next attach hears of the cancellations.
        public var reason: String?
        /// An invalidation.
        public init(cancelTasks: Bool, reason: String? = nil) {
            self.cancelTasks = cancelTasks
            self.reason = reason
        }
    }

    /// The body of every error answer.
    public struct ErrorBody: Sendable, Hashable, Codable {
        /// The error.
        public var error: FerryError
        /// An answer.
        public init(error: FerryError) { self.error = error }
    }
}
