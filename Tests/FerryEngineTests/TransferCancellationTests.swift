@testable import FerryEngine
import Synchronization
import Testing

/// A transfer's own cancellation: every handler registered when it is cancelled runs once, a removed one
/// never, one registered afterwards at once — whether it was the only one or one of several.
@Suite struct TransferCancellationTests {
    /// Which handlers ran, by name.
    final class Ran: Sendable {
        let names = Mutex<[String]>([])
        func handler(_ name: String) -> @Sendable () -> Void { { self.names.withLock { $0.append(name) } } }
        var sorted: [String] { names.withLock { $0.sorted() } }
    }

    @Test func everyRegisteredHandlerRunsOnceAndARemovedOneNever() throws {
        let cancellation = TransferCancellation()
        let ran = Ran()
        let first = try #require(cancellation.add(ran.handler("first")))
        let second = try #require(cancellation.add(ran.handler("second")))
        _ = try #require(cancellation.add(ran.handler("third")))
        cancellation.remove(second)
        // The first slot is free again: a fourth takes it, beside the third.
        cancellation.remove(first)
        _ = try #require(cancellation.add(ran.handler("fourth")))
        #expect(ran.sorted.isEmpty)
        cancellation.cancel()
        #expect(ran.sorted == ["fourth", "third"])
        cancellation.cancel()
        #expect(ran.sorted == ["fourth", "third"])
        #expect(cancellation.isCancelled)
    }

    @Test func aHandlerAddedAfterTheCancelRunsAtOnce() {
        let cancellation = TransferCancellation()
        let ran = Ran()
        cancellation.cancel()
        #expect(cancellation.add(ran.handler("late")) == nil)
        #expect(ran.sorted == ["late"])
    }

    @Test func aRemovedOnlyHandlerDoesNotRun() throws {
        let cancellation = TransferCancellation()
        let ran = Ran()
        for round in 0..<3 {
            let key = try #require(cancellation.add(ran.handler("wait \(round)")))
            cancellation.remove(key)
        }
        cancellation.cancel()
        #expect(ran.sorted.isEmpty)
    }
}
