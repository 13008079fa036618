// The worked port of "Moving from URLSession" (Sources/Ferry/Ferry.docc/MovingFromURLSession.md):
// a background download, as the guide shows it, with the URL and the destination from the command line.
//
// usage: ReportDownloader URL DEST
import Ferry
import Foundation

let source = URL(string: CommandLine.arguments[1])!
let destination = URL(fileURLWithPath: CommandLine.arguments[2])

final class Downloads: DownloadDelegate {
    func session(_ session: Session, downloadTask: DownloadTask,
                 didFinishDownloadingTo location: URL) async {
        try? FileManager.default.moveItem(at: location, to: destination)
    }
    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        print(error.map { "failed: \($0.message)" } ?? "saved \(destination.path)")
        exit(error == nil ? 0 : 1)
    }
}

let configuration = SessionConfiguration.background(identifier: "com.example.reports")
let session = Session(configuration: configuration, delegate: Downloads())
session.downloadTask(with: source).resume()
dispatchMain()
