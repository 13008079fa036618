public import FerryCore

/// Background tasks as a table (`ferry ls`, `ferry watch`). Pure.
public enum TaskTable {
    /// A header line and one line per task: id, state, progress, rate, target, error.
    public static func render(_ tasks: [BackgroundTaskInfo], showSession: Bool = false) -> [String] {
        var rows: [[String]] = [
            (showSession ? ["SESSION"] : []) + ["ID", "STATE", "PROGRESS", "RATE", "TARGET", "ERROR"]
        ]
        for task in tasks {
            rows.append(
                (showSession ? [task.session] : []) + [
                    String(task.taskIdentifier),
                    state(task),
                    progress(task),
                    task.bytesPerSecond.map(ByteFormat.rate) ?? "-",
                    task.destination ?? task.taskDescription ?? task.originalRequest.url.absoluteString,
                    task.error?.message ?? "",
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

    /// `failed` for a completed task with an error or an HTTP error status, else the state.
    public static func state(_ task: BackgroundTaskInfo) -> String {
        guard task.state == .completed else { return task.state.rawValue }
        return succeeded(task) ? "done" : "failed"
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
