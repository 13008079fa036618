import FerryCore
import Foundation
import Testing

@Suite struct TaskStateMachineTests {
    @Test func aTaskStartsSuspendedAndRunsOnResume() {
        var machine = TaskStateMachine()
        #expect(machine.state == .suspended)
        #expect(!machine.hasStarted)
        #expect(machine.suspend() == .none)
        #expect(machine.resume() == .startTransfer)
        #expect(machine.state == .running)
        #expect(machine.resume() == .none)
    }

    @Test func suspendAndResumeKeepTheSameTransfer() {
        var machine = TaskStateMachine()
        _ = machine.resume()
        #expect(machine.suspend() == .pauseTransfer)
        #expect(machine.state == .suspended)
        #expect(machine.hasStarted)
        #expect(machine.suspend() == .none)
        #expect(machine.resume() == .resumeTransfer)
        #expect(machine.state == .running)
    }

    @Test func successCompletes() {
        var machine = TaskStateMachine()
        _ = machine.resume()
        #expect(machine.transferFinished(error: nil) == .complete(nil))
        #expect(machine.state == .completed)
        #expect(machine.resume() == .none)
        #expect(machine.cancel() == .none)
        #expect(machine.transferFinished(error: nil) == .none)
    }

    @Test func cancellingBeforeStartCompletesAtOnce() {
        var machine = TaskStateMachine()
        guard case .complete(let error?) = machine.cancel() else {
            Issue.record("expected an immediate cancelled completion")
            return
        }
        #expect(error.code == .cancelled)
        #expect(machine.state == .completed)
    }

    @Test func cancellingARunningTaskWaitsForTheTransfer() {
        var machine = TaskStateMachine()
        _ = machine.resume()
        #expect(machine.cancel() == .cancelTransfer(produceResumeData: false))
        #expect(machine.state == .canceling)
        #expect(machine.cancel() == .none)
        #expect(machine.resume() == .none)
        // The transfer ends with whatever error; the task reports a cancellation without resume data.
        let resumeData = Self.resumeData()
        let action = machine.transferFinished(
            error: FerryError(.networkConnectionLost, "gone", resumeData: resumeData)
        )
        guard case .complete(let error?) = action else {
            Issue.record("expected completion")
            return
        }
        #expect(error.code == .cancelled)
        #expect(error.resumeData == nil)
    }

    @Test func cancelByProducingResumeDataKeepsIt() {
        var machine = TaskStateMachine()
        _ = machine.resume()
        _ = machine.suspend()
        #expect(machine.cancel(produceResumeData: true) == .cancelTransfer(produceResumeData: true))
        let resumeData = Self.resumeData()
        guard
            case .complete(let error?) = machine.transferFinished(
                error: FerryError(.cancelled, "stopped", resumeData: resumeData)
            )
        else {
            Issue.record("expected completion")
            return
        }
        #expect(error.code == .cancelled)
        #expect(error.resumeData == resumeData)
    }

    @Test func aPausedTransferCanFail() {
        var machine = TaskStateMachine()
        _ = machine.resume()
        _ = machine.suspend()
        let failure = FerryError(.timedOut, "the server gave up on the paused connection")
        #expect(machine.transferFinished(error: failure) == .complete(failure))
    }

    static func resumeData() -> ResumeData {
        let request = Request(url: URL(string: "http://127.0.0.1/x")!)
        return ResumeData(
            originalRequest: request,
            currentRequest: request,
            bytesReceived: 10,
            expectedLength: 100,
            entityTag: "\"a\"",
            lastModified: nil,
            partialFilePath: "/tmp/partial"
        )
    }
}
