import FerryCore
import Foundation
import Testing

@Suite struct BackgroundTaskMachineTests {
    let t0 = Date(timeIntervalSince1970: 1_000_000)
    let policy = RetryPolicy(baseDelay: 2, maximumDelay: 10, maximumAttempts: 4)
    let lost = FerryError(.networkConnectionLost, "the connection was lost")

    func machine(_ phase: BackgroundTaskMachine.Phase, download: Bool = true, deadline: Date? = nil)
        -> BackgroundTaskMachine
    {
        BackgroundTaskMachine(phase: phase, isDownload: download, deadline: deadline, retryPolicy: policy)
    }

    func running(stopping: BackgroundTaskMachine.Stop? = nil) throws -> BackgroundTaskMachine {
        var machine = machine(.pending)
        #expect(try machine.start(at: t0) == .startTransfer)
        if let stopping {
            switch stopping {
            case .suspend: #expect(machine.suspend() == .stopTransfer)
            case .cancel(let keep, let reason): #expect(machine.cancel(produceResumeData: keep, reason: reason) == .stopTransfer)
            case .tooSlow(let message): #expect(machine.tooSlow(message) == .stopTransfer)
            case .daemonStopping: #expect(machine.daemonStopping() == .stopTransfer)
            case .waitForNetwork: #expect(machine.mayNotUseNetwork() == .stopTransfer)
            }
        }
        return machine
    }

    @Test func aPendingTaskStartsAndFinishes() throws {
        var task = try running()
        #expect(task.phase == .running(stopping: nil))
        #expect(try task.transferFinished(.downloaded(location: "/d")) == .complete(.downloaded(location: "/d")))
        #expect(task.isCompleted)
    }

    @Test func clientIntentsOnAWaitingTask() {
        var task = machine(.pending)
        #expect(task.resume() == .none)
        #expect(task.suspend() == .persistSuspended)
        #expect(task.phase == .suspended)
        #expect(task.suspend() == .none)
        #expect(task.resume() == .persistPending)
        #expect(task.phase == .pending)
        #expect(task.cancel(produceResumeData: true, reason: nil) == .complete(.cancelled(produceResumeData: true, reason: nil)))
        #expect(task.cancel(produceResumeData: false, reason: nil) == .none)
        #expect(task.resume() == .none)
        #expect(task.suspend() == .none)
    }

    @Test func suspendingARunningTaskStopsItAtACheckpoint() throws {
        var task = try running(stopping: .suspend)
        #expect(task.suspend() == .none)
        #expect(task.resume() == .none, "a resume cannot undo a stop under way")
        #expect(try task.transferFailed(FerryError(.cancelled, "stopped"), retryAfter: nil, now: t0) == .persistSuspended)
        #expect(task.phase == .suspended)
        #expect(task.resume() == .persistPending)
    }

    @Test func aTaskTheNetworkNoLongerAllowsStopsAtACheckpointAndWaitsPending() throws {
        var task = try running(stopping: .waitForNetwork)
        #expect(task.mayNotUseNetwork() == .none, "asked once")
        #expect(task.daemonStopping() == .none)
        #expect(try task.transferFailed(FerryError(.cancelled, "stopped"), retryAfter: nil, now: t0) == .persistPending)
        #expect(task.phase == .pending)
        #expect(task.failedAttempts == 0, "waiting for the network is not a failed try")
        #expect(task.mayStart(at: t0))
        // A suspend under way is not turned into a wait.
        var suspended = try running(stopping: .suspend)
        #expect(suspended.mayNotUseNetwork() == .none)
        // A cancel wins over a wait for the network.
        var cancelled = try running(stopping: .waitForNetwork)
        #expect(cancelled.cancel(produceResumeData: true, reason: nil) == .stopTransfer)
        #expect(
            try cancelled.transferFailed(FerryError(.cancelled, "stopped"), retryAfter: nil, now: t0)
                == .complete(.cancelled(produceResumeData: true, reason: nil))
        )
    }

    @Test func aCancelWinsOverASuspendAndTheFloorButNotOverAFinish() throws {
        var task = try running(stopping: .suspend)
        #expect(task.cancel(produceResumeData: true, reason: "r") == .stopTransfer)
        #expect(task.cancel(produceResumeData: false, reason: nil) == .none, "the first cancel stands")
        #expect(task.daemonStopping() == .none)
        #expect(task.tooSlow("slow") == .none)
        #expect(task.suspend() == .none)
        #expect(
            try task.transferFailed(lost, retryAfter: nil, now: t0) == .complete(.cancelled(produceResumeData: true, reason: "r"))
        )

        var finishing = try running(stopping: .cancel(produceResumeData: false, reason: nil))
        #expect(try finishing.transferFinished(.uploaded) == .complete(.uploaded))
    }

    @Test func theFloorAndAShutdownEndAsTheySaid() throws {
        var slow = try running(stopping: .tooSlow("under the floor"))
        #expect(try slow.transferFailed(lost, retryAfter: nil, now: t0) == .complete(.tooSlow("under the floor")))

        var stopped = try running(stopping: .daemonStopping)
        #expect(stopped.suspend() == .none, "the shutdown stands; the task is pending after the restart")
        #expect(try stopped.transferFailed(lost, retryAfter: nil, now: t0) == .persistPending)
        #expect(stopped.phase == .pending)
        #expect(stopped.failedAttempts == 0, "a shutdown is not a failed try")
    }

    @Test func networkFailuresBackOffUntilNoTryIsLeft() throws {
        var task = try running()
        // 4 tries in all: backoff 2, 4, 8 (capped at 10), then the error.
        for (attempt, delay) in [(1, 2.0), (2, 4.0), (3, 8.0)] {
            let now = t0.addingTimeInterval(Double(attempt) * 100)
            #expect(try task.transferFailed(lost, retryAfter: nil, now: now) == .retry(at: now.addingTimeInterval(delay)))
            #expect(task.failedAttempts == attempt)
            #expect(!task.mayStart(at: now.addingTimeInterval(delay - 0.001)))
            #expect(throws: BackgroundTaskMachine.Refusal.self) { try task.start(at: now) }
            #expect(task.mayStart(at: now.addingTimeInterval(delay)))
            #expect(try task.start(at: now.addingTimeInterval(delay)) == .startTransfer)
        }
        #expect(try task.transferFailed(lost, retryAfter: nil, now: t0.addingTimeInterval(1000)) == .complete(.failed(lost)))
    }

    @Test func aServersRetryAfterIsHonouredAndCounted() throws {
        var task = try running()
        let busy = FerryError(.badServerResponse, "503")
        #expect(try task.transferFailed(busy, retryAfter: 30, now: t0) == .retry(at: t0.addingTimeInterval(30)))
        _ = try task.start(at: t0.addingTimeInterval(30))
        _ = try task.transferFailed(busy, retryAfter: 30, now: t0)
        _ = try task.start(at: t0.addingTimeInterval(30))
        _ = try task.transferFailed(busy, retryAfter: 30, now: t0)
        _ = try task.start(at: t0.addingTimeInterval(30))
        #expect(try task.transferFailed(busy, retryAfter: 30, now: t0) == .complete(.failed(busy)), "4 tries in all")
    }

    @Test func errorsThatAreNotTheNetworksFailAtOnce() throws {
        var task = try running()
        let disk = FerryError(.cannotWriteToFile, "the disk is full")
        #expect(try task.transferFailed(disk, retryAfter: nil, now: t0) == .complete(.failed(disk)))
    }

    @Test func aPassedDeadlineEndsTheTaskInsteadOfARetry() throws {
        var task = machine(.pending, deadline: t0.addingTimeInterval(60))
        _ = try task.start(at: t0)
        #expect(try task.transferFailed(lost, retryAfter: nil, now: t0.addingTimeInterval(59)) == .retry(at: t0.addingTimeInterval(61)))
        _ = try task.start(at: t0.addingTimeInterval(61))
        #expect(try task.transferFailed(lost, retryAfter: nil, now: t0.addingTimeInterval(61)) == .complete(.resourceTimedOut))
    }

    @Test func suspendingAndResumingAWaitingTaskForgetsItsBackoff() throws {
        var task = try running()
        _ = try task.transferFailed(lost, retryAfter: nil, now: t0)
        #expect(task.suspend() == .persistSuspended)
        #expect(task.resume() == .persistPending)
        #expect(task.failedAttempts == 0)
        #expect(task.mayStart(at: t0))
    }

    @Test func aForceQuitKeepsOnlyASuspendedDownloadsData() throws {
        var suspended = machine(.suspended)
        #expect(suspended.forceQuit(reason: "q") == .complete(.cancelled(produceResumeData: true, reason: "q")))
        var upload = machine(.suspended, download: false)
        #expect(upload.forceQuit(reason: "q") == .complete(.cancelled(produceResumeData: false, reason: "q")))
        var pending = machine(.pending)
        #expect(pending.forceQuit(reason: "q") == .complete(.cancelled(produceResumeData: false, reason: "q")))
        var invalidated = machine(.suspended)
        #expect(invalidated.invalidate(reason: "i") == .complete(.cancelled(produceResumeData: false, reason: "i")))
        var run = try running()
        #expect(run.forceQuit(reason: "q") == .stopTransfer)
        #expect(run.phase == .running(stopping: .cancel(produceResumeData: false, reason: "q")))
    }

    @Test func settingsThatCannotBeUsedFailWithoutATry() throws {
        var task = machine(.pending)
        let bad = FerryError(.secureConnectionFailed, "no such CA")
        #expect(try task.cannotStart(bad, at: t0) == .complete(.failed(bad)))
        var suspended = machine(.suspended)
        #expect(throws: BackgroundTaskMachine.Refusal.self) { try suspended.cannotStart(bad, at: t0) }
    }

    @Test func impossibleInputsAreRefusedAndChangeNothing() throws {
        for phase in [BackgroundTaskMachine.Phase.pending, .suspended, .completed, .waiting(until: t0.addingTimeInterval(9))] {
            var task = machine(phase)
            #expect(throws: BackgroundTaskMachine.Refusal.self) { try task.transferFinished(.uploaded) }
            #expect(throws: BackgroundTaskMachine.Refusal.self) { try task.transferFailed(lost, retryAfter: nil, now: t0) }
            #expect(task.phase == phase)
            #expect(task.tooSlow("x") == .none)
            #expect(task.daemonStopping() == .none)
        }
        for phase in [BackgroundTaskMachine.Phase.suspended, .completed] {
            var task = machine(phase)
            #expect(throws: BackgroundTaskMachine.Refusal.self) { try task.start(at: t0) }
        }
        var run = try running()
        do {
            _ = try run.start(at: t0)
            Issue.record("a running task started again")
        } catch {
            #expect(error.description.contains("cannot take start"))
        }
    }
}
