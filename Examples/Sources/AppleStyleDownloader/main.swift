// A background downloader written as an Apple-platform program is: an NSObject delegate, a session
// re-created by identifier, getTasksWithCompletionHandler, taskDescription to find its task again, and
// cancel(byProducingResumeData:) on SIGTERM. The only Linux change is the import below.
//
// usage: AppleStyleDownloader URL DEST
//
// The first run hands the download to ferryd and waits. Kill it (and ferryd too): a later run with the
// same arguments finds the task by its description and collects the file at DEST. On SIGTERM the run
// cancels with resume data (kept in DEST.resume) and a later run continues from it.
import Foundation
#if canImport(FoundationNetworking)
import FerryFoundationNetworking
#endif

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let url = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: AppleStyleDownloader URL DEST\n".utf8))
    exit(2)
}
let destination = URL(fileURLWithPath: arguments[2])
let resumeFile = URL(fileURLWithPath: arguments[2] + ".resume")

final class DownloadDelegate: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        try? FileManager.default.removeItem(at: destination)
        do {
            try FileManager.default.moveItem(at: location, to: destination)
            say("saved \(destination.path)")
        } catch {
            say("could not move the file: \(error.localizedDescription)")
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        if let error = error as? URLError {
            // A download this program stopped itself (it kept the resume data then); its completion
            // may arrive in this run or, replayed by ferryd, in the next one.
            if error.code == .cancelled { return }
            if let data = error.downloadTaskResumeData {
                try? data.write(to: resumeFile)
                say("stopped; resume data kept")
            } else if error.code != .cancelled {
                say("failed: \(error.localizedDescription)")
            }
            exit(1)
        }
        try? FileManager.default.removeItem(at: resumeFile)
        exit(0)
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        say("caught up")
    }
}

let configuration = URLSessionConfiguration.background(withIdentifier: "com.example.apple-style-downloader")
configuration.sessionSendsLaunchEvents = true
let session = URLSession(configuration: configuration, delegate: DownloadDelegate(), delegateQueue: nil)
let name = destination.path

session.getTasksWithCompletionHandler { _, _, downloads in
    if let running = downloads.first(where: { $0.taskDescription == name }) {
        say("continuing task \(running.taskIdentifier)")
        watchForTermination(running)
    } else if let data = try? Data(contentsOf: resumeFile) {
        let task = session.downloadTask(withResumeData: data)
        task.taskDescription = name
        task.resume()
        say("resumed task \(task.taskIdentifier)")
        watchForTermination(task)
    } else {
        let task = session.downloadTask(with: url)
        task.taskDescription = name
        task.resume()
        say("started task \(task.taskIdentifier)")
        watchForTermination(task)
    }
}

/// SIGTERM: stop with resume data, as an app stopping a download on request would.
@Sendable func watchForTermination(_ task: URLSessionDownloadTask) {
    signal(SIGTERM, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .main)
    source.setEventHandler {
        task.cancel(byProducingResumeData: { data in
            if let data { try? data.write(to: resumeFile) }
            say(data == nil ? "stopped without resume data" : "stopped; resume data kept")
            exit(1)
        })
    }
    source.resume()
    terminationSource = source
}

nonisolated(unsafe) var terminationSource: DispatchSourceSignal?
dispatchMain()
