import NIOCore
import NIOPosix

/// Runs Swift tasks on SwiftNIO event loops instead of the cooperative pool.
///
/// The synchronous forms of ``DaemonClient`` block their caller until an async exchange over Ferry's
/// transport is done. Callers may themselves be on the cooperative pool (a `Session` made in async code),
/// and on two cores a blocked pool thread or two leave nothing to run that exchange: it would never end.
/// Run on an event loop, the exchange needs no pool thread (SwiftNIO has no such executor of its own).
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    private let loop: any EventLoop

    init(loop: any EventLoop) {
        self.loop = loop
    }

    /// One executor on one of the shared loops, for every blocking call of the process.
    static let shared = EventLoopTaskExecutor(loop: MultiThreadedEventLoopGroup.singleton.next())

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }

    /// Runs `body` on the loop and blocks the calling thread (which must not be an event loop) until
    /// it is done.
    func blockingRun<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) throws -> Value {
        let answer = loop.makePromise(of: Value.self)
        Task(executorPreference: self) {
            do {
                answer.succeed(try await body())
            } catch {
                answer.fail(error)
            }
        }
        return try answer.futureResult.wait()
    }
}
