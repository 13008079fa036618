import FerryCore
@testable import FerryEngine
import Foundation
import Synchronization
import Testing

/// The machine's network as `SystemNetworkSource` reads it, from a fake `/proc` and `/sys` and a fake
/// NetworkManager query (a shell command standing in for busctl), and the monitor's change stream.
@Suite struct NetworkMonitorTests {
    func fakeRoot(defaultRoute: Bool, battery: String?) throws -> String {
        let root = "/tmp/ferry-netroot-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root + "/proc/net", withIntermediateDirectories: true)
        let header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        let route = defaultRoute ? "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" : ""
        try (header + route + "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
            .write(toFile: root + "/proc/net/route", atomically: true, encoding: .utf8)
        if let battery {
            let directory = root + "/sys/class/power_supply/BAT0"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try "Battery\n".write(toFile: directory + "/type", atomically: true, encoding: .utf8)
            try battery.write(toFile: directory + "/status", atomically: true, encoding: .utf8)
        }
        return root
    }

    @Test func routesPowerAndNetworkManagersAnswerMakeTheState() async throws {
        let root = try fakeRoot(defaultRoute: true, battery: "Discharging\n")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let source = SystemNetworkSource(settingsFile: nil, root: root, networkManagerQuery: ["/bin/sh", "-c", "echo 'u 1'"])
        let reading = await source.read()
        var expected = NetworkState(isOnline: true, isMetered: true, power: .battery)
        // The default route's interface and gateway name the network (a change is a move: HTTP/3 migrates).
        expected.path = "eth0 via 010200C0"
        #expect(reading.state == expected)
        #expect(reading.detectedMetered == true)

        let offline = try fakeRoot(defaultRoute: false, battery: nil)
        defer { try? FileManager.default.removeItem(atPath: offline) }
        let unmetered = SystemNetworkSource(settingsFile: nil, root: offline, networkManagerQuery: ["/bin/sh", "-c", "echo 'u 4'"])
        #expect(await unmetered.read().state == NetworkState(isOnline: false, isMetered: false, power: .unknown))
    }

    @Test func aNetworkManagerThatFailsOrHangsCountsAsNoAnswer() async throws {
        let root = try fakeRoot(defaultRoute: true, battery: nil)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let failing = SystemNetworkSource(settingsFile: nil, root: root, networkManagerQuery: ["/bin/sh", "-c", "echo 'u 1'; exit 1"])
        let failed = await failing.read()
        #expect(failed.detectedMetered == nil && !failed.state.isMetered)
        let missing = SystemNetworkSource(settingsFile: nil, root: root, networkManagerQuery: ["/nonexistent/busctl"])
        #expect(await missing.read().detectedMetered == nil)
        // One that never answers is given up after 2 s, and killed: its pid is gone long before the
        // 300 s it would sleep (the bound is loose on purpose; a loaded machine delays the answer, and
        // timing belongs in benchmarks, but a wait for the sleep to end would break it).
        let pidFile = root + "/hanging.pid"
        let hanging = SystemNetworkSource(
            settingsFile: nil,
            root: root,
            networkManagerQuery: ["/bin/sh", "-c", "echo $$ > '\(pidFile)'; exec sleep 300"]
        )
        let start = ContinuousClock.now
        #expect(await hanging.read().detectedMetered == nil)
        #expect(ContinuousClock.now - start < .seconds(120))
        let pid = try #require(Int32(String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(pid, 0) != 0, "the hanging program \(pid) was killed and reaped")
    }

    @Test func theSettingsFileOverridesDetection() async throws {
        let root = try fakeRoot(defaultRoute: true, battery: nil)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let settings = root + "/network.json"
        let source = SystemNetworkSource(settingsFile: settings, root: root, networkManagerQuery: ["/bin/sh", "-c", "echo 'u 1'"])
        try SystemNetworkSource.write(NetworkSettings(metered: .no, constrained: .yes, globalBandwidthLimit: 9), to: settings)
        var reading = await source.read()
        #expect(!reading.state.isMetered && reading.state.isConstrained)
        #expect(reading.detectedMetered == nil, "NetworkManager is not asked while the setting decides")
        #expect(reading.settings.globalBandwidthLimit == 9)
        try SystemNetworkSource.write(NetworkSettings(metered: .auto), to: settings)
        reading = await source.read()
        #expect(reading.state.isMetered && !reading.state.isConstrained)
        // A damaged file is the defaults, not an error.
        try "{not json".write(toFile: settings, atomically: true, encoding: .utf8)
        #expect(SystemNetworkSource.settings(at: settings) == NetworkSettings())
    }

    final class Fake: NetworkStateSource {
        let state = Mutex(NetworkState())
        func read() async -> NetworkReading { NetworkReading(state: state.withLock { $0 }) }
    }

    @Test func subscribersHearEachChangeOnceAndWaitersAreReleased() async throws {
        let fake = Fake()
        let monitor = NetworkMonitor(source: fake, interval: 0.02)
        await monitor.refresh()
        var changes = monitor.changes().makeAsyncIterator()
        #expect(await changes.next()?.state == NetworkState(), "the current state first")
        await monitor.refresh()  // unchanged: nothing
        fake.state.withLock { $0.isMetered = true }
        await monitor.refresh()
        #expect(await changes.next()?.state.isMetered == true)
        let waiter = Task { try await monitor.wait { !$0.isMetered } }
        try await Task.sleep(for: .milliseconds(50))
        fake.state.withLock { $0.isMetered = false }
        try await waiter.value  // the poller (started by wait) sees it
        monitor.stop()
        #expect(await changes.next()?.state.isMetered == false, "the change the waiter saw")
        #expect(await changes.next() == nil, "stopping ends the subscriptions")
    }
}
