// A background download that survives this program: kill it, run it again, and it picks up the result.
//
// usage: BackgroundDownloader URL DEST
//
// The first run hands the download to ferryd, notes the task beside DEST (DEST.task) and waits. A later
// run with the same arguments attaches to the same session and does not start a second download: it
// waits for the task if it still runs, or receives its events if it finished while nobody waited.
// Either way the file ends up at DEST.
import Ferry
import Foundation

/// Writes a line at once (print's buffer would lose it when the program is killed).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let url = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: BackgroundDownloader URL DEST\n".utf8))
    exit(2)
}
let destination = URL(fileURLWithPath: arguments[2])
let note = URL(fileURLWithPath: arguments[2] + ".task")

/// What the delegate tells the program.
enum Signal: Sendable {
    /// The task completed: 0 when the file is at DEST.
    case completed(Int32)
    /// Events that waited for this run have all been delivered.
    case caughtUp
}

/// Moves the finished file to DEST and reports the end.
final class Downloads: DownloadDelegate, @unchecked Sendable {
    let signals: AsyncStream<Signal>.Continuation

    init(signals: AsyncStream<Signal>.Continuation) {
        self.signals = signals
    }

    func session(
        _ session: Session,
        downloadTask: DownloadTask,
        didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) async {
        say("progress \(totalBytesWritten)/\(totalBytesExpectedToWrite)")
    }

    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
        // The file is removed when this returns: move it now.
        try? FileManager.default.removeItem(at: destination)
        do {
            try FileManager.default.moveItem(at: location, to: destination)
            say("saved \(destination.path)")
        } catch {
            say("could not move the file: \(error)")
        }
    }

    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        if let error { say("failed: \(error.message)") }
        try? FileManager.default.removeItem(at: note)
        signals.yield(.completed(error == nil ? 0 : 1))
    }

    func sessionDidFinishEvents(forBackgroundSession session: Session) async {
        signals.yield(.caughtUp)
    }
}

let (signals, continuation) = AsyncStream.makeStream(of: Signal.self)
let session = Session(
    configuration: .background(identifier: "com.example.background-downloader"),
    delegate: Downloads(signals: continuation)
)
// Still running, or finished while nobody waited?
var running = false
if let noted = (try? String(contentsOf: note, encoding: .utf8)).flatMap({ Int($0) }) {
    running = await session.allTasks.contains { $0.taskIdentifier == noted }
    say("continuing task \(noted)\(running ? "" : ", finished meanwhile")")
} else {
    let task = session.downloadTask(with: url)
    task.resume()
    try String(task.taskIdentifier).write(to: note, atomically: true, encoding: .utf8)
    say("started task \(task.taskIdentifier)")
    running = true
}
var status: Int32 = 1
for await signal in signals {
    if case .completed(let code) = signal {
        status = code
        break
    }
    // Caught up without a completion for a task that was not running: nothing more will come.
    if !running {
        say("nothing to collect")
        break
    }
}
session.finishTasksAndInvalidate()
exit(status)
