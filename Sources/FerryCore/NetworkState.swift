/// What the machine's network and power look like now, as ferryd and in-process sessions judge a task's
/// ``NetworkPolicy`` by. A value: ``NetworkProbe`` reads it, a fake gives it in tests.
public struct NetworkState: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Where the machine's power comes from.
    public enum Power: String, Sendable, Hashable, Codable {
        /// Mains (AC) power, or a battery that is charging or full.
        case mains
        /// A battery that is discharging, with no mains supply online.
        case battery
        /// No power supply is described (`/sys/class/power_supply` is empty, as in most servers and
        /// containers).
        case unknown
    }

    /// A default route exists (IPv4 or IPv6): the machine can reach beyond its own networks.
    public var isOnline: Bool
    /// The primary connection is metered (NetworkManager's value, or the user's override): Linux's
    /// stand-in for Apple's cellular and expensive networks.
    public var isMetered: Bool
    /// The connection is constrained (Apple's Low Data Mode). Linux has no such notion, so only the
    /// user's override sets it.
    public var isConstrained: Bool
    /// Where power comes from.
    public var power: Power
    /// Which network the machine uses: its default route's interface and gateway (`wlan0 via
    /// 0100A8C0`); nil when unknown. A change while online is a move to another network, for which
    /// HTTP/3 connections migrate (RFC 9000 §9).
    public var path: String?

    /// A state; by default online, unmetered, unconstrained, power unknown.
    public init(isOnline: Bool = true, isMetered: Bool = false, isConstrained: Bool = false, power: Power = .unknown) {
        self.isOnline = isOnline
        self.isMetered = isMetered
        self.isConstrained = isConstrained
        self.power = power
    }

    public var description: String {
        [
            isOnline ? "online" : "offline",
            isMetered ? "metered" : "unmetered",
            isConstrained ? "constrained" : nil,
            power == .unknown ? nil : "on \(power.rawValue)",
        ].compactMap { $0 }.joined(separator: ", ")
    }
}

/// What a task may use, from its request and its session's configuration (the stricter wins), and
/// whether the system may defer it (S6.10).
public struct NetworkPolicy: Sendable, Hashable, Codable {
    /// Why a task waits instead of running.
    public enum WaitReason: String, Sendable, Hashable, Codable, CaseIterable {
        /// No default route, and the task's host is not on this machine.
        case offline
        /// The network is metered and the task may not use a metered network.
        case metered = "metered network"
        /// The network is constrained and the task may not use a constrained network.
        case constrained = "constrained network"
        /// A discretionary task waits for mains power.
        case battery = "on battery"
    }

    /// May use a metered network (allowsCellularAccess and allowsExpensiveNetworkAccess).
    public var allowsMetered: Bool
    /// May use a constrained network (allowsConstrainedNetworkAccess).
    public var allowsConstrained: Bool
    /// Runs only on an unmetered network and, where power is known, on mains power.
    public var isDiscretionary: Bool

    /// A policy; by default everything is allowed and nothing deferred.
    public init(allowsMetered: Bool = true, allowsConstrained: Bool = true, isDiscretionary: Bool = false) {
        self.allowsMetered = allowsMetered
        self.allowsConstrained = allowsConstrained
        self.isDiscretionary = isDiscretionary
    }

    /// The policy of `request` in a session configured with `configuration`: a false on either side wins.
    /// Cellular and expensive both mean metered on Linux.
    public init(request: Request, configuration: SessionConfiguration) {
        self.init(
            allowsMetered: request.allowsCellularAccess && request.allowsExpensiveNetworkAccess
                && configuration.allowsCellularAccess && configuration.allowsExpensiveNetworkAccess,
            allowsConstrained: request.allowsConstrainedNetworkAccess && configuration.allowsConstrainedNetworkAccess,
            isDiscretionary: configuration.isDiscretionary
        )
    }

    /// Why a task under this policy, to `host`, may not run in `state`; nil when it may. A host on this
    /// machine (localhost, 127.0.0.0/8, ::1) is reachable without a default route, so it is never
    /// offline; the metered, constrained and power rules apply to every host (Ferry does not look at
    /// which interface a connection would use).
    public func waitReason(in state: NetworkState, host: String?) -> WaitReason? {
        if !state.isOnline, !Self.isLoopback(host) { return .offline }
        if state.isMetered, !allowsMetered || isDiscretionary { return .metered }
        if state.isConstrained, !allowsConstrained { return .constrained }
        if isDiscretionary, state.power == .battery { return .battery }
        return nil
    }

    /// Whether `host` names this machine.
    public static func isLoopback(_ host: String?) -> Bool {
        guard var host = host?.lowercased() else { return false }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
