@testable import Ferry
import FerryEngine
import FerryTestServer
import Foundation
import Synchronization
import Testing

/// A network state a test sets; the monitor reads it on ``NetworkMonitor/refresh()``.
final class FakeNetworkSource: NetworkStateSource {
    let state = Mutex(NetworkState())
    func read() async -> NetworkReading { NetworkReading(state: state.withLock { $0 }) }
}

/// In-process sessions under a network policy (issue 19): they wait when asked to, fail at once
/// otherwise, and shape their bytes to a bandwidth limit.
@Suite struct SessionNetworkTests {
    final class Waiting: DataDelegate, @unchecked Sendable {
        let reasons = Mutex<[NetworkPolicy.WaitReason]>([])
        func session(_ session: Session, taskIsWaitingForConnectivity task: SessionTask, reason: NetworkPolicy.WaitReason) async {
            reasons.withLock { $0.append(reason) }
        }
    }

    func monitor(_ state: NetworkState) async -> (NetworkMonitor, FakeNetworkSource) {
        let source = FakeNetworkSource()
        source.state.withLock { $0 = state }
        let monitor = NetworkMonitor(source: source, interval: 0.02)
        await monitor.refresh()
        return (monitor, source)
    }

    @Test func aRequestThatMayNotUseAMeteredNetworkFailsAtOnceWithoutSendingAnything() async throws {
        try await withSession(.ephemeral) { server, session in
            session.networkMonitor = await monitor(NetworkState(isMetered: true)).0
            var metered = request(server.url("/bytes/10"))
            metered.allowsExpensiveNetworkAccess = false
            do {
                _ = try await session.data(for: metered)
                Issue.record("a request forbidding metered networks ran on one")
            } catch let error as FerryError {
                #expect(error.code == .notConnectedToInternet)
                #expect(error.message.contains("metered"))
            }
            #expect(server.counters.requests(path: "/bytes/10") == 0)
            // Unmetered, the same request goes.
            session.networkMonitor = await monitor(NetworkState()).0
            let (data, _) = try await session.data(for: metered)
            #expect(data.count == 10)
        }
    }

    @Test func aSessionThatWaitsForConnectivityWaitsTellsTheDelegateOnceAndThenRuns() async throws {
        var configuration = SessionConfiguration.ephemeral
        configuration.waitsForConnectivity = true
        configuration.allowsCellularAccess = false
        let delegate = Waiting()
        try await withSession(configuration) { server, session in
            let (monitor, source) = await monitor(NetworkState(isMetered: true))
            session.networkMonitor = monitor
            defer { monitor.stop() }
            let task = Task { try await session.data(for: request(server.url("/bytes/100")), delegate: delegate) }
            try await eventually("the delegate hears it waits", within: 30) { delegate.reasons.withLock { $0 } == [.metered] }
            #expect(server.counters.requests(path: "/bytes/100") == 0, "nothing is sent while it waits")
            source.state.withLock { $0 = NetworkState() }
            let (data, _) = try await task.value
            #expect(data.count == 100)
            #expect(delegate.reasons.withLock { $0 } == [.metered])
        }
    }

    @Test func aWaitingTaskCanBeCancelled() async throws {
        var configuration = SessionConfiguration.ephemeral
        configuration.waitsForConnectivity = true
        try await withSession(configuration) { server, session in
            let (monitor, _) = await monitor(NetworkState(isOnline: false))
            session.networkMonitor = monitor
            defer { monitor.stop() }
            // Not a loopback name: offline, it waits.
            let task = session.dataTask(with: request("http://ferry-offline.invalid/x"))
            task.resume()
            try await Task.sleep(for: .milliseconds(100))
            #expect(task.state == .running)
            task.cancel()
            await task.waitUntilFinished()
            #expect(task.error?.code == .cancelled)
        }
    }

    /// An async call waits in its caller's task; a cancel from elsewhere still ends the wait, and the
    /// caller's own task is not cancelled.
    @Test func anAsyncCallWaitingForANetworkEndsWhenItsTaskIsCancelled() async throws {
        var configuration = SessionConfiguration.ephemeral
        configuration.waitsForConnectivity = true
        // Were the cancel not to reach the wait, it would end here, as a timeout, not hang the suite.
        configuration.timeoutIntervalForResource = 30
        try await withSession(configuration) { server, session in
            let (monitor, _) = await monitor(NetworkState(isOnline: false))
            session.networkMonitor = monitor
            defer { monitor.stop() }
            let call = Task { () -> (callerCancelled: Bool, error: FerryError?) in
                do {
                    _ = try await session.data(for: request("http://ferry-offline.invalid/x"))
                    return (Task.isCancelled, nil)
                } catch {
                    return (Task.isCancelled, error as? FerryError)
                }
            }
            try await eventually("the call waits", within: 30) { session.getAllTasks().first?.state == .running }
            try await Task.sleep(for: .milliseconds(100))
            session.getAllTasks().first?.cancel()
            let outcome = await call.value
            #expect(outcome.error?.code == .cancelled)
            #expect(!outcome.callerCancelled)
        }
    }

    @Test func aTaskChangedBeforeItStartsTakesTheNewPolicy() async throws {
        try await withSession(.ephemeral) { server, session in
            session.networkMonitor = await monitor(NetworkState(isMetered: true)).0
            let task = session.dataTask(with: request(server.url("/bytes/10")))
            try await task.change(SessionTask.Change(allowsMeteredNetwork: false, bandwidthLimit: 4096))
            #expect(task.bandwidthLimit == 4096)
            task.resume()
            await task.waitUntilFinished()
            #expect(task.error?.code == .notConnectedToInternet)
            await #expect(throws: FerryError.self) { try await task.change(SessionTask.Change(priority: 2)) }
        }
    }

    @Test func aSessionBandwidthLimitShapesItsTransfers() async throws {
        // A floor, not a speed: 256 KiB at 128 KiB/s cannot arrive in under 0.875 s however fast the
        // machine (2 s less the burst, 16 KiB, and two reads of up to 64 KiB that a bucket in credit lets
        // through before it is paid for); unlimited, it takes milliseconds.
        var configuration = SessionConfiguration.ephemeral
        configuration.bandwidthLimit = 128 * 1024
        try await withSession(configuration) { server, session in
            let start = ContinuousClock.now
            let (data, _) = try await session.data(for: request(server.url("/bytes/262144")))
            let elapsed = ContinuousClock.now - start
            #expect(data.count == 262_144)
            #expect(elapsed >= .milliseconds(875), "took \(elapsed)")
        }
    }
}
