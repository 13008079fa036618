import FerryCore
import FerryStore
import Foundation
import Testing

/// A fresh store in its own temporary directory, removed when the fixture goes.
final class StoreFixture {
    let directory: URL
    let path: String
    let store: FerryStore

    init(clock: @escaping @Sendable () -> Date = Date.init) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("state.sqlite").path
        store = try FerryStore(path: path, clock: clock)
    }

    /// The same database opened again, as after a daemon restart.
    func reopen() throws -> FerryStore { try FerryStore(path: path) }

    deinit { try? FileManager.default.removeItem(at: directory) }
}

func request(_ path: String) -> Request {
    Request(url: URL(string: "http://127.0.0.1:1/\(path)")!)
}

@Suite struct FerryStoreTests {
    @Test func opensInWALModeWithMigrationsApplied() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        #expect(try store.journalMode() == "wal")
        #expect(
            try store.appliedMigrations() == [
                "v1: sessions, tasks, events, launches", "v2: task resource deadline", "v3: task destination",
                "v4: segmented download progress", "v5: resumable upload state", "v6: task connection settings",
                "v7: network policy and bandwidth limit", "v8: forms, tus chunks, task limits, download bodies and decoding",
                "v9: not before (earliestBeginDate)", "v10: a task's options as one column", "v11: the protocol the response came over",
            ]
        )
    }

    @Test func aFormAndAChunkedUploadsStoredChunksAreKept() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let url = URL(string: "http://example.com/tus/")!
        var form = FerryStore.NewTask(kind: .upload, request: Request(url: url))
        form.form = [FormField(name: "a", value: "1"), FormField(name: "f", file: "/tmp/x.bin", contentType: "image/png")]
        var chunked = FerryStore.NewTask(kind: .upload, request: Request(url: url), bodyFile: "/tmp/big.bin")
        chunked.chunks = 3
        let created = try store.createTasks(registeringSession: true, session: "s", [form, chunked])
        #expect(created[0].form == form.form)
        #expect(created[1].chunkedUpload == ChunkedUploadProgress(chunksInFlight: 3))
        #expect(try store.task(session: "s", identifier: created[0].taskIdentifier).form == form.form)
        #expect(try store.task(session: "s", identifier: created[0].taskIdentifier).chunkedUpload == nil)

        var progress = try #require(created[1].chunkedUpload)
        progress.fileLength = 1000
        progress.fileModified = 12.5
        progress.stored = [.init(offset: 0, length: 100, location: "http://example.com/tus/1"), .init(offset: 400, length: 600, location: "http://example.com/tus/2")]
        try store.recordChunkedUpload(session: "s", identifier: created[1].taskIdentifier, progress: progress)
        let read = try store.task(session: "s", identifier: created[1].taskIdentifier)
        #expect(read.chunkedUpload == progress)
        #expect(read.bytesSent == 700)
        #expect(read.chunkedUpload?.matches(fileLength: 1000, modified: 12.5) == true)
        #expect(read.chunkedUpload?.matches(fileLength: 1000, modified: 13) == false)
    }

    @Test func aTasksNetworkPolicyLimitAndWaitingReportAreKeptAndChanged() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        var new = FerryStore.NewTask(kind: .download, request: Request(url: URL(string: "http://example.com/f")!))
        new.allowsMetered = false
        new.bandwidthLimit = 4096
        let created = try store.createTasks(registeringSession: true, session: "s", [new, new])
        #expect(created[0].allowsMetered == false && created[0].bandwidthLimit == 4096)
        var read = try store.task(session: "s", identifier: 1)
        #expect(!read.allowsMetered && read.allowsConstrained && read.bandwidthLimit == 4096 && !read.waitReported)
        try store.updateTask(session: "s", identifier: 1, ControlAPI.TaskUpdate(allowsConstrainedNetwork: false, bandwidthLimit: 0))
        read = try store.task(session: "s", identifier: 1)
        #expect(!read.allowsMetered && !read.allowsConstrained && read.bandwidthLimit == nil, "0 removes the limit")
        try store.updateTask(session: "s", identifier: 1, ControlAPI.TaskUpdate(priority: 0.9))
        #expect(try store.task(session: "s", identifier: 1).allowsConstrained == false, "absent fields stay")
        // Pending tasks a metered network holds back, until told once.
        #expect(try store.tasks(in: .pending, network: NetworkState(isMetered: true)).isEmpty)
        #expect(try store.tasks(in: .pending, network: NetworkState()).count == 2)
        #expect(try store.pendingHeldBack(by: NetworkState(isMetered: true), onlyUnreported: true).map(\.taskIdentifier) == [1, 2])
        #expect(try store.reportWaiting(session: "s", identifier: 1, reason: "metered network") != nil)
        #expect(try store.reportWaiting(session: "s", identifier: 1, reason: "metered network") == nil, "once")
        #expect(try store.events(session: "s").map(\.kind) == [.taskIsWaitingForConnectivity])
        #expect(try store.pendingHeldBack(by: NetworkState(isMetered: true), onlyUnreported: true).map(\.taskIdentifier) == [2])
        #expect(try store.pendingHeldBack(by: NetworkState(isMetered: true), onlyUnreported: false).map(\.taskIdentifier) == [1, 2])
        #expect(try store.pendingHeldBack(by: NetworkState(), onlyUnreported: true).isEmpty)
        #expect(throws: FerryStoreError.self) {
            try store.updateTask(session: "s", identifier: 9, ControlAPI.TaskUpdate(priority: 0.1))
        }
    }

    @Test func aResourceTimeoutIsKeptAsADeadlineFromCreation() throws {
        let created = Date(timeIntervalSince1970: 1_800_000_000)
        let fixture = try StoreFixture(clock: { created })
        let store = fixture.store
        try store.registerSession("a")
        let limited = try store.createTask(session: "a", kind: .download, request: request("1"), resourceTimeout: 90)
        let unlimited = try store.createTask(session: "a", kind: .download, request: request("2"))
        #expect(limited.resourceDeadline == created.addingTimeInterval(90))
        #expect(unlimited.resourceDeadline == nil)
        let reopened = try fixture.reopen()
        #expect(try reopened.task(session: "a", identifier: 1).resourceDeadline == created.addingTimeInterval(90))
    }

    @Test func aFileThatIsNotADatabaseIsAClearError() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-\(UUID().uuidString)").path
        try Data("not sqlite at all, just some text that is long enough".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = #expect(throws: FerryStoreError.self) { try FerryStore(path: path) }
        #expect(error?.message.contains(path) == true)
    }

    @Test func identifiersAreUniquePerSessionAndKeptAcrossReopen() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try store.registerSession("a")
        try store.registerSession("b")
        let a1 = try store.createTask(session: "a", kind: .download, request: request("1"), taskDescription: "first")
        let a2 = try store.createTask(session: "a", kind: .upload, request: request("2"))
        let b1 = try store.createTask(session: "b", kind: .download, request: request("3"))
        let identifiers: [Int] = [a1.taskIdentifier, a2.taskIdentifier, b1.taskIdentifier]
        #expect(identifiers == [1, 2, 1])

        let reopened = try fixture.reopen()
        let tasks = try reopened.tasks(session: "a")
        #expect(tasks.map(\.taskIdentifier) == [1, 2])
        #expect(tasks[0].taskDescription == "first")
        #expect(tasks[0].originalRequest == request("1"))
        #expect(tasks[1].kind == .upload)
        #expect(tasks.allSatisfy { $0.state == .pending })
        let a3 = try reopened.createTask(session: "a", kind: .download, request: request("4"))
        #expect(a3.taskIdentifier == 3)
    }

    @Test func creatingATaskInAnUnknownSessionIsAClearError() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let error = #expect(throws: FerryStoreError.self) {
            try store.createTask(session: "nobody", kind: .download, request: request("x"))
        }
        #expect(error?.message.contains("nobody") == true)
    }

    @Test func aTransitionJournalsItsEventInSequence() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try store.registerSession("s")
        let one = try store.createTask(session: "s", kind: .download, request: request("1"))
        let two = try store.createTask(session: "s", kind: .download, request: request("2"))
        try store.transition(session: "s", identifier: one.taskIdentifier, to: .running)
        let finished = try store.transition(
            session: "s",
            identifier: one.taskIdentifier,
            to: .completed,
            event: (.didFinishDownloading, Data("file".utf8))
        )
        let failed = try store.transition(
            session: "s",
            identifier: two.taskIdentifier,
            to: .completed,
            error: FerryError(.timedOut, "too slow"),
            event: (.didComplete, nil)
        )
        #expect(finished?.sequence == 1)
        #expect(failed?.sequence == 2)
        let events = try store.events(session: "s")
        #expect(events.map(\.kind) == [.didFinishDownloading, .didComplete])
        #expect(events.map(\.taskIdentifier) == [1, 2])
        #expect(events[0].payload == Data("file".utf8))
        let stored = try store.task(session: "s", identifier: 2)
        #expect(stored.state == .completed)
        #expect(stored.error?.code == .timedOut)
        #expect(stored.error?.message == "too slow")

        try store.acknowledge(session: "s", through: 1)
        #expect(try store.events(session: "s").map(\.sequence) == [2])
        #expect(try store.events(session: "s", after: 2).isEmpty)
    }

    @Test func aTransitionOfAMissingTaskWritesNoEvent() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try store.registerSession("s")
        #expect(throws: FerryStoreError.self) {
            try store.transition(session: "s", identifier: 9, to: .completed, event: (.didComplete, nil))
        }
        #expect(try store.events(session: "s").isEmpty)
        // The sequence was not used up either.
        _ = try store.createTask(session: "s", kind: .download, request: request("1"))
        let event = try store.transition(session: "s", identifier: 1, to: .completed, event: (.didComplete, nil))
        #expect(event?.sequence == 1)
    }

    @Test func runningTasksReturnToPendingAfterARestartWithTheirProgress() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try store.registerSession("s")
        _ = try store.createTask(session: "s", kind: .download, request: request("1"))
        _ = try store.createTask(session: "s", kind: .download, request: request("2"))
        try store.transition(session: "s", identifier: 1, to: .running)
        try store.transition(session: "s", identifier: 2, to: .suspended)
        try store.recordProgress(
            session: "s",
            identifier: 1,
            partialPath: "/tmp/partial-1",
            bytesReceived: 4096,
            expectedLength: 10_000,
            entityTag: "\"v1\"",
            lastModified: nil
        )

        let reopened = try fixture.reopen()
        let recovered = try reopened.recoverAfterRestart()
        #expect(recovered.map(\.taskIdentifier) == [1])
        let task = try reopened.task(session: "s", identifier: 1)
        #expect(task.state == .pending)
        #expect(task.bytesReceived == 4096)
        #expect(task.expectedLength == 10_000)
        #expect(task.entityTag == "\"v1\"")
        #expect(task.partialPath == "/tmp/partial-1")
        #expect(try reopened.task(session: "s", identifier: 2).state == .suspended)
        #expect(task.segments == nil)
    }

    @Test func aSegmentedDownloadsProgressIsKeptSegmentBySegment() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try store.registerSession("s")
        _ = try store.createTask(session: "s", kind: .download, request: request("1"))
        let plan = try #require(
            SegmentPlan(
                total: 10_000,
                segments: [.init(start: 0, end: 5000, received: 5000), .init(start: 5000, end: 10_000, received: 12)]
            )
        )
        try store.recordProgress(
            session: "s",
            identifier: 1,
            partialPath: "/tmp/partial-1",
            bytesReceived: plan.bytesReceived,
            expectedLength: 10_000,
            entityTag: "\"v1\"",
            lastModified: nil,
            segments: plan
        )
        let reopened = try fixture.reopen()
        #expect(try reopened.task(session: "s", identifier: 1).segments == plan)
        // A later record without segments (a restart from zero) clears them.
        try reopened.recordProgress(
            session: "s",
            identifier: 1,
            partialPath: "/tmp/partial-1",
            bytesReceived: 0,
            expectedLength: nil,
            entityTag: nil,
            lastModified: nil
        )
        #expect(try reopened.task(session: "s", identifier: 1).segments == nil)
    }

    @Test func sessionsAreIsolatedAndRemovingOneForgetsItsTasksAndEvents() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        for name in ["a", "b"] {
            try store.registerSession(name)
            _ = try store.createTask(session: name, kind: .download, request: request(name))
            try store.transition(session: name, identifier: 1, to: .completed, event: (.didComplete, nil))
        }
        #expect(try store.events(session: "a").count == 1)
        try store.acknowledge(session: "a", through: 1)
        #expect(try store.events(session: "b").count == 1)

        try store.removeSession("a")
        #expect(try store.sessions() == ["b"])
        #expect(try store.tasks(session: "a").isEmpty)
        #expect(try store.tasks(session: "b").count == 1)
        // The identifier can be used again and starts afresh (S6.11).
        try store.registerSession("a")
        #expect(try store.createTask(session: "a", kind: .download, request: request("again")).taskIdentifier == 1)
    }

    @Test func aTaskIsBornInItsFirstStateWithItsResumeData() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try store.registerSession("s")
        var waiting = FerryStore.NewTask(kind: .download, request: request("waits"))
        waiting.suspended = true
        var continued = FerryStore.NewTask(kind: .download, request: request("continues"))
        continued.resumeData = ResumeData(
            originalRequest: request("continues"),
            currentRequest: request("moved"),
            bytesReceived: 4096,
            expectedLength: 10_000,
            entityTag: "\"v1\"",
            lastModified: nil,
            partialFilePath: "/tmp/partial-continued"
        )
        let created = try store.createTasks(session: "s", [waiting, continued])
        #expect(created.map(\.state) == [.suspended, .pending])
        // Never pending, so the scheduler cannot pick it; the other has its progress from the start.
        #expect(try store.tasks(in: .pending).map(\.taskIdentifier) == [2])
        let stored = try store.task(session: "s", identifier: 2)
        #expect(stored.bytesReceived == 4096)
        #expect(stored.partialPath == "/tmp/partial-continued")
        #expect(stored.entityTag == "\"v1\"")
        #expect(stored.currentRequest?.url.path == "/moved")
        #expect(created[1].bytesReceived == 4096)
    }

    @Test func pendingTasksComeInSchedulingOrder() throws {
        let now = Date(timeIntervalSince1970: 1_000_000)
        let fixture = try StoreFixture(clock: { now })
        let store = fixture.store
        try store.registerSession("s")
        _ = try store.createTask(session: "s", kind: .download, request: request("1"), discretionary: true)
        _ = try store.createTask(session: "s", kind: .download, request: request("2"), priority: 0.2)
        _ = try store.createTask(session: "s", kind: .download, request: request("3"), priority: 0.9)
        try store.transition(session: "s", identifier: 2, to: .running)
        #expect(try store.tasks(in: .pending).map(\.taskIdentifier) == [3, 1])
        #expect(try store.tasks(in: .running).map(\.taskIdentifier) == [2])
    }

    @Test func aTaskHeldUntilLaterIsNotAmongThoseToStartUntilItsTime() throws {
        let now = Date(timeIntervalSince1970: 1_000_000)
        let fixture = try StoreFixture(clock: { now })
        let store = fixture.store
        try store.registerSession("s")
        var held = FerryStore.NewTask(kind: .download, request: request("1"))
        held.earliestBegin = now.addingTimeInterval(90.5)
        _ = try store.createTasks(session: "s", [held, FerryStore.NewTask(kind: .download, request: request("2"))])
        #expect(try store.tasks(in: .pending, beginningBy: now).map(\.taskIdentifier) == [2])
        #expect(try store.tasks(in: .pending).map(\.taskIdentifier) == [1, 2], "without a time, all of them")
        #expect(try store.nextBegin(after: now) == now.addingTimeInterval(90.5))
        #expect(try store.tasks(in: .pending, beginningBy: now.addingTimeInterval(90.5)).map(\.taskIdentifier) == [1, 2])
        #expect(try store.nextBegin(after: now.addingTimeInterval(90.5)) == nil)
        // Kept across a reopen; an update moves the date.
        let reopened = try fixture.reopen()
        #expect(try reopened.task(session: "s", identifier: 1).earliestBegin == now.addingTimeInterval(90.5))
        try reopened.updateTask(
            session: "s",
            identifier: 2,
            ControlAPI.TaskUpdate(earliestBeginTime: now.timeIntervalSince1970 + 10)
        )
        #expect(try reopened.tasks(in: .pending, beginningBy: now).isEmpty)
        #expect(try reopened.nextBegin(after: now) == now.addingTimeInterval(10))
    }

    @Test func launchRegistrationAndLimiterPersist() throws {
        let now = Date(timeIntervalSince1970: 2_000_000)
        let fixture = try StoreFixture(clock: { now })
        let store = fixture.store
        try store.registerSession("s")
        #expect(try store.launchCommand(session: "s") == nil)
        try store.setLaunchCommand(session: "s", command: "echo hi")
        try store.setLaunchCommand(session: "s", command: "echo again")
        try store.setLaunchLimiter(session: "s", delaySeconds: 4, lastLaunchAt: now)
        let reopened = try fixture.reopen()
        #expect(try reopened.launchCommand(session: "s") == "echo again")
        let limiter = try reopened.launchLimiter(session: "s")
        #expect(limiter?.delaySeconds == 4)
        #expect(limiter?.lastLaunchAt == now)
    }

    @Test func currentRequestIsKept() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        try store.registerSession("s")
        _ = try store.createTask(session: "s", kind: .download, request: request("1"))
        try store.setCurrentRequest(session: "s", identifier: 1, request: request("moved"))
        #expect(try store.task(session: "s", identifier: 1).currentRequest == request("moved"))
        #expect(throws: FerryStoreError.self) {
            try store.setCurrentRequest(session: "s", identifier: 5, request: request("x"))
        }
    }
}
