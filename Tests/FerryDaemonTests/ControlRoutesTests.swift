import FerryCore
@testable import FerryDaemon
import FerryStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// The control API in process, through Hummingbird's router test client: no socket, no daemon process.
@Suite struct ControlRoutesTests {
    func withRoutes(_ body: @Sendable (SchedulerFixture, any TestClientProtocol) async throws -> Void) async throws {
        let fixture = try SchedulerFixture()
        defer { fixture.remove() }
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let routes = ControlRoutes(
            store: fixture.store,
            hub: fixture.hub,
            scheduler: fixture.scheduler,
            launcher: Launcher(store: fixture.store, hub: fixture.hub, configuration: fixture.configuration, logger: logger),
            configuration: fixture.configuration,
            logger: logger
        )
        let app = Application(router: routes.router())
        try await app.test(.router) { client in try await body(fixture, client) }
    }

    static let tasks = "\(ControlAPI.prefix)/sessions/s/tasks"

    static func json(_ value: some Encodable) throws -> ByteBuffer {
        ByteBuffer(bytes: try JSONEncoder().encode(value))
    }

    static func creation(start: Bool) -> ControlAPI.TaskCreation {
        var creation = ControlAPI.TaskCreation(
            kind: .download,
            request: FerryCore.Request(url: URL(string: "http://127.0.0.1:9/file")!)
        )
        creation.start = start
        return creation
    }

    @Test func aTaskIsCreatedInItsFirstStateAndListed() async throws {
        try await withRoutes { fixture, client in
            let created = try await client.execute(uri: Self.tasks, method: .post, body: try Self.json(Self.creation(start: false)))
            #expect(created.status == .created)
            let info = try JSONDecoder().decode(BackgroundTaskInfo.self, from: Data(buffer: created.body))
            #expect(info.state == .suspended)
            #expect(fixture.transfers.started.isEmpty)
            let listed = try await client.execute(uri: Self.tasks, method: .get)
            let all = try JSONDecoder().decode([BackgroundTaskInfo].self, from: Data(buffer: listed.body))
            #expect(all.map(\.taskIdentifier) == [info.taskIdentifier])

            let resumed = try await client.execute(uri: "\(Self.tasks)/\(info.taskIdentifier)/resume", method: .post)
            #expect(resumed.status == .ok)
            try await eventually("the transfer runs") { fixture.transfers.started == [info.taskIdentifier] }
        }
    }

    /// Every option a creation carries goes through the control API's JSON into the store, and reads
    /// back the same after a restart. Between them the two samples set every option (checked by
    /// reflection), so an option added to ``TaskOptions`` without a value here fails, and one that is
    /// decoded, stored or read back wrongly fails too.
    @Test func everyOptionRoundTripsThroughTheAPITheStoreAndARestart() async throws {
        try await withRoutes { fixture, client in
            var download = TaskOptions()
            download.requestBody = Data("q=1".utf8)
            download.decodesContent = true
            download.limits = TaskLimits(maximumRedirects: 2, maximumAttempts: 4, lowSpeedLimit: 100, lowSpeedTime: 30)
            download.destination = fixture.directory + "/out.bin"
            download.destinationMode = 0o640
            download.connection = ConnectionSettings()
            download.connection?.connectTimeout = 7
            let photo = fixture.directory + "/photo.jpg"
            try Data("jpeg".utf8).write(to: URL(fileURLWithPath: photo))
            var upload = TaskOptions()
            upload.form = [FormField(name: "a", value: "1"), FormField(name: "photo", file: photo)]
            upload.limits = TaskLimits(maximumAttempts: 2)
            let unset = Set(Self.absentOptions(download)).intersection(Self.absentOptions(upload))
            #expect(unset.isEmpty, "no sample sets \(unset.sorted()); give it a value here")

            var created: [(Int, TaskOptions)] = []
            for (kind, options) in [(BackgroundTaskInfo.Kind.download, download), (.upload, upload)] {
                var creation = ControlAPI.TaskCreation(kind: kind, request: FerryCore.Request(url: URL(string: "http://127.0.0.1:9/f")!))
                creation.start = false
                creation.options = options
                let answer = try await client.execute(uri: Self.tasks, method: .post, body: try Self.json(creation))
                #expect(answer.status == .created, "\(String(buffer: answer.body))")
                let info = try JSONDecoder().decode(BackgroundTaskInfo.self, from: Data(buffer: answer.body))
                created.append((info.taskIdentifier, options))
            }
            let restarted = try FerryStore(path: fixture.directory + "/state.sqlite")
            for (identifier, options) in created {
                #expect(try restarted.task(session: "s", identifier: identifier).options == options)
            }
        }
    }

    /// The names of the options `options` leaves nil.
    static func absentOptions(_ options: TaskOptions) -> [String] {
        Mirror(reflecting: options).children.compactMap { child in
            let value = Mirror(reflecting: child.value)
            return value.displayStyle == .optional && value.children.isEmpty ? child.label : nil
        }
    }

    @Test func aLaunchCommandIsRegisteredAndForgotten() async throws {
        try await withRoutes { fixture, client in
            let launch = "\(ControlAPI.prefix)/sessions/s/launch"
            let put = try await client.execute(uri: launch, method: .put, body: try Self.json(ControlAPI.LaunchRegistration(command: "true")))
            #expect(put.status == .noContent)
            #expect(try fixture.store.launchCommand(session: "s") == "true")
            let delete = try await client.execute(uri: launch, method: .delete)
            #expect(delete.status == .noContent)
            #expect(try fixture.store.launchCommand(session: "s") == nil)
            // Forgetting what is not there is no error.
            #expect(try await client.execute(uri: launch, method: .delete).status == .noContent)
        }
    }

    @Test func badRequestsChangeNothing() async throws {
        try await withRoutes { fixture, client in
            let garbage = try await client.execute(uri: Self.tasks, method: .post, body: ByteBuffer(string: "{\"kind\":"))
            #expect(garbage.status == .badRequest)
            let error = try JSONDecoder().decode(ControlAPI.ErrorBody.self, from: Data(buffer: garbage.body))
            #expect(!error.error.message.isEmpty)
            let unknown = try await client.execute(uri: "\(Self.tasks)/7/suspend", method: .post)
            #expect(unknown.status == .notFound)
            let notANumber = try await client.execute(uri: "\(Self.tasks)/x/suspend", method: .post)
            #expect(notANumber.status == .badRequest)
            let wrongType = try await client.execute(
                uri: "\(ControlAPI.prefix)/sessions/s/invalidate",
                method: .post,
                body: ByteBuffer(string: "{\"cancelTasks\":\"yes\"}")
            )
            #expect(wrongType.status == .badRequest)
            let method = try await client.execute(uri: Self.tasks, method: .delete)
            #expect(method.status == .methodNotAllowed)
            #expect(method.headers[.allow] == "GET, POST")
            #expect(try fixture.store.sessions().isEmpty, "nothing was stored")
        }
    }

    @Test func anEarliestBeginTimeOutOfRangeIsRefusedOnCreationAndResume() async throws {
        try await withRoutes { fixture, client in
            var creation = Self.creation(start: false)
            creation.earliestBeginTime = -1
            let refused = try await client.execute(uri: Self.tasks, method: .post, body: try Self.json(creation))
            #expect(refused.status == .badRequest)
            let error = try JSONDecoder().decode(ControlAPI.ErrorBody.self, from: Data(buffer: refused.body))
            #expect(error.error.message.contains("earliestBeginTime"), "\(error.error.message)")
            creation.earliestBeginTime = nil
            let created = try await client.execute(uri: Self.tasks, method: .post, body: try Self.json(creation))
            #expect(created.status == .created)
            let later = ControlAPI.TaskUpdate(earliestBeginTime: 1e12)
            let resume = try await client.execute(uri: "\(Self.tasks)/1/resume", method: .post, body: try Self.json(later))
            #expect(resume.status == .badRequest)
            #expect(try fixture.store.task(session: "s", identifier: 1).state == .suspended, "nothing changed")
            #expect(try fixture.store.task(session: "s", identifier: 1).earliestBegin == nil)
        }
    }

    @Test func resumeDatasCurrentRequestIsCheckedAsTheOriginalIs() async throws {
        try await withRoutes { fixture, client in
            var creation = Self.creation(start: false)
            var current = creation.request
            current.minimumSegmentSize = 1
            creation.resumeData = ResumeData(
                originalRequest: creation.request,
                currentRequest: current,
                bytesReceived: 0,
                expectedLength: nil,
                entityTag: nil,
                lastModified: nil,
                partialFilePath: "/tmp/ferry-nothing-\(UUID().uuidString)"
            )
            let refused = try await client.execute(uri: Self.tasks, method: .post, body: try Self.json(creation))
            #expect(refused.status == .badRequest)
            let error = try JSONDecoder().decode(ControlAPI.ErrorBody.self, from: Data(buffer: refused.body))
            #expect(error.error.message.contains("minimum segment size"), "\(error.error.message)")
            #expect(try fixture.store.sessions().isEmpty, "nothing was stored")
        }
    }

    @Test func aChosenIdentifierIsKeptAndATakenOneIsAConflict() async throws {
        try await withRoutes { fixture, client in
            var creation = Self.creation(start: false)
            creation.taskIdentifier = 28_000_000_000
            let made = try await client.execute(uri: Self.tasks, method: .post, body: try Self.json(creation))
            #expect(made.status == .created)
            #expect(try JSONDecoder().decode(BackgroundTaskInfo.self, from: Data(buffer: made.body)).taskIdentifier == 28_000_000_000)
            let again = try await client.execute(uri: Self.tasks, method: .post, body: try Self.json(creation))
            #expect(again.status == .conflict)
            let error = try JSONDecoder().decode(ControlAPI.ErrorBody.self, from: Data(buffer: again.body))
            #expect(error.error.message.contains("has a task 28000000000 already"))
            // The session's own numbering continues past it.
            let next = try await client.execute(uri: Self.tasks, method: .post, body: try Self.json(Self.creation(start: false)))
            #expect(try JSONDecoder().decode(BackgroundTaskInfo.self, from: Data(buffer: next.body)).taskIdentifier == 28_000_000_001)
            creation.taskIdentifier = 0
            let zero = try await client.execute(uri: Self.tasks, method: .post, body: try Self.json(creation))
            #expect(zero.status == .badRequest)
            #expect(try fixture.store.tasks(session: "s").count == 2)
        }
    }

    @Test func aBodyOverTheLimitIsA413() async throws {
        try await withRoutes { fixture, client in
            let huge = ByteBuffer(repeating: UInt8(ascii: " "), count: ControlAPI.maximumBodySize + 1)
            let answer = try await client.execute(uri: Self.tasks, method: .post, body: huge)
            #expect(answer.status == .contentTooLarge)
            let error = try JSONDecoder().decode(ControlAPI.ErrorBody.self, from: Data(buffer: answer.body))
            #expect(error.error.message.contains("larger than"))
            #expect(try fixture.store.sessions().isEmpty)
        }
    }

    @Test func cancelAnswersWithTheCompletedTask() async throws {
        try await withRoutes { fixture, client in
            let created = try await client.execute(uri: Self.tasks, method: .post, body: try Self.json(Self.creation(start: true)))
            let info = try JSONDecoder().decode(BackgroundTaskInfo.self, from: Data(buffer: created.body))
            try await eventually("the transfer runs") { fixture.transfers.running == [info.taskIdentifier] }
            let cancelled = try await client.execute(
                uri: "\(Self.tasks)/\(info.taskIdentifier)/cancel",
                method: .post,
                body: try Self.json(ControlAPI.Cancellation(produceResumeData: false))
            )
            #expect(cancelled.status == .ok)
            let result = try JSONDecoder().decode(ControlAPI.CancelResult.self, from: Data(buffer: cancelled.body))
            #expect(result.task.state == .completed)
            #expect(result.task.error?.code == .cancelled)
            #expect(fixture.transfers.running.isEmpty)
        }
    }
}
