import FerryCore
import FerryEngine
import FerryStore
import Foundation
import Logging

/// Removes finished tasks — on `ferry clean`, and by age in the daemon's housekeeping rounds — with
/// their events and the files the daemon kept for them, then compacts the database.
///
/// Only completed tasks go: a pending, running or suspended one is never touched. The files removed are
/// the daemon's own: a partial file kept for resume data (in the partial directory) and a delivered file
/// nobody collected (in the delivery directory); a task's destination belongs to the user.
struct Housekeeper: Sendable {
    let store: FerryStore
    let configuration: DaemonConfiguration
    let metrics: DaemonMetrics
    let logger: Logger

    /// Removes the finished tasks that finished `olderThan` seconds ago or earlier (all when nil), of
    /// `session` (every session's when nil).
    func clean(olderThan: Double?, session: String?) throws -> ControlAPI.CleanResult {
        let cutoff = olderThan.map { configuration.clock.now().addingTimeInterval(-$0) }
        let removed = try store.removeFinishedTasks(finishedBefore: cutoff, session: session)
        var files = 0
        var bytes: Int64 = 0
        for (task, events) in removed {
            var leftovers: [String] = []
            if let partial = task.partialPath, partial != task.destination,
                partial.hasPrefix(configuration.paths.partialDirectory + "/")
            {
                leftovers.append(partial)
            }
            for event in events where event.kind == .didFinishDownloading {
                if let delivered = Scheduler.deliveredFile(event.payload, configuration) { leftovers.append(delivered) }
            }
            for file in leftovers {
                guard let size = (try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int64,
                    (try? FileManager.default.removeItem(atPath: file)) != nil
                else { continue }
                files += 1
                bytes += size
            }
        }
        if !removed.isEmpty {
            metrics.pruned(removed.count)
            do {
                try store.compact()
            } catch {
                logger.warning("cannot compact the state database: \(error)")
            }
        }
        return ControlAPI.CleanResult(removedTasks: removed.count, removedFiles: files, freedBytes: bytes)
    }

    /// One housekeeping round: prunes by ``DaemonConfiguration/pruneAfter``, then compacts the database.
    func round() {
        do {
            if let age = configuration.pruneAfter {
                let result = try clean(olderThan: age, session: nil)
                if result.removedTasks > 0 {
                    logger.info(
                        "pruned \(result.removedTasks) task(s) finished over \(DurationText.describe(age)) ago, \(result.removedFiles) file(s), \(result.freedBytes) bytes"
                    )
                }
            }
            try store.compact()
        } catch {
            logger.error("housekeeping failed: \(error)")
        }
    }
}
