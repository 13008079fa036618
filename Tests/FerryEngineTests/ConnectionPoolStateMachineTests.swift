import Testing

@testable import FerryEngine

/// The pool's books as a value, with plain objects for connections and numbers for what requests wait
/// on: which connection a claim gets, who waits for a first connection, and what shutting down returns.
@Suite struct ConnectionPoolStateMachineTests {
    final class Fake {
        var isOpen = true
        /// Streams an HTTP/2 connection still takes.
        var room = 0
        func reserve() -> Bool {
            guard isOpen, room > 0 else { return false }
            room -= 1
            return true
        }
    }

    typealias Machine = ConnectionPoolStateMachine<Fake, Fake, Int>

    private let direct = PoolKey(origin: .init(secure: true, host: "files.test", port: 443), proxy: nil)
    private let viaProxy = PoolKey(
        origin: .init(secure: true, host: "files.test", port: 443),
        proxy: .init(server: "http://proxy.test:8080", username: "ann", password: "secret")
    )
    private let plain = PoolKey(origin: .init(secure: false, host: "files.test", port: 80), proxy: nil)

    private final class Counter {
        var next = 0
    }

    private func claim(
        _ machine: inout Machine,
        _ key: PoolKey,
        mayShare: Bool = true,
        counter: Counter = Counter()
    ) -> Machine.Claim {
        machine.claim(
            key,
            mayShare: mayShare,
            isOpen: { $0.isOpen },
            reserve: { $0.reserve() },
            makeWaiter: {
                counter.next += 1
                return counter.next
            }
        )
    }

    @Test func theFirstRequestToAnHTTPSOriginConnectsAndTheOthersWait() {
        var machine = Machine(maximumIdlePerKey: 8)
        let counter = Counter()
        guard case .connect(first: let first?) = claim(&machine, direct, counter: counter) else {
            Issue.record("the first request must connect as the first")
            return
        }
        guard case .wait(let waiter) = claim(&machine, direct, counter: counter) else {
            Issue.record("the second request must wait for the first")
            return
        }
        #expect(waiter == first)
        // Another key does not wait for this one.
        guard case .connect(first: let other?) = claim(&machine, viaProxy, counter: counter) else {
            Issue.record("a request through a proxy is another key")
            return
        }
        #expect(other != first)
        // Plain http never waits for a shared connection.
        guard case .connect(first: nil) = claim(&machine, plain, mayShare: false, counter: counter) else {
            Issue.record("plain http connects at once")
            return
        }
    }

    @Test func aServerThatChoseHTTP1IsNotWaitedForAgain() {
        var machine = Machine(maximumIdlePerKey: 8)
        guard case .connect(first: let first?) = claim(&machine, direct) else {
            Issue.record("expected a first connection")
            return
        }
        machine.settle(direct, first: { $0 == first }, speaksHTTP1: true)
        guard case .connect(first: nil) = claim(&machine, direct) else {
            Issue.record("an HTTP/1.1 origin connects without electing a first")
            return
        }
    }

    @Test func aFailedFirstLetsTheNextRequestBeTheFirst() {
        var machine = Machine(maximumIdlePerKey: 8)
        let counter = Counter()
        guard case .connect(first: let first?) = claim(&machine, direct, counter: counter) else { return }
        machine.settle(direct, first: { $0 == first }, speaksHTTP1: false)
        guard case .connect(first: let second?) = claim(&machine, direct, counter: counter) else {
            Issue.record("the key must be free to connect again")
            return
        }
        #expect(second != first)
        // A stale settle (the first of before) does not release the new first.
        machine.settle(direct, first: { $0 == first }, speaksHTTP1: false)
        guard case .wait(second) = claim(&machine, direct, counter: counter) else {
            Issue.record("the new first is still connecting")
            return
        }
    }

    @Test func aSharedConnectionTakesStreamsUntilItIsFull() {
        var machine = Machine(maximumIdlePerKey: 8)
        let h2 = Fake()
        h2.room = 2
        let accepted1 = machine.opened(h2, key: direct, takesStreams: true)
        #expect(accepted1)
        #expect(machine.isShared(origin: direct.origin))
        for _ in 0..<2 {
            guard case .shared(let got) = claim(&machine, direct), got === h2 else {
                Issue.record("a stream on the shared connection")
                return
            }
        }
        guard case .connect = claim(&machine, direct) else {
            Issue.record("a full connection sends the request elsewhere")
            return
        }
        // A request that may not share never takes a stream.
        h2.room = 1
        guard case .connect = claim(&machine, direct, mayShare: false) else {
            Issue.record("HTTP/1.1 only")
            return
        }
        machine.retire(h2, key: direct, isOpen: true)
        #expect(!machine.isShared(origin: direct.origin))
    }

    @Test func isSharedCountsProxiedConnectionsToTheOrigin() {
        var machine = Machine(maximumIdlePerKey: 8)
        let accepted2 = machine.opened(Fake(), key: viaProxy, takesStreams: true)
        #expect(accepted2)
        #expect(machine.isShared(origin: direct.origin))
        #expect(!machine.isShared(origin: plain.origin))
    }

    @Test func idleConnectionsAreReusedLastInFirstOutAndBounded() {
        var machine = Machine(maximumIdlePerKey: 2)
        let (a, b, c) = (Fake(), Fake(), Fake())
        for connection in [a, b, c] {
            let accepted3 = machine.opened(connection, isOpen: true)
            #expect(accepted3)
        }
        let accepted4 = machine.offer(a, key: plain)
        #expect(accepted4)
        let accepted5 = machine.offer(b, key: plain)
        #expect(accepted5)
        let accepted6 = machine.offer(c, key: plain)
        #expect(!accepted6, "a third idle connection is closed")
        #expect(machine.idleCount(plain) == 2)
        guard case .idle(let got) = claim(&machine, plain, mayShare: false), got === b else {
            Issue.record("the most recently used connection first")
            return
        }
        // One that closed while idle is skipped.
        a.isOpen = false
        guard case .connect(first: nil) = claim(&machine, plain, mayShare: false) else {
            Issue.record("a closed idle connection is not handed out")
            return
        }
        #expect(machine.idleCount(plain) == 0)
    }

    @Test func aClosedConnectionIsForgotten() {
        var machine = Machine(maximumIdlePerKey: 8)
        let a = Fake()
        _ = machine.opened(a, isOpen: true)
        _ = machine.offer(a, key: plain)
        machine.closed(a, key: plain)
        #expect(machine.idleCount(plain) == 0)
        #expect(machine.shutDown().http1.isEmpty)
    }

    @Test func shuttingDownReturnsEveryConnectionAndWaiterAndRefusesNewOnes() {
        var machine = Machine(maximumIdlePerKey: 8)
        let (h1, h2) = (Fake(), Fake())
        _ = machine.opened(h1, isOpen: true)
        _ = machine.opened(h2, key: direct, takesStreams: true)
        guard case .connect(first: let first?) = claim(&machine, viaProxy) else { return }
        let (open, shared, waiters) = machine.shutDown()
        #expect(open.count == 1 && open[0] === h1)
        #expect(shared.count == 1 && shared[0] === h2)
        #expect(waiters == [first])
        let accepted7 = machine.opened(Fake(), isOpen: true)
        #expect(!accepted7)
        let accepted8 = machine.opened(Fake(), key: direct, takesStreams: true)
        #expect(!accepted8)
        let accepted9 = machine.offer(h1, key: plain)
        #expect(!accepted9)
        guard case .connect(first: nil) = claim(&machine, direct) else {
            Issue.record("after shutdown nobody is elected first (the connect fails on opened)")
            return
        }
    }

    @Test func theKeyNamesTheProxyButNeverItsPassword() {
        #expect(viaProxy.description == "https://files.test:443 via http://proxy.test:8080")
        #expect(direct != viaProxy)
        let otherUser = PoolKey(origin: viaProxy.origin, proxy: .init(server: "http://proxy.test:8080", username: "bob", password: "secret"))
        #expect(otherUser != viaProxy, "other credentials, another connection")
    }
}
