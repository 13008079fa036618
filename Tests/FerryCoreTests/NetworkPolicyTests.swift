import FerryCore
import Foundation
import Testing

/// Network state, policy and the bandwidth sharing rules (issue 19): pure, with fixtures for what Linux
/// exposes and a simulated clock.
@Suite struct NetworkPolicyTests {
    @Test func theStricterSettingWinsAndCellularAndExpensiveBothMeanMetered() {
        var configuration = SessionConfiguration.default
        var request = Request(url: URL(string: "https://example.com/")!)
        #expect(NetworkPolicy(request: request, configuration: configuration) == NetworkPolicy())
        request.allowsCellularAccess = false
        #expect(!NetworkPolicy(request: request, configuration: configuration).allowsMetered)
        request.allowsCellularAccess = true
        configuration.allowsExpensiveNetworkAccess = false
        #expect(!NetworkPolicy(request: request, configuration: configuration).allowsMetered)
        configuration = .default
        request.allowsConstrainedNetworkAccess = false
        let policy = NetworkPolicy(request: request, configuration: configuration)
        #expect(policy.allowsMetered && !policy.allowsConstrained)
        configuration.isDiscretionary = true
        #expect(NetworkPolicy(request: request, configuration: configuration).isDiscretionary)
    }

    @Test func waitReasons() {
        let strict = NetworkPolicy(allowsMetered: false, allowsConstrained: false)
        let open = NetworkPolicy()
        let deferred = NetworkPolicy(isDiscretionary: true)
        let host = "example.com"
        #expect(open.waitReason(in: NetworkState(), host: host) == nil)
        #expect(open.waitReason(in: NetworkState(isOnline: false), host: host) == .offline)
        #expect(open.waitReason(in: NetworkState(isOnline: false), host: "127.0.0.1") == nil)
        #expect(open.waitReason(in: NetworkState(isMetered: true, isConstrained: true, power: .battery), host: host) == nil)
        #expect(strict.waitReason(in: NetworkState(isMetered: true), host: host) == .metered)
        #expect(strict.waitReason(in: NetworkState(isMetered: true), host: "localhost") == .metered, "metered applies to every host")
        #expect(strict.waitReason(in: NetworkState(isConstrained: true), host: host) == .constrained)
        #expect(strict.waitReason(in: NetworkState(power: .battery), host: host) == nil)
        #expect(deferred.waitReason(in: NetworkState(isMetered: true), host: host) == .metered)
        #expect(deferred.waitReason(in: NetworkState(power: .battery), host: host) == .battery)
        #expect(deferred.waitReason(in: NetworkState(power: .unknown), host: host) == nil, "power unknown: not held back")
        #expect(deferred.waitReason(in: NetworkState(isOnline: false, isMetered: true), host: host) == .offline)
    }

    @Test func loopbackHosts() {
        for host in ["localhost", "LOCALHOST", "a.localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"] {
            #expect(NetworkPolicy.isLoopback(host), "\(host)")
        }
        for host in [nil, "", "example.com", "128.0.0.1", "127.0.0", "127.0.0.1.example.com", "localhost.example", "::2"] {
            #expect(!NetworkPolicy.isLoopback(host), "\(host ?? "nil")")
        }
    }

    @Test func defaultRoutesFromProc() {
        let header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        let withDefault = header + "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
            + "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
        let subnetOnly = header + "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
        let down = header + "eth0\t00000000\t010200C0\t0002\t0\t0\t0\t00000000\t0\t0\t0\n"
        #expect(NetworkProbe.hasDefaultRoute(ipv4: withDefault, ipv6: nil))
        #expect(!NetworkProbe.hasDefaultRoute(ipv4: subnetOnly, ipv6: nil))
        #expect(!NetworkProbe.hasDefaultRoute(ipv4: down, ipv6: nil), "a route without RTF_UP")
        #expect(!NetworkProbe.hasDefaultRoute(ipv4: header, ipv6: nil))
        #expect(!NetworkProbe.hasDefaultRoute(ipv4: nil, ipv6: nil))
        let zero = String(repeating: "0", count: 32)
        let v6Default = "\(zero) 00 \(zero) 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 eth0\n"
        let v6Unreachable = "\(zero) 00 \(zero) 00 \(zero) ffffffff 00000001 00000000 00200200 lo\n"
        let v6Reject = "\(zero) 00 \(zero) 00 \(zero) ffffffff 00000001 00000000 00200201 eth0\n"
        #expect(NetworkProbe.hasDefaultRoute(ipv4: subnetOnly, ipv6: v6Default))
        #expect(!NetworkProbe.hasDefaultRoute(ipv4: subnetOnly, ipv6: v6Unreachable))
        #expect(!NetworkProbe.hasDefaultRoute(ipv4: nil, ipv6: v6Reject))
    }

    @Test func networkManagersMeteredValue() {
        #expect(NetworkProbe.networkManagerMetered("u 1\n") == true)
        #expect(NetworkProbe.networkManagerMetered("u 3") == true, "guess-yes")
        #expect(NetworkProbe.networkManagerMetered("u 2") == false)
        #expect(NetworkProbe.networkManagerMetered("u 4") == false, "guess-no")
        #expect(NetworkProbe.networkManagerMetered("u 0") == false, "unknown")
        #expect(NetworkProbe.networkManagerMetered("4") == false)
        #expect(NetworkProbe.networkManagerMetered("u 7") == nil)
        #expect(NetworkProbe.networkManagerMetered("Failed to get property") == nil)
        #expect(NetworkProbe.networkManagerMetered("") == nil)
    }

    @Test func powerFromTheSupplies() {
        typealias Supply = NetworkProbe.PowerSupply
        #expect(NetworkProbe.power([]) == .unknown)
        #expect(NetworkProbe.power([Supply(type: "Mains\n", online: "1\n")]) == .mains)
        #expect(NetworkProbe.power([Supply(type: "Mains", online: "0"), Supply(type: "Battery", status: "Discharging")]) == .battery)
        #expect(NetworkProbe.power([Supply(type: "Battery", status: "Discharging\n")]) == .battery)
        #expect(NetworkProbe.power([Supply(type: "Battery", status: "Charging")]) == .mains)
        #expect(NetworkProbe.power([Supply(type: "Battery", status: "Full")]) == .mains)
        #expect(NetworkProbe.power([Supply(type: "USB_C", online: "1"), Supply(type: "Battery", status: "Discharging")]) == .mains)
        #expect(NetworkProbe.power([Supply(type: "Battery", status: "Unknown")]) == .unknown)
    }

    @Test func settingsDecodeWithDefaultsAndOverridesResolve() throws {
        let empty = try JSONDecoder().decode(NetworkSettings.self, from: Data("{}".utf8))
        #expect(empty == NetworkSettings())
        let set = try JSONDecoder().decode(NetworkSettings.self, from: Data(#"{"metered":"yes","globalBandwidthLimit":5}"#.utf8))
        #expect(set.metered == .yes && set.constrained == .auto && set.globalBandwidthLimit == 5)
        #expect(NetworkSettings.Override.yes.resolve(false))
        #expect(!NetworkSettings.Override.no.resolve(true))
        #expect(NetworkSettings.Override.auto.resolve(true) && !NetworkSettings.Override.auto.resolve(false))
        let round = try JSONDecoder().decode(NetworkSettings.self, from: JSONEncoder().encode(set))
        #expect(round == set)
    }

    // MARK: Bandwidth

    @Test func aTokenBucketHoldsItsRateForChunksOfAnySize() {
        var bucket = TokenBucket(bytesPerSecond: 10_000)
        #expect(bucket.burst == 16_384)
        // 64 KiB at 10 KB/s: paid for by a wait.
        var now = 0.0
        var moved = 0
        while now < 60 {
            let wait = bucket.take(65_536, now: now)
            moved += 65_536
            now += wait
        }
        // The average over the minute is the rate, give or take the burst and one chunk.
        #expect(Double(moved) <= 10_000 * now + 16_384 + 65_536)
        #expect(Double(moved) >= 10_000 * now - 65_536)
        // The largest limit the API takes is kept as given (a Double round trip would overflow Int64).
        #expect(TokenBucket(bytesPerSecond: .max).bytesPerSecond == .max)
        bucket.setRate(1_000_000, now: now)
        #expect(bucket.rate == 1_000_000)
        #expect(bucket.burst == 50_000, "50 ms of the new rate")
    }

    /// Runs takers that always want more (16 KiB at a time) against a shared limit on a simulated
    /// clock, in steps of 1 ms, and returns the bytes each moved in `seconds`.
    func share(
        _ limit: Int64,
        weights: [Double],
        seconds: Double,
        change: (at: Double, limit: Int64?)? = nil
    ) -> (moved: [Int], sharedAfterChange: [Int]) {
        var shared = SharedBandwidth(bytesPerSecond: limit)
        var moved = Array(repeating: 0, count: weights.count)
        var movedAfter = Array(repeating: 0, count: weights.count)
        var tickets: [Int: Int] = [:]  // ticket → member
        var idle = Set(weights.indices)
        var now = 0.0
        var changed = false
        while now < seconds {
            if let change, !changed, now >= change.at {
                shared.setLimit(change.limit, now: now)
                changed = true
            }
            for member in idle.sorted() {
                switch shared.take(member: member, count: 16_384, weight: weights[member], now: now) {
                case .go:
                    moved[member] += 16_384
                    if changed { movedAfter[member] += 16_384 }
                case .queued(let ticket):
                    tickets[ticket] = member
                    idle.remove(member)
                }
            }
            for ticket in shared.release(now: now).tickets {
                let member = tickets.removeValue(forKey: ticket)!
                moved[member] += 16_384
                if changed { movedAfter[member] += 16_384 }
                idle.insert(member)
            }
            now += 0.001
        }
        return (moved, movedAfter)
    }

    @Test func threeTakersShareALimitByWeightAndTogetherStayWithinIt() {
        let limit: Int64 = 3_000_000
        let (moved, _) = share(limit, weights: [0.25, 0.5, 0.75], seconds: 10)
        let total = moved.reduce(0, +)
        #expect(abs(Double(total) - Double(limit) * 10) <= Double(limit) * 10 * 0.05, "total \(total)")
        // 1 : 2 : 3, within a few percent.
        #expect(abs(Double(moved[1]) / Double(moved[0]) - 2) < 0.1, "\(moved)")
        #expect(abs(Double(moved[2]) / Double(moved[0]) - 3) < 0.15, "\(moved)")
    }

    @Test func equalWeightsShareEquallyAndALimitChangeTakesEffect() {
        let (moved, after) = share(1_000_000, weights: [0.5, 0.5, 0.5], seconds: 10, change: (5, 4_000_000))
        #expect(Set(moved.map { $0 / 100_000 }).count <= 2, "equal shares: \(moved)")
        let afterTotal = Double(after.reduce(0, +))
        #expect(abs(afterTotal - 4_000_000 * 5) <= 4_000_000 * 5 * 0.05, "after the change: \(afterTotal)")
        let beforeTotal = Double(moved.reduce(0, +)) - afterTotal
        #expect(abs(beforeTotal - 1_000_000 * 5) <= 1_000_000 * 5 * 0.05, "before the change: \(beforeTotal)")
    }

    @Test func removingTheLimitReleasesEveryWaiter() {
        var shared = SharedBandwidth(bytesPerSecond: 16_384)
        #expect(shared.take(member: 1, count: 100_000, weight: 1, now: 0) == .go)
        guard case .queued(let ticket) = shared.take(member: 2, count: 10, weight: 1, now: 0) else {
            Issue.record("a taker after the debt must queue")
            return
        }
        #expect(shared.release(now: 0.5).tickets.isEmpty)
        shared.setLimit(nil, now: 0.5)
        #expect(shared.release(now: 0.5).tickets == [ticket])
        #expect(shared.take(member: 2, count: 1 << 30, weight: 1, now: 0.5) == .go)
        // A withdrawn ticket is never released.
        shared.setLimit(1000, now: 1)
        _ = shared.take(member: 3, count: 100_000, weight: 1, now: 1)
        if case .queued(let late) = shared.take(member: 4, count: 1, weight: 1, now: 1) {
            shared.withdraw(late)
            #expect(shared.queued == 0)
        }
    }
}
