import FerryCore
import Foundation
import GRDB
import Testing

@testable import FerryStore

/// StoredTask is the `task` table's record: every field goes in and comes back out, through a restart,
/// and rows an older ferryd wrote by hand (before v10) still read.
@Suite struct StoredTaskRecordTests {
    /// A task with every field the creation can set, and resume data for the progress fields.
    private func everyField() -> FerryStore.NewTask {
        var request = Request(url: URL(string: "https://files.test/a.bin")!)
        request.headers = Headers([("X-Trace", "1")])
        var task = FerryStore.NewTask(
            kind: .download,
            request: request,
            taskDescription: "all of it",
            priority: 0.8,
            discretionary: true,
            resourceTimeout: 3600,
            destination: "/tmp/a.bin",
            destinationMode: 0o640,
            connection: ConnectionSettings()
        )
        task.suspended = true
        task.allowsMetered = false
        task.allowsConstrained = false
        task.bandwidthLimit = 65_536
        task.limits = TaskLimits()
        task.requestBody = Data("q=1".utf8)
        task.decodesContent = true
        task.earliestBegin = Date(timeIntervalSince1970: 2_000_000_000.123)
        task.resumeData = ResumeData(
            originalRequest: request,
            currentRequest: Request(url: URL(string: "https://cdn.files.test/a.bin")!),
            bytesReceived: 4096,
            expectedLength: 10_000,
            entityTag: "\"v1\"",
            lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
            partialFilePath: "/tmp/a.bin.part"
        )
        return task
    }

    @Test func everyFieldRoundTripsThroughTheStoreAndARestart() throws {
        let fixture = try StoreFixture()
        try fixture.store.registerSession("s")
        let created = try fixture.store.createTasks(session: "s", [everyField()])[0]
        // What the creation returned is what the table holds, now and after a restart.
        #expect(try fixture.store.task(session: "s", identifier: created.taskIdentifier) == created)
        let reopened = try fixture.reopen()
        let read = try reopened.task(session: "s", identifier: created.taskIdentifier)
        #expect(read == created)
        #expect(read.state == .suspended && read.isDiscretionary && read.priority == 0.8)
        #expect(read.requestBody == Data("q=1".utf8) && read.decodesContent && read.bandwidthLimit == 65_536)
        #expect(read.currentRequest?.url.host == "cdn.files.test" && read.bytesReceived == 4096)
        #expect(read.entityTag == "\"v1\"" && read.partialPath == "/tmp/a.bin.part")
        #expect(abs((read.earliestBegin?.timeIntervalSince1970 ?? 0) - 2_000_000_000.123) < 0.001)
    }

    @Test func anErrorIsItsThreeColumns() throws {
        let fixture = try StoreFixture()
        try fixture.store.registerSession("s")
        var created = try fixture.store.createTasks(session: "s", [FerryStore.NewTask(kind: .download, request: everyField().request)])[0]
        #expect(created.error == nil)
        created.error = FerryError(.timedOut, "it took too long")
        #expect(created.errorCode == FerryError.Code.timedOut.rawValue && created.errorMessage == "it took too long")
        try fixture.store.pool.write { db in try created.update(db) }
        let read = try fixture.reopen().task(session: "s", identifier: created.taskIdentifier)
        #expect(read.error?.code == .timedOut && read.error?.message == "it took too long")
    }

    /// A row as ferryd wrote it before the task was a record (v9): a positional INSERT with every
    /// nested value JSON in a BLOB, and the `discretionary` column.
    @Test func aRowAnOlderFerrydWroteStillReads() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-v9-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("state.sqlite").path
        let request = Request(url: URL(string: "https://files.test/old.bin")!)
        let limits = TaskLimits()
        do {
            let pool = try DatabasePool(path: path)
            try StoreSchema.migrator.migrate(pool, upTo: "v9: not before (earliestBeginDate)")
            let now = Date(timeIntervalSince1970: 1_700_000_000.5)
            try pool.write { db in
                try db.execute(sql: "INSERT INTO session (identifier, createdAt) VALUES ('old', ?)", arguments: [now])
                try db.execute(
                    sql: """
                        INSERT INTO task (session, taskIdentifier, kind, state, originalRequest, currentRequest, bodyFile,
                                          taskDescription, priority, discretionary, resourceDeadline,
                                          destination, destinationMode, connection, createdAt, updatedAt,
                                          allowsMetered, allowsConstrained, bandwidthLimit, form, chunkedUpload,
                                          limits, requestBody, decodesContent, earliestBegin,
                                          errorCode, errorName, errorMessage, responseHeaders)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        "old", 7, "download", "completed", try JSONEncoder().encode(request), nil, nil,
                        "from v9", 0.25, true, now, nil, nil, nil, now, now,
                        false, true, 1000, nil, nil, try JSONEncoder().encode(limits), nil, false, nil,
                        FerryError.Code.timedOut.rawValue, "timedOut", "old failure",
                        try JSONEncoder().encode(Headers([("ETag", "\"x\"")])),
                    ]
                )
            }
        }
        let store = try FerryStore(path: path)
        let task = try store.task(session: "old", identifier: 7)
        #expect(task.originalRequest.url == request.url)
        #expect(task.isDiscretionary && task.priority == 0.25 && task.taskDescription == "from v9")
        #expect(!task.allowsMetered && task.allowsConstrained && task.bandwidthLimit == 1000)
        #expect(task.limits == limits)
        #expect(task.error?.code == .timedOut && task.error?.message == "old failure")
        #expect(task.responseHeaders?["etag"] == "\"x\"")
        #expect(abs(task.createdAt.timeIntervalSince1970 - 1_700_000_000.5) < 0.001)
        // The scheduler's order still reads the renamed column.
        #expect(try store.tasks(in: .completed).map(\.taskIdentifier) == [7])
    }
}
