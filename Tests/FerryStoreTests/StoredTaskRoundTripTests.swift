import FerryCore
import Foundation
import GRDB
import Testing

@testable import FerryStore

/// Every field a creation can set goes into the task table and comes back out, now and after a
/// restart: a column the hand-written INSERT or row reader forgets fails here.
@Suite struct StoredTaskRoundTripTests {
    @Test func everyFieldRoundTripsThroughTheStoreAndARestart() throws {
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
        let fixture = try StoreFixture()
        try fixture.store.registerSession("s")
        let created = try fixture.store.createTasks(session: "s", [task])[0]
        // What the creation returned is what the table holds, now and after a restart.
        #expect(try fixture.store.task(session: "s", identifier: created.taskIdentifier) == created)
        let read = try fixture.reopen().task(session: "s", identifier: created.taskIdentifier)
        #expect(read == created)
        #expect(read.state == .suspended && read.isDiscretionary && read.priority == 0.8)
        #expect(read.requestBody == Data("q=1".utf8) && read.decodesContent == true && read.bandwidthLimit == 65_536)
        #expect(read.currentRequest?.url.host == "cdn.files.test" && read.bytesReceived == 4096)
        #expect(read.entityTag == "\"v1\"" && read.partialPath == "/tmp/a.bin.part")
        #expect(abs((read.earliestBegin?.timeIntervalSince1970 ?? 0) - 2_000_000_000.123) < 0.001)
    }

    /// A database written before v10 kept each option in a column of its own: opening it moves every
    /// task's options into the one column, and a task without options reads as having none.
    @Test func optionsKeptInTheirOldColumnsMoveIntoOne() throws {
        let fixture = try StoreFixture()
        let path = fixture.directory.appendingPathComponent("old.sqlite").path
        let form = [FormField(name: "a", value: "1")]
        let limits = TaskLimits(maximumRedirects: 3)
        var connection = ConnectionSettings()
        connection.connectTimeout = 7
        do {
            let old = try DatabaseQueue(path: path)
            try StoreSchema.migrator.migrate(old, upTo: "v9: not before (earliestBeginDate)")
            let encoder = JSONEncoder()
            try old.write { db in
                try db.execute(sql: "INSERT INTO session (identifier, createdAt) VALUES ('s', 0)")
                try db.execute(
                    sql: """
                        INSERT INTO task (session, taskIdentifier, kind, state, originalRequest, form, limits,
                                          requestBody, decodesContent, destination, destinationMode, connection,
                                          createdAt, updatedAt)
                        VALUES ('s', 1, 'download', 'pending', ?, ?, ?, ?, 1, '/tmp/a', 420, ?, 0, 0)
                        """,
                    arguments: [
                        try encoder.encode(request("a")), try encoder.encode(form), try encoder.encode(limits),
                        Data("q=1".utf8), try encoder.encode(connection),
                    ]
                )
                try db.execute(
                    sql: """
                        INSERT INTO task (session, taskIdentifier, kind, state, originalRequest, createdAt, updatedAt)
                        VALUES ('s', 2, 'download', 'pending', ?, 0, 0)
                        """,
                    arguments: [try encoder.encode(request("b"))]
                )
            }
        }
        let store = try FerryStore(path: path)
        var expected = TaskOptions()
        expected.form = form
        expected.limits = limits
        expected.requestBody = Data("q=1".utf8)
        expected.decodesContent = true
        expected.destination = "/tmp/a"
        expected.destinationMode = 0o644
        expected.connection = connection
        #expect(try store.task(session: "s", identifier: 1).options == expected)
        #expect(try store.task(session: "s", identifier: 2).options.isEmpty)
        let columns = try DatabaseQueue(path: path).read { db in try db.columns(in: "task").map(\.name) }
        #expect(columns.contains("options"))
        #expect(Set(columns).isDisjoint(with: StoreSchema.optionColumns))
    }
}
