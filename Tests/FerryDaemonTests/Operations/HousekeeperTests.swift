import FerryCore
@testable import FerryDaemon
import FerryEngine
import FerryStore
import Foundation
import Logging
import Testing

/// `ferry clean` and pruning by age (issue "Operations"): only finished tasks go, with their events and
/// the daemon's own files; by the injected clock.
@Suite struct HousekeeperTests {
    @Test func finishedTasksGoByAgeWithTheirEventsAndLeftoversAndNothingElseIsTouched() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        let paths = fixture.configuration.paths
        try await fixture.create(2)
        try await fixture.create(1, suspended: true)
        try await eventually("two transfers run") { fixture.transfers.running == [1, 2] }

        // Task 1 finishes now; its file waits in the delivery directory, never collected.
        let delivered = paths.deliveryDirectory + "/1.bin"
        try Data(count: 300).write(to: URL(fileURLWithPath: delivered))
        fixture.transfers.finish(1, .downloaded(location: delivered))
        try await eventually("task 1 completes") { try fixture.state(1) == .completed }

        // Ten days later task 2 fails, keeping a partial file for its resume data; a destination of
        // the user's is never the daemon's to remove.
        fixture.clock.advance(by: 10 * 86_400)
        let partial = paths.partialDirectory + "/2.part"
        try Data(count: 1000).write(to: URL(fileURLWithPath: partial))
        try fixture.store.recordProgress(
            session: "s", identifier: 2, partialPath: partial, bytesReceived: 1000, expectedLength: 5000,
            entityTag: "\"e\"", lastModified: nil
        )
        fixture.transfers.finish(2, .failed(FerryError(.badServerResponse, "the server lied")))
        try await eventually("task 2 completes") { try fixture.state(2) == .completed }

        let metrics = DaemonMetrics()
        let housekeeper = Housekeeper(
            store: fixture.store, configuration: fixture.configuration, metrics: metrics,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        // Older than 7 days: task 1 only.
        let old = try housekeeper.clean(olderThan: 7 * 86_400, session: nil)
        #expect(old == ControlAPI.CleanResult(removedTasks: 1, removedFiles: 1, freedBytes: 300))
        #expect(!FileManager.default.fileExists(atPath: delivered))
        #expect(try fixture.store.tasks(session: "s").map(\.taskIdentifier) == [2, 3])
        #expect(try fixture.events().allSatisfy { !$0.hasSuffix(" 1") })
        #expect(FileManager.default.fileExists(atPath: partial))

        // Another session's clean leaves this one's alone; then every finished task of "s" goes.
        #expect(try housekeeper.clean(olderThan: nil, session: "other").removedTasks == 0)
        let rest = try housekeeper.clean(olderThan: nil, session: "s")
        #expect(rest == ControlAPI.CleanResult(removedTasks: 1, removedFiles: 1, freedBytes: 1000))
        #expect(!FileManager.default.fileExists(atPath: partial))
        // The suspended task stays, whatever its age.
        #expect(try fixture.store.tasks(session: "s").map(\.taskIdentifier) == [3])
        #expect(try fixture.state(3) == .suspended)
        #expect(try metrics.exposition(store: fixture.store, rate: 0).contains("ferry_pruned_tasks_total 2"))
    }

    @Test func theHousekeepingRoundPrunesByTheConfiguredAgeOrNotAtAll() async throws {
        let fixture = try SchedulerFixture { $0.pruneAfter = 3600 }
        defer { fixture.remove() }
        try await fixture.create(1)
        try await eventually("it runs") { fixture.transfers.running == [1] }
        fixture.transfers.finish(1, .downloaded(location: "/elsewhere/1"))
        try await eventually("it completes") { try fixture.state(1) == .completed }
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        var configuration = fixture.configuration
        configuration.pruneAfter = nil
        Housekeeper(store: fixture.store, configuration: configuration, metrics: DaemonMetrics(), logger: logger).round()
        fixture.clock.advance(by: 3599)
        let housekeeper = Housekeeper(
            store: fixture.store, configuration: fixture.configuration, metrics: DaemonMetrics(), logger: logger
        )
        housekeeper.round()
        #expect(try fixture.store.tasks(session: "s").count == 1, "not an hour old yet")
        fixture.clock.advance(by: 2)
        housekeeper.round()
        #expect(try fixture.store.tasks(session: "s").isEmpty)
        #expect(try fixture.store.events(session: "s").isEmpty)
    }
}
