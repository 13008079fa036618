import FerryCore
@testable import FerryDaemon
import FerryEngine
import FerryStore
import Foundation
import Logging
import Testing

@Suite struct SchedulerTests {
    let lost = FerryError(.networkConnectionLost, "the connection was lost")

    @Test func theDaemonWideLimitHoldsAndAFreedSlotIsTaken() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        let created = try await fixture.create(3)
        #expect(created.map(\.state) == [.running, .running, .pending])
        try await eventually("two transfers run") { fixture.transfers.running == [1, 2] }
        #expect(await fixture.scheduler.runningCount == 2)
        #expect(try fixture.state(1) == .running)

        fixture.transfers.finish(2, .downloaded(location: "/elsewhere/2"))
        try await eventually("task 3 starts") { fixture.transfers.started == [1, 2, 3] }
        #expect(try fixture.state(2) == .completed)
        #expect(try fixture.events() == ["didFinishDownloading 2", "didComplete 2"])
        #expect(fixture.journaled.sessions.withLock { $0 }.contains("s"))
    }

    @Test func aTaskCreatedSuspendedWaitsForItsResume() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(1, suspended: true)
        #expect(fixture.transfers.started.isEmpty)
        #expect(try fixture.state(1) == .suspended)
        let update = ControlAPI.TaskUpdate(taskDescription: "now", priority: 0.9)
        let resumed = try await fixture.scheduler.resume(fixture.key(1), update: update)
        #expect(resumed.state == .running)
        #expect(resumed.taskDescription == "now")
        #expect(resumed.priority == 0.9)
        try await eventually("the transfer runs") { fixture.transfers.started == [1] }
    }

    @Test func aTaskHeldUntilItsEarliestBeginStartsThenAndLeavesItsSlotMeanwhile() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        let begin = fixture.clock.now().addingTimeInterval(30)
        let held = try await fixture.create(1, earliestBegin: begin)
        #expect(held.map(\.state) == [.pending])
        #expect(try fixture.task(1).earliestBegin == begin, "the date is stored with the task")
        #expect(try fixture.task(1).info.earliestBeginTime == begin.timeIntervalSince1970)
        // A task without a date takes a free slot at once; the held one does not.
        try await fixture.create(1)
        try await eventually("the task without a date runs") { fixture.transfers.started == [2] }
        fixture.clock.advance(by: 29)
        await fixture.scheduler.poke()
        #expect(fixture.transfers.started == [2], "not before its time, whatever pokes it")
        #expect(try fixture.state(1) == .pending)
        fixture.clock.advance(by: 1)
        try await eventually("it starts when the clock reaches its time") { fixture.transfers.started == [2, 1] }
    }

    @Test func aDateSentWithTheResumeHoldsATaskCreatedSuspended() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(1, suspended: true)
        let begin = fixture.clock.now().addingTimeInterval(60)
        let resumed = try await fixture.scheduler.resume(
            fixture.key(1),
            update: ControlAPI.TaskUpdate(earliestBeginTime: begin.timeIntervalSince1970)
        )
        #expect(resumed.state == .pending)
        fixture.clock.advance(by: 59)
        await fixture.scheduler.poke()
        #expect(fixture.transfers.started.isEmpty)
        fixture.clock.advance(by: 1)
        try await eventually("it starts at its time") { fixture.transfers.started == [1] }
    }

    @Test func aHeldTaskOutlivesTheScheduler() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        let begin = fixture.clock.now().addingTimeInterval(20)
        try await fixture.create(1, earliestBegin: begin)
        // A ferryd started again reads the date from the store: a scheduler made afresh over the same
        // store holds the task too, and starts it at its time.
        let again = Scheduler(
            store: fixture.store,
            hub: fixture.hub,
            configuration: fixture.configuration,
            transports: await fixture.scheduler.transports,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            run: { task, _, meter in await fixture.transfers.run(task, meter) },
            onEventsJournaled: { _ in }
        )
        await fixture.scheduler.stopAll()
        await again.poke()
        #expect(fixture.transfers.started.isEmpty)
        fixture.clock.advance(by: 20)
        try await eventually("the new scheduler starts it at its time") { fixture.transfers.started == [1] }
    }

    @Test func networkFailuresAreRetriedAfterTheBackoffOnTheClock() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(1)
        fixture.transfers.finish(1, .failed(lost))
        try await eventually("the failure is recorded") { try fixture.state(1) == .pending }
        // Not before its time (10 s), whatever pokes it.
        fixture.clock.advance(by: 9)
        await fixture.scheduler.poke()
        #expect(fixture.transfers.started == [1])
        fixture.clock.advance(by: 1)
        try await eventually("the retry starts when the clock reaches it") { fixture.transfers.started == [1, 1] }
        fixture.transfers.finish(1, .failed(lost))
        try await eventually("the second failure is recorded") { try fixture.state(1) == .pending }
        fixture.clock.advance(by: 19)
        await fixture.scheduler.poke()
        #expect(fixture.transfers.started == [1, 1], "the backoff doubles: 20 s")
        fixture.clock.advance(by: 1)
        try await eventually("the third try starts") { fixture.transfers.started == [1, 1, 1] }
        fixture.transfers.finish(1, .failed(lost))
        try await eventually("three tries in all, then the error") { try fixture.state(1) == .completed }
        #expect(try fixture.task(1).error?.code == .networkConnectionLost)
        #expect(try fixture.events() == ["didComplete 1"])
    }

    @Test func aServersRetryAfterDecidesTheWait() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(1)
        fixture.transfers.finish(1, .retryLater(after: 45, FerryError(.badServerResponse, "503")))
        try await eventually("the answer is recorded") { try fixture.state(1) == .pending }
        fixture.clock.advance(by: 44)
        await fixture.scheduler.poke()
        #expect(fixture.transfers.started == [1])
        fixture.clock.advance(by: 1)
        try await eventually("tried again after 45 s") { fixture.transfers.started == [1, 1] }
    }

    @Test func aWaitingTaskLeavesItsSlotToOthers() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(3)
        fixture.transfers.finish(1, .failed(lost))
        try await eventually("task 3 takes the slot") { fixture.transfers.started == [1, 2, 3] }
        fixture.clock.advance(by: 10)
        try await Task.sleep(for: .milliseconds(50))
        #expect(fixture.transfers.started == [1, 2, 3], "the limit holds when the retry's time comes")
        fixture.transfers.finish(3, .uploaded)
        try await eventually("the retry takes the freed slot") { fixture.transfers.started == [1, 2, 3, 1] }
    }

    @Test func thePassedResourceDeadlineEndsTheTask() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(1, resourceTimeout: 15)
        fixture.transfers.finish(1, .failed(lost))
        try await eventually("the failure is recorded") { try fixture.state(1) == .pending }
        fixture.clock.advance(by: 10)
        try await eventually("the retry starts") { fixture.transfers.started.count == 2 }
        fixture.clock.advance(by: 6)
        fixture.transfers.finish(1, .failed(lost))
        try await eventually("the task ends") { try fixture.state(1) == .completed }
        let error = try #require(try fixture.task(1).error)
        #expect(error.code == .timedOut)
        #expect(error.message.contains("resource timeout"))
    }

    @Test func aTransferUnderTheThroughputFloorIsStopped() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(1)
        try await eventually("the transfer runs") { fixture.transfers.running == [1] }
        let meter = try #require(fixture.transfers.meter(1))
        meter.add(50_000)
        await fixture.scheduler.checkThroughput()
        meter.add(20_000)
        await fixture.scheduler.checkThroughput()
        #expect(fixture.transfers.running == [1], "20,000 bytes in 10 s is above 1,000 a second")
        meter.add(9_000)
        await fixture.scheduler.checkThroughput()
        try await eventually("the slow transfer ends") { try fixture.state(1) == .completed }
        let error = try #require(try fixture.task(1).error)
        #expect(error.code == .timedOut)
        #expect(error.message.contains("stayed under 1000 bytes a second"))
    }

    @Test func suspendStopsTheTransferAndResumeRunsItAgain() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(1)
        try await eventually("the transfer runs") { fixture.transfers.running == [1] }
        let suspended = try await fixture.scheduler.suspend(fixture.key(1))
        #expect(suspended.state == .suspended, "suspend returns once the transfer has stopped")
        #expect(fixture.transfers.running.isEmpty)
        #expect(try fixture.events().isEmpty)
        _ = try await fixture.scheduler.resume(fixture.key(1), update: nil)
        try await eventually("it runs again") { fixture.transfers.started == [1, 1] }
    }

    @Test func aCancelStopsTheTransferAndCompletesTheTask() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(2)
        let (after, _) = try await fixture.scheduler.cancel(fixture.key(1), produceResumeData: false, reason: "enough")
        #expect(after.state == .completed)
        #expect(after.error?.code == .cancelled)
        #expect(after.error?.message == "enough")
        let (other, _) = try await fixture.scheduler.cancel(fixture.key(2), produceResumeData: false, reason: nil)
        #expect(other.error?.message == "the task was cancelled")
        let (again, _) = try await fixture.scheduler.cancel(fixture.key(2), produceResumeData: false, reason: "late")
        #expect(again.error?.message == "the task was cancelled", "a completed task stays as it is")
        #expect(try fixture.events() == ["didComplete 1", "didComplete 2"])
    }

    @Test func aForceQuitCancelsEverythingRunningFirstInOneGo() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(4)
        _ = try await fixture.scheduler.suspend(fixture.key(4))
        try await eventually("two transfers run") { fixture.transfers.running == [1, 2] }
        try await fixture.scheduler.cancelAll(session: "s", reason: "force quit", forceQuit: true)
        #expect(fixture.transfers.running.isEmpty)
        for identifier in 1...4 {
            #expect(try fixture.task(identifier).error?.message == "force quit")
        }
        let events = try fixture.events()
        #expect(Set(events.prefix(2)) == ["didComplete 1", "didComplete 2"], "the running ones end first")
        #expect(events.suffix(2) == ["didComplete 3", "didComplete 4"])
        #expect(fixture.transfers.started == [1, 2], "nothing starts in the freed slots")
    }

    @Test func aStoppingDaemonLeavesRunningTasksPendingAndStartsNothing() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(3)
        try await eventually("two transfers run") { fixture.transfers.running == [1, 2] }
        await fixture.scheduler.stopAll()
        #expect(try (1...3).map { try fixture.state($0) } == [.pending, .pending, .pending])
        #expect(try fixture.events().isEmpty)
        #expect(fixture.transfers.started == [1, 2])
        #expect(await fixture.scheduler.poke() == 0)
    }

    @Test func aFinishedTransferWinsOverALateCancel() async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        try await fixture.create(1)
        // The transfer's end is already on its way when the cancel comes.
        fixture.transfers.finish(1, .uploaded)
        let (after, _) = try await fixture.scheduler.cancel(fixture.key(1), produceResumeData: false, reason: nil)
        #expect(after.state == .completed)
        #expect(after.error == nil)
    }
}
