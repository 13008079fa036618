import FerryCore
@testable import FerryDaemon
import FerryEngine
import FerryStore
import Foundation
import Testing

/// The scheduler under network policy, priorities and bandwidth (issue 19), with a fake network: the
/// state is handed to ``Scheduler/networkChanged(_:)`` as ferryd's monitor would.
@Suite struct SchedulerNetworkTests {
    let metered = NetworkState(isMetered: true)

    func create(
        _ fixture: SchedulerFixture,
        url: String = "http://127.0.0.1:9/file",
        allowsMetered: Bool = true,
        priority: Double = 0.5,
        discretionary: Bool = false,
        limit: Int64? = nil
    ) async throws -> StoredTask {
        var task = FerryStore.NewTask(
            kind: .download,
            request: Request(url: URL(string: url)!),
            priority: priority,
            discretionary: discretionary
        )
        task.allowsMetered = allowsMetered
        task.bandwidthLimit = limit
        return try await fixture.scheduler.create(session: "s", [task])[0]
    }

    @Test func aTaskThatMayNotUseAMeteredNetworkWaitsSaysWhyOnceAndStartsWhenAllowed() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        await fixture.scheduler.networkChanged(metered)
        let waiting = try await create(fixture, allowsMetered: false)
        let free = try await create(fixture)
        #expect(waiting.state == .pending)
        #expect(free.state == .running)
        try await eventually("the allowed task runs") { fixture.transfers.started == [2] }
        #expect(try fixture.events() == ["taskIsWaitingForConnectivity 1"])
        let listed = try await fixture.scheduler.listing(session: "s")
        #expect(listed.map(\.waitingReason) == ["metered network", nil])
        #expect(listed[0].allowsMeteredNetwork == false)
        // Told once, however often the network changes.
        await fixture.scheduler.networkChanged(NetworkState(isMetered: true, power: .mains))
        await fixture.scheduler.poke()
        #expect(try fixture.events() == ["taskIsWaitingForConnectivity 1"])
        #expect(fixture.transfers.started == [2])
        // Unmetered: it starts.
        await fixture.scheduler.networkChanged(NetworkState())
        try await eventually("the waiting task starts") { fixture.transfers.started == [2, 1] }
        #expect(try await fixture.scheduler.listing(session: "s").map(\.waitingReason) == [nil, nil])
    }

    @Test func aBatchCreatedOnAMeteredNetworkIsToldItWaitsOncePerTask() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        await fixture.scheduler.networkChanged(metered)
        var task = FerryStore.NewTask(kind: .download, request: Request(url: URL(string: "http://127.0.0.1:9/f")!))
        task.allowsMetered = false
        _ = try await fixture.scheduler.create(session: "s", Array(repeating: task, count: 200))
        let events = try fixture.events()
        #expect(events.count == 200)
        #expect(Set(events).count == 200, "one per task")
        #expect(events.allSatisfy { $0.hasPrefix("taskIsWaitingForConnectivity ") })
        #expect(fixture.transfers.started.isEmpty)
        // Another change of the network tells none of them again.
        await fixture.scheduler.networkChanged(NetworkState(isMetered: true, isConstrained: true))
        #expect(try fixture.events().count == 200)
    }

    @Test func aMeteredFlipStopsARunningTaskAtACheckpointAsPendingAndItContinuesLater() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        _ = try await create(fixture, allowsMetered: false)
        _ = try await create(fixture)
        try await eventually("both run") { fixture.transfers.running == [1, 2] }
        await fixture.scheduler.networkChanged(metered)
        try await eventually("the forbidden one stops") { fixture.transfers.running == [2] }
        try await eventually("and is pending") { try fixture.state(1) == .pending }
        #expect(try fixture.task(1).error == nil, "waiting is not a failure")
        // (The event is recorded after the state: a loaded machine can see the state first.)
        try await eventually("it is told it waits") { try fixture.events() == ["taskIsWaitingForConnectivity 1"] }
        #expect(await fixture.scheduler.runningCount == 1)
        await fixture.scheduler.networkChanged(NetworkState())
        try await eventually("it runs again") { fixture.transfers.started == [1, 2, 1] }
    }

    @Test func changingAPolicyStopsOrStartsALiveTask() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        await fixture.scheduler.networkChanged(metered)
        _ = try await create(fixture)
        try await eventually("it runs") { fixture.transfers.running == [1] }
        try await fixture.scheduler.update(fixture.key(1), ControlAPI.TaskUpdate(allowsMeteredNetwork: false))
        try await eventually("it stops") { fixture.transfers.running.isEmpty }
        try await eventually("and waits") { try fixture.state(1) == .pending }
        #expect(try fixture.task(1).allowsMetered == false)
        #expect(try await fixture.scheduler.listing(session: "s")[0].waitingReason == "metered network")
        try await fixture.scheduler.update(fixture.key(1), ControlAPI.TaskUpdate(allowsMeteredNetwork: true))
        try await eventually("allowed again, it runs") { fixture.transfers.started == [1, 1] }
    }

    @Test func offlineOnlyTasksToThisMachineRun() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        await fixture.scheduler.networkChanged(NetworkState(isOnline: false))
        _ = try await create(fixture, url: "http://example.invalid/file")
        _ = try await create(fixture, url: "http://localhost:9/file")
        try await eventually("the local one runs") { fixture.transfers.started == [2] }
        #expect(try await fixture.scheduler.listing(session: "s").map(\.waitingReason) == ["offline", nil])
        #expect(try fixture.events() == ["taskIsWaitingForConnectivity 1"])
        await fixture.scheduler.networkChanged(NetworkState())
        try await eventually("online, the other starts") { fixture.transfers.started == [2, 1] }
    }

    @Test func discretionaryTasksWaitForAnUnmeteredNetworkAndMainsPower() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        await fixture.scheduler.networkChanged(NetworkState(power: .battery))
        _ = try await create(fixture, discretionary: true)
        #expect(try await fixture.scheduler.listing(session: "s")[0].waitingReason == "on battery")
        await fixture.scheduler.networkChanged(NetworkState(isMetered: true, power: .mains))
        #expect(try await fixture.scheduler.listing(session: "s")[0].waitingReason == "metered network")
        #expect(fixture.transfers.started.isEmpty)
        await fixture.scheduler.networkChanged(NetworkState(power: .unknown))
        try await eventually("unmetered, power unknown: it runs") { fixture.transfers.started == [1] }
    }

    @Test func higherPriorityTasksStartFirstUnderAConcurrencyLimitOfOne() async throws {
        let fixture = try SchedulerFixture { $0.maximumConcurrentTransfers = 1 }
        defer { fixture.remove() }
        _ = try await create(fixture, priority: 0.5)  // takes the slot at once
        _ = try await create(fixture, priority: 0.1)
        _ = try await create(fixture, priority: 0.9)
        _ = try await create(fixture, priority: 0.5)
        // Raised while it waits: it goes before the 0.9 one.
        try await fixture.scheduler.update(fixture.key(2), ControlAPI.TaskUpdate(priority: 1))
        for identifier in [1, 2, 3, 4] {
            try await eventually("task \(identifier) runs") { fixture.transfers.running == [identifier] }
            fixture.transfers.finish(identifier, .downloaded(location: "/x/\(identifier)"))
        }
        #expect(fixture.transfers.started == [1, 2, 3, 4])
    }

    @Test func aRunningTaskTakesANewLimitAndPriorityAtOnce() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        _ = try await create(fixture, limit: 1_000_000)
        try await eventually("it runs") { fixture.transfers.running == [1] }
        let changed = try await fixture.scheduler.update(
            fixture.key(1),
            ControlAPI.TaskUpdate(priority: 0.9, bandwidthLimit: 0)
        )
        #expect(changed.bandwidthLimit == nil, "0 removes the limit")
        #expect(changed.priority == 0.9)
        #expect(fixture.transfers.running == [1], "a new limit does not stop the transfer")
        try await fixture.scheduler.update(fixture.key(1), ControlAPI.TaskUpdate(bandwidthLimit: 2048))
        #expect(try fixture.task(1).bandwidthLimit == 2048)
    }
}
