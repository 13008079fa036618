import FerryCore
import Foundation
import GRDB

/// The database schema as versioned migrations. A migration, once released, never changes: new ones
/// are appended, so a database of any earlier version is brought forward on open.
enum StoreSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: sessions, tasks, events, launches", migrate: createFirstSchema)
        migrator.registerMigration("v2: task resource deadline") { db in
            try db.alter(table: "task") { table in
                table.add(column: "resourceDeadline", .datetime)
            }
        }
        migrator.registerMigration("v3: task destination") { db in
            try db.alter(table: "task") { table in
                table.add(column: "destination", .text)
                table.add(column: "destinationMode", .integer)
            }
        }
        migrator.registerMigration("v4: segmented download progress") { db in
            try db.alter(table: "task") { table in
                table.add(column: "segments", .blob)
            }
        }
        migrator.registerMigration("v5: resumable upload state") { db in
            try db.alter(table: "task") { table in
                table.add(column: "uploadState", .blob)
            }
        }
        migrator.registerMigration("v6: task connection settings") { db in
            try db.alter(table: "task") { table in
                table.add(column: "connection", .blob)
            }
        }
        migrator.registerMigration("v7: network policy and bandwidth limit") { db in
            try db.alter(table: "task") { table in
                table.add(column: "allowsMetered", .boolean).notNull().defaults(to: true)
                table.add(column: "allowsConstrained", .boolean).notNull().defaults(to: true)
                table.add(column: "bandwidthLimit", .integer)
                table.add(column: "waitReported", .boolean).notNull().defaults(to: false)
            }
        }
        migrator.registerMigration("v8: forms, tus chunks, task limits, download bodies and decoding") { db in
            try db.alter(table: "task") { table in
                table.add(column: "form", .blob)
                table.add(column: "chunkedUpload", .blob)
                table.add(column: "limits", .blob)
                table.add(column: "requestBody", .blob)
                table.add(column: "decodesContent", .boolean).notNull().defaults(to: false)
            }
        }
        migrator.registerMigration("v9: not before (earliestBeginDate)") { db in
            try db.alter(table: "task") { table in
                table.add(column: "earliestBegin", .datetime)
            }
        }
        migrator.registerMigration("v10: a task's options as one column", migrate: gatherTaskOptions)
        migrator.registerMigration("v11: the protocol the response came over") { db in
            try db.alter(table: "task") { table in table.add(column: "networkProtocol", .text) }
        }
        return migrator
    }

    /// The columns v10 gathers into `options`.
    static let optionColumns = ["form", "limits", "requestBody", "decodesContent", "destination", "destinationMode", "connection"]

    /// v10: the options a task is created with (``FerryCore/TaskOptions``) as one JSON column, so a new
    /// option needs no migration. Each task's values move over, and their old columns go.
    private static func gatherTaskOptions(_ db: Database) throws {
        try db.alter(table: "task") { table in table.add(column: "options", .blob) }
        let decoder = JSONDecoder()
        let encoder = JSONEncoder()
        let rows = try Row.fetchCursor(
            db,
            sql: "SELECT session, taskIdentifier, \(optionColumns.joined(separator: ", ")) FROM task"
        )
        let update = try db.makeStatement(sql: "UPDATE task SET options = ? WHERE session = ? AND taskIdentifier = ?")
        while let row = try rows.next() {
            var options = TaskOptions()
            options.form = try (row["form"] as Data?).map { try decoder.decode([FormField].self, from: $0) }
            options.limits = try (row["limits"] as Data?).map { try decoder.decode(TaskLimits.self, from: $0) }
            options.requestBody = row["requestBody"]
            options.decodesContent = (row["decodesContent"] as Bool?) == true ? true : nil
            options.destination = row["destination"]
            options.destinationMode = row["destinationMode"]
            options.connection = try (row["connection"] as Data?).map { try decoder.decode(ConnectionSettings.self, from: $0) }
            guard !options.isEmpty else { continue }
            try update.execute(arguments: [try encoder.encode(options), row["session"], row["taskIdentifier"]])
        }
        try db.alter(table: "task") { table in
            for column in optionColumns { table.drop(column: column) }
        }
    }

    /// v1: the session, task, event and launch tables as first released.
    private static func createFirstSchema(_ db: Database) throws {
        try db.create(table: "session") { table in
            table.primaryKey("identifier", .text)
            table.column("nextTaskIdentifier", .integer).notNull().defaults(to: 1)
            table.column("nextEventSequence", .integer).notNull().defaults(to: 1)
            table.column("createdAt", .datetime).notNull()
        }
        try db.create(table: "task") { table in
            table.column("session", .text).notNull().references("session", onDelete: .cascade)
            table.column("taskIdentifier", .integer).notNull()
            table.primaryKey(["session", "taskIdentifier"])
            table.column("kind", .text).notNull()
            table.column("state", .text).notNull()
            table.column("originalRequest", .blob).notNull()
            table.column("bodyFile", .text)
            table.column("currentRequest", .blob)
            table.column("taskDescription", .text)
            table.column("priority", .double).notNull().defaults(to: 0.5)
            table.column("discretionary", .boolean).notNull().defaults(to: false)
            table.column("partialPath", .text)
            table.column("bytesReceived", .integer).notNull().defaults(to: 0)
            table.column("expectedLength", .integer)
            table.column("entityTag", .text)
            table.column("lastModified", .text)
            table.column("bytesSent", .integer).notNull().defaults(to: 0)
            table.column("responseStatus", .integer)
            table.column("responseHeaders", .blob)
            table.column("errorCode", .integer)
            table.column("errorName", .text)
            table.column("errorMessage", .text)
            table.column("createdAt", .datetime).notNull()
            table.column("updatedAt", .datetime).notNull()
        }
        try db.create(index: "task_by_state", on: "task", columns: ["state", "priority"])
        try db.create(table: "event") { table in
            table.column("session", .text).notNull().references("session", onDelete: .cascade)
            table.column("sequence", .integer).notNull()
            table.primaryKey(["session", "sequence"])
            table.column("taskIdentifier", .integer)
            table.column("kind", .text).notNull()
            table.column("payload", .blob)
            table.column("createdAt", .datetime).notNull()
        }
        try db.create(table: "launch") { table in
            table.primaryKey("session", .text).references("session", onDelete: .cascade)
            table.column("command", .text).notNull()
            table.column("delaySeconds", .double).notNull().defaults(to: 0)
            table.column("lastLaunchAt", .datetime)
        }
    }
}
