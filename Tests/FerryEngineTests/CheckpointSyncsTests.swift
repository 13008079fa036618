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
    /// A point on a file of its own (removed at once: the open descriptor keeps it).
    private func point(_ length: Int64) throws -> CheckpointSyncs.Pending {
        let path = NSTemporaryDirectory() + "ferry-point-\(UUID().uuidString)"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        #expect(descriptor >= 0)
        unlink(path)
        return CheckpointSyncs.Pending(
            point: DurabilityPoint(path: path, descriptor: descriptor, length: length),
            snapshot: nil
        )
    }

    /// Whether the point's descriptor was closed: it is not open, or now names another file (another
    /// test of this process opened one and got the number again).
    private func isClosed(_ pending: CheckpointSyncs.Pending) -> Bool {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(pending.point.descriptor)")
        else { return true }
        return !target.hasPrefix(pending.point.path)
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
        #expect(isClosed(second))
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
        #expect(isClosed(waiting))
        running.point.discard()
    }
}
