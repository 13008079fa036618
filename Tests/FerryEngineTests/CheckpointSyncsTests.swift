import Foundation
import Testing

@testable import FerryEngine

#if canImport(Glibc)
import Glibc
#endif

/// One durable checkpoint at a time; one that falls due meanwhile waits, the latest replacing earlier
/// ones, and none is dropped (a body that pauses must not leave its last checkpoint unrecorded).
@Suite struct CheckpointSyncsTests {
    /// A point on a descriptor of its own (/dev/null), so discarding it closes something real.
    private func point(_ length: Int64) throws -> CheckpointSyncs.Pending {
        let descriptor = open("/dev/null", O_WRONLY | O_CLOEXEC)
        #expect(descriptor >= 0)
        return CheckpointSyncs.Pending(
            point: DurabilityPoint(path: "/dev/null", descriptor: descriptor, length: length),
            snapshot: nil
        )
    }

    @Test func theFirstStartsASyncAndLaterOnesWaitTheLatestWinning() throws {
        var syncs = CheckpointSyncs()
        let first = try point(1)
        let started = syncs.start(first)
        #expect(started)
        #expect(syncs.isSyncing)
        let second = try point(2)
        let secondStarted = syncs.start(second)
        let thirdStarted = syncs.start(try point(3))
        #expect(!secondStarted && !thirdStarted)
        // The replaced one was closed.
        #expect(fcntl(second.point.descriptor, F_GETFD) == -1)
        let waited = syncs.next()
        let next = try #require(waited)
        #expect(next.point.length == 3)
        #expect(syncs.isSyncing)
        let none = syncs.next()
        #expect(none == nil)
        #expect(!syncs.isSyncing)
        // Idle again: the next checkpoint starts a sync of its own.
        let fourth = try point(4)
        let fourthStarted = syncs.start(fourth)
        #expect(fourthStarted)
        first.point.discard()
        next.point.discard()
        fourth.point.discard()
    }

    @Test func aFailedSyncDropsWhatWaited() throws {
        var syncs = CheckpointSyncs()
        let running = try point(1)
        let started = syncs.start(running)
        let waiting = try point(2)
        let waitingStarted = syncs.start(waiting)
        #expect(started && !waitingStarted)
        syncs.stop()
        #expect(!syncs.isSyncing)
        #expect(syncs.waiting == nil)
        #expect(fcntl(waiting.point.descriptor, F_GETFD) == -1)
        running.point.discard()
    }
}
