import FerryCore
@testable import FerryDaemon
import FerryEngine
import FerryStore
import Foundation
import Logging
import Synchronization
import Testing

/// A clock the test moves: sleepers wake when ``advance(by:)`` passes their time, never on their own.
final class FakeClock: DaemonClock {
    private struct State {
        var now: Date
        var sleepers: [(id: Int, until: Date, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID = 0
    }

    private let state: Mutex<State>

    init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        state = Mutex(State(now: start))
    }

    func now() -> Date { state.withLock { $0.now } }

    /// How many are asleep now.
    var sleeping: Int { state.withLock { $0.sleepers.count } }

    func sleep(until deadline: Date) async throws {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let wakeNow = state.withLock { state -> Bool in
                    if deadline <= state.now { return true }
                    state.sleepers.append((id, deadline, continuation))
                    return false
                }
                if wakeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                state.sleepers.firstIndex { $0.id == id }.map { state.sleepers.remove(at: $0) }
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time on and wakes whoever's time has come.
    func advance(by seconds: Double) {
        let due = state.withLock { state in
            state.now = state.now.addingTimeInterval(seconds)
            let now = state.now
            let due = state.sleepers.filter { $0.until <= now }
            state.sleepers.removeAll { $0.until <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}

/// Transfers that run until the test ends them: each start is recorded, and ``finish(_:_:)`` gives a
/// run its outcome. A cancelled run ends as the engine's does: failed, its partial data kept.
final class FakeTransfers: Sendable {
    private struct State {
        var started: [Int] = []
        var running: [Int: CheckedContinuation<TransferRunner.Outcome, Never>] = [:]
        var early: [Int: TransferRunner.Outcome] = [:]
        var meters: [Int: ProgressMeter] = [:]
    }

    private let state = Mutex(State())

    /// The identifiers of every run started, in order (a task started twice is there twice).
    var started: [Int] { state.withLock { $0.started } }
    /// The identifiers running now.
    var running: Set<Int> { state.withLock { Set($0.running.keys) } }

    func meter(_ identifier: Int) -> ProgressMeter? { state.withLock { $0.meters[identifier] } }

    func run(_ task: StoredTask, _ meter: ProgressMeter) async -> TransferRunner.Outcome {
        let identifier = task.taskIdentifier
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let early = state.withLock { state -> TransferRunner.Outcome? in
                    state.started.append(identifier)
                    state.meters[identifier] = meter
                    if let early = state.early.removeValue(forKey: identifier) { return early }
                    state.running[identifier] = continuation
                    return nil
                }
                if let early { continuation.resume(returning: early) }
            }
        } onCancel: {
            self.finish(identifier, .failed(FerryError(.cancelled, "the transfer was stopped")))
        }
    }

    /// Ends the run of `identifier` with `outcome` (or ends its next run at once, if none runs yet).
    func finish(_ identifier: Int, _ outcome: TransferRunner.Outcome) {
        let continuation = state.withLock { state in
            guard let running = state.running.removeValue(forKey: identifier) else {
                state.early[identifier] = outcome
                return CheckedContinuation<TransferRunner.Outcome, Never>?.none
            }
            return running
        }
        continuation?.resume(returning: outcome)
    }
}

/// What the scheduler told the launcher.
final class JournalLog: Sendable {
    let sessions = Mutex<[String]>([])
}

/// A scheduler over a store in a temporary directory, with a fake clock and fake transfers.
final class SchedulerFixture: Sendable {
    let directory: String
    let store: FerryStore
    let hub: EventHub
    let clock: FakeClock
    let transfers: FakeTransfers
    let configuration: DaemonConfiguration
    let scheduler: Scheduler
    /// The sessions the scheduler said may have events (launches).
    let journaled: JournalLog

    init(_ adjust: (inout DaemonConfiguration) -> Void = { _ in }) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferryd-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let clock = FakeClock()
        self.clock = clock
        var configuration = DaemonConfiguration(
            paths: DaemonPaths(socket: directory + "/ferryd.sock", stateDirectory: directory)
        )
        configuration.clock = clock
        configuration.maximumConcurrentTransfers = 2
        configuration.retry = RetryPolicy(baseDelay: 10, maximumDelay: 60, maximumAttempts: 3)
        configuration.throughputFloor = 1000
        configuration.throughputWindow = 10
        adjust(&configuration)
        self.configuration = configuration
        for path in [configuration.paths.partialDirectory, configuration.paths.deliveryDirectory] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        store = try FerryStore(path: directory + "/state.sqlite", clock: { clock.now() })
        let transports = TransportCache(
            base: SessionTransport(try StandardTransport(options: .init()), maximumConnectionsPerHost: 8),
            options: .init()
        )
        let transfers = FakeTransfers()
        self.transfers = transfers
        let hub = EventHub()
        self.hub = hub
        let journaled = JournalLog()
        self.journaled = journaled
        scheduler = Scheduler(
            store: store,
            hub: hub,
            configuration: configuration,
            transports: transports,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            run: { task, _, meter in await transfers.run(task, meter) },
            onEventsJournaled: { session in journaled.sessions.withLock { $0.append(session) } }
        )
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// Creates `count` downloads in session `s`.
    @discardableResult
    func create(
        _ count: Int,
        suspended: Bool = false,
        resourceTimeout: Double? = nil,
        earliestBegin: Date? = nil
    ) async throws -> [StoredTask] {
        let request = Request(url: URL(string: "http://127.0.0.1:9/file")!)
        var task = FerryStore.NewTask(kind: .download, request: request, resourceTimeout: resourceTimeout)
        task.suspended = suspended
        task.earliestBegin = earliestBegin
        return try await scheduler.create(session: "s", Array(repeating: task, count: count))
    }

    func key(_ identifier: Int) -> TaskKey { TaskKey(session: "s", identifier: identifier) }

    func state(_ identifier: Int) throws -> StoredTask.State { try store.task(session: "s", identifier: identifier).state }

    func task(_ identifier: Int) throws -> StoredTask { try store.task(session: "s", identifier: identifier) }

    /// The session's journaled event kinds, in order, with their task.
    func events() throws -> [String] {
        try store.events(session: "s").map { "\($0.kind.rawValue) \($0.taskIdentifier ?? 0)" }
    }
}

/// Waits (yielding, a few milliseconds at a time, 90 s at most: a full test run on two cores is slow
/// to schedule, and the limit only matters when the condition never holds) until `condition` holds.
/// (30 s was not enough once: two loaded full runs starved a scheduler step for over 30 s at the start.)
func eventually(_ what: String, _ condition: () async throws -> Bool) async throws {
    let end = ContinuousClock.now + .seconds(90)
    while ContinuousClock.now < end {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(5))
    }
    Issue.record("never happened: \(what)")
    throw CancellationError()
}
