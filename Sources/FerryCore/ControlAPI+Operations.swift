/// The control API's operations routes (docs/OPERATIONS.md):
///
/// | route | body → answer |
/// | --- | --- |
/// | `GET /metrics` | → the Prometheus text format |
/// | `POST /v1/clean` | ``ControlAPI/Cleaning`` → ``ControlAPI/CleanResult`` |
/// | `POST /v1/ui` | → ``ControlAPI/StatusPage`` (starts the status page unless it runs) |
/// | `DELETE /v1/ui` | → 204 (stops it) |
extension ControlAPI {
    /// The path of the metrics, outside the versioned prefix as Prometheus expects.
    public static let metricsPath = "/metrics"

    /// `POST /v1/clean`: which finished tasks to remove.
    public struct Cleaning: Sendable, Hashable, Codable {
        /// Only tasks that finished at least this many seconds ago; nil: every finished task.
        public var olderThan: Double?
        /// Only this session's tasks; nil: every session's.
        public var session: String?

        /// A cleaning.
        public init(olderThan: Double? = nil, session: String? = nil) {
            self.olderThan = olderThan
            self.session = session
        }
    }

    /// What a cleaning removed.
    public struct CleanResult: Sendable, Hashable, Codable {
        /// The finished tasks removed, with their events.
        public var removedTasks: Int
        /// Leftover files removed (partial files kept for resume data, delivered files never collected).
        public var removedFiles: Int
        /// Their bytes.
        public var freedBytes: Int64

        /// A result.
        public init(removedTasks: Int, removedFiles: Int, freedBytes: Int64) {
            self.removedTasks = removedTasks
            self.removedFiles = removedFiles
            self.freedBytes = freedBytes
        }
    }

    /// `POST /v1/ui`: where the status page is served and the token it asks for.
    public struct StatusPage: Sendable, Hashable, Codable {
        /// The page's address with its token, e.g. `http://127.0.0.1:40123/?token=…`.
        public var url: String
        /// The token every request must carry (query `token`, or the `X-Ferry-Token` header).
        public var token: String

        /// A status page.
        public init(url: String, token: String) {
            self.url = url
            self.token = token
        }
    }
}
