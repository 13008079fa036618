import FerryEngine
import Foundation
import NIOCore

extension SessionTask {
    /// The network access of an in-process task: its request's and session's (the stricter), changed by
    /// ``change(_:)`` before it started. Discretionary timing is ferryd's; in process it plays no part.
    func networkPolicy(_ request: Request) -> NetworkPolicy {
        var policy = NetworkPolicy(request: request, configuration: session.configuration)
        policy.isDiscretionary = false
        locked.withLock { state in
            if let metered = state.allowsMetered { policy.allowsMetered = metered }
            if let constrained = state.allowsConstrained { policy.allowsConstrained = constrained }
        }
        return policy
    }

    /// Before an in-process transfer: when the network does not allow the task now, waits for one that
    /// does (`SessionConfiguration/waitsForConnectivity`, telling the delegate once), or fails at once
    /// with `FerryError/Code/notConnectedToInternet` as Apple's do. Offline without waiting, the
    /// connection attempt itself says so. Costs nothing when nothing is restricted and nothing waits.
    func waitForNetwork(_ request: Request, deadline: NIODeadline) async throws {
        let policy = networkPolicy(request)
        let waits = session.configuration.waitsForConnectivity
        guard waits || !policy.allowsMetered || !policy.allowsConstrained else { return }
        let host = request.url.host
        let monitor = session.networkMonitor
        let reading = await monitor.current()
        guard let reason = policy.waitReason(in: reading.state, host: host) else { return }
        guard waits else {
            if reason == .offline { return }
            throw FerryError(
                .notConnectedToInternet,
                "the network is \(reason == .metered ? "metered" : "constrained") and this task may not use such a network (allows\(reason == .metered ? "Expensive" : "Constrained")NetworkAccess is false); set waitsForConnectivity to wait for another",
                failingURL: request.url.absoluteString
            )
        }
        let first = locked.withLock { state -> Bool in
            defer { state.toldWaiting = true }
            return !state.toldWaiting
        }
        if first, let delegate = taskDelegateForEvents() {
            let session = self.session
            await session.queue.perform { await delegate.session(session, taskIsWaitingForConnectivity: self, reason: reason) }
        }
        let seconds = Double(max(0, (deadline - .now()).nanoseconds)) / 1e9
        let cancellation = TransferContext.current?.cancellation
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await monitor.wait { policy.waitReason(in: $0, host: host) == nil }
                return true
            }
            if let cancellation {
                // A transfer run in its caller's task, cancelled from elsewhere, stops waiting.
                group.addTask {
                    await cancellation.waitUntilCancelled()
                    try Task.checkCancellation()
                    throw FerryError(.cancelled, "the task was cancelled while it waited for a network it may use")
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(min(seconds, 1e9)))
                return false
            }
            let allowed = try await group.next() ?? false
            group.cancelAll()
            guard allowed else {
                throw FerryError(
                    .timedOut,
                    "the task waited for a network it may use (\(reason.rawValue)) until its resource timeout",
                    failingURL: request.url.absoluteString
                )
            }
        }
    }
}
