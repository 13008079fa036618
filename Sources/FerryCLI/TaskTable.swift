public import FerryCore
public import Foundation

/// Background tasks as a table (`ferry ls`, `ferry watch`). Pure.
public enum TaskTable {
    /// A header line and one line per task: id, state, progress, rate, target, error (for a task that
    /// waits to try again, its last attempt's error and when the next starts, relative to `now`).
    public static func render(_ tasks: [BackgroundTaskInfo], showSession: Bool = false, now: Date = Date()) -> [String] {
        var rows: [[String]] = [
            (showSession ? ["SESSION"] : []) + ["ID", "STATE", "PROGRESS", "RATE", "TARGET", "ERROR"]
        ]
        for task in tasks {
            rows.append(
                (showSession ? [task.session] : []) + [
                    String(task.taskIdentifier),
                    state(task, now: now),
                    progress(task),
                    task.bytesPerSecond.map(ByteFormat.rate) ?? "-",
                    task.destination ?? task.taskDescription ?? task.originalRequest.url.absoluteString,
                    error(task, now: now),
                ]
            )
        }
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
    }

    /// The error column: the error a task completed with; for one that waits to try again, its last
    /// attempt's error and when the next try starts (`… (try 3 in 4s)`).
    public static func error(_ task: BackgroundTaskInfo, now: Date) -> String {
        if let error = task.error { return error.message }
        guard task.state != .completed, let last = task.lastError else { return "" }
        var text = last.message
        if let next = task.nextAttemptTime {
            let seconds = max(0, next - now.timeIntervalSince1970)
            text += " (try \((task.failedAttempts ?? 0) + 1) in \(DurationText.describe(seconds.rounded(.up))))"
        }
        return text
    }

    /// `completed` as the JSON says it, `cancelled` for one cancelled, `failed` for a completed task with
    /// another error or an HTTP error status, `waiting (metered network)`
    /// for a pending one the network does not allow now (with the reason), `retrying` for a pending one
    /// whose last attempt failed, `starts in 5m` for one held until a later time, else the state.
    public static func state(_ task: BackgroundTaskInfo, now: Date = Date()) -> String {
        if task.state == .pending, let reason = task.waitingReason { return "waiting (\(reason))" }
        if task.state == .pending, let begin = task.earliestBeginTime, begin > now.timeIntervalSince1970 {
            return "starts in \(DurationText.describe((begin - now.timeIntervalSince1970).rounded(.up)))"
        }
        if task.state == .pending, task.lastError != nil { return "retrying" }
        guard task.state == .completed else { return task.state.rawValue }
        if task.error?.code == .cancelled { return "cancelled" }
        return succeeded(task) ? "completed" : "failed"
    }

    /// Whether a completed task succeeded: no error and, if a status arrived, a 2xx or 3xx one.
    public static func succeeded(_ task: BackgroundTaskInfo) -> Bool {
        guard task.state == .completed, task.error == nil else { return false }
        return task.statusCode.map { $0 < 400 } ?? true
    }

    /// `4.2 MB/10.0 MB 42%`, or the bytes alone when the total is unknown.
    public static func progress(_ task: BackgroundTaskInfo) -> String {
        let done = task.kind == .upload ? task.bytesSent : task.bytesReceived
        guard task.kind == .download, let total = task.expectedLength, total > 0 else {
            return ByteFormat.bytes(done)
        }
        let percent = Int(min(100, Double(done) * 100 / Double(total)))
        return "\(ByteFormat.bytes(done))/\(ByteFormat.bytes(total)) \(percent)%"
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
