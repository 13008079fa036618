import Foundation

/// The user's persisted network settings (`ferry daemon network`, `ferry limit --global`): what overrides
/// detection, and ferryd's daemon-wide bandwidth limit. Kept in ``DaemonPaths/networkSettingsFile`` so
/// that ferryd and in-process sessions of the same `FERRY_HOME` read the same values.
public struct NetworkSettings: Sendable, Hashable, Codable {
    /// An override of a detected value.
    public enum Override: String, Sendable, Hashable, Codable, CaseIterable {
        /// Always true.
        case yes
        /// Always false.
        case no
        /// What detection says (NetworkManager for metered; nothing detects constrained, so false).
        case auto

        /// The value with `detected` as auto's answer.
        public func resolve(_ detected: Bool) -> Bool {
            switch self {
            case .yes: true
            case .no: false
            case .auto: detected
            }
        }
    }

    /// Whether the network counts as metered.
    public var metered: Override
    /// Whether the network counts as constrained.
    public var constrained: Override
    /// ferryd's bandwidth for all its transfers together, bytes a second; nil: unlimited.
    public var globalBandwidthLimit: Int64?

    /// Settings; by default detection decides and there is no limit.
    public init(metered: Override = .auto, constrained: Override = .auto, globalBandwidthLimit: Int64? = nil) {
        self.metered = metered
        self.constrained = constrained
        self.globalBandwidthLimit = globalBandwidthLimit
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        metered = try container.decodeIfPresent(Override.self, forKey: .metered) ?? .auto
        constrained = try container.decodeIfPresent(Override.self, forKey: .constrained) ?? .auto
        globalBandwidthLimit = try container.decodeIfPresent(Int64.self, forKey: .globalBandwidthLimit)
    }
}

/// Reads the network's state from what Linux exposes. Pure: each function takes the text of a file or
/// of a command's output, so tests give fixtures; ``NetworkMonitor`` (FerryEngine) does the reading.
public enum NetworkProbe {
    /// Whether `/proc/net/route` (IPv4) or `/proc/net/ipv6_route` (IPv6) holds a default route on an
    /// interface other than loopback.
    /// The first default route's interface and gateway, `IFACE via GATEWAY` (the tables' own hex);
    /// nil when there is none.
    public static func defaultRoutePath(ipv4 routeTable: String?, ipv6 ipv6Table: String?) -> String? {
        // Iface Destination Gateway Flags ...; a default route has destination and mask 00000000 and
        // the RTF_UP flag (0x1).
        for line in (routeTable ?? "").split(separator: "\n").dropFirst() {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.count >= 8, fields[0] != "lo", fields[1] == "00000000", fields[7] == "00000000",
                let flags = UInt32(fields[3], radix: 16), flags & 0x1 != 0
            {
                return "\(fields[0]) via \(fields[2])"
            }
        }
        // dest(32 hex) dest_prefix src src_prefix next_hop metric refcnt use flags iface; RTF_REJECT
        // (0x200) is the kernel's unreachable placeholder, not a route.
        for line in (ipv6Table ?? "").split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.count >= 10, fields[9] != "lo", fields[1] == "00", fields[0] == Substring(String(repeating: "0", count: 32)),
                let flags = UInt32(fields[8], radix: 16), flags & 0x1 != 0, flags & 0x200 == 0
            {
                return "\(fields[9]) via \(fields[4])"
            }
        }
        return nil
    }

    public static func hasDefaultRoute(ipv4 routeTable: String?, ipv6 ipv6Table: String?) -> Bool {
        defaultRoutePath(ipv4: routeTable, ipv6: ipv6Table) != nil
    }

    /// NetworkManager's `Metered` property (NMMetered) as `busctl get-property` prints it (`u 4`) or as a
    /// bare number: 1 yes and 3 guess-yes are metered; 0 unknown, 2 no and 4 guess-no are not. Nil when
    /// the text is not such a value.
    public static func networkManagerMetered(_ output: String) -> Bool? {
        let fields = output.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard let last = fields.last, let value = Int(last), (0...4).contains(value) else { return nil }
        return value == 1 || value == 3
    }

    /// One entry of `/sys/class/power_supply`: its `type`, `online` and `status` files' contents (nil
    /// when absent).
    public struct PowerSupply: Sendable, Hashable {
        public var type: String
        public var online: String?
        public var status: String?

        public init(type: String, online: String? = nil, status: String? = nil) {
            self.type = type
            self.online = online
            self.status = status
        }
    }

    /// The power source from the supplies' files: mains when a mains (or USB-C) supply is online or a
    /// battery charges or is full; battery when a battery discharges with no supply online; unknown when
    /// nothing says.
    public static func power(_ supplies: [PowerSupply]) -> NetworkState.Power {
        func trimmed(_ text: String?) -> String? { text?.trimmingCharacters(in: .whitespacesAndNewlines) }
        var sawMains = false
        var discharging = false
        for supply in supplies {
            switch trimmed(supply.type) {
            case "Mains", "USB", "USB_C", "USB_PD":
                sawMains = true
                if trimmed(supply.online) == "1" { return .mains }
            case "Battery":
                switch trimmed(supply.status) {
                case "Charging", "Full": return .mains
                case "Discharging": discharging = true
                default: break
                }
            default:
                break
            }
        }
        if discharging || sawMains { return .battery }
        return .unknown
    }
}
