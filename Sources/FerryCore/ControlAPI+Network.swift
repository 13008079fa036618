extension ControlAPI {
    /// `GET /v1/network`: the network as ferryd sees it, and the settings that decide it.
    public struct NetworkReport: Sendable, Hashable, Codable {
        /// The state tasks are judged by now (detection with the overrides applied).
        public var state: NetworkState
        /// What detection alone says is metered: NetworkManager's value, nil when NetworkManager does not
        /// answer (the override is then the only source).
        public var detectedMetered: Bool?
        /// The persisted overrides and the daemon-wide bandwidth limit.
        public var settings: NetworkSettings

        public init(state: NetworkState, detectedMetered: Bool?, settings: NetworkSettings) {
            self.state = state
            self.detectedMetered = detectedMetered
            self.settings = settings
        }
    }

    /// `PUT /v1/network` (`ferry daemon network`): changes the overrides; absent fields stay as they are.
    /// Persisted: a restart keeps them.
    public struct NetworkUpdate: Sendable, Hashable, Codable {
        /// Whether the network counts as metered: yes, no, or auto (NetworkManager's value).
        public var metered: NetworkSettings.Override?
        /// Whether the network counts as constrained: yes, no, or auto (never, on Linux).
        public var constrained: NetworkSettings.Override?

        public init(metered: NetworkSettings.Override? = nil, constrained: NetworkSettings.Override? = nil) {
            self.metered = metered
            self.constrained = constrained
        }
    }

    /// `GET` and `PUT /v1/bandwidth` (`ferry limit --global`): the daemon-wide bandwidth limit, shared by
    /// the running transfers in proportion to their priority. Persisted.
    public struct BandwidthLimit: Sendable, Hashable, Codable {
        /// Bytes a second for all transfers together; absent or 0: unlimited.
        public var bytesPerSecond: Int64?

        public init(bytesPerSecond: Int64?) {
            self.bytesPerSecond = bytesPerSecond
        }
    }
}
