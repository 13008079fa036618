// The snippet of Sources/Ferry/Ferry.docc/GettingStarted.md, character for character (ExamplesTests'
// GettingStartedTests compares them): built here so that a snippet that does not compile fails CI.
// It is built, not run: its URLs are example.com's.

import Ferry
import Foundation

final class Fetcher: DownloadDelegate {
    func session(_ session: Session, downloadTask: DownloadTask,
                 didWriteData written: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) async {
        print("\(totalBytesWritten) of \(totalBytesExpectedToWrite)")
    }
    func session(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) async {
        // The file is removed when this returns: move it now.
        try? FileManager.default.moveItem(at: location, to: URL(fileURLWithPath: "/tmp/big.iso"))
    }
    func session(_ session: Session, task: SessionTask, didCompleteWithError error: FerryError?) async {
        print(error.map { "failed: \($0)" } ?? "done")
    }
}

let session = Session(configuration: .default, delegate: Fetcher())
let task = session.downloadTask(with: URL(string: "https://example.com/big.iso")!)
task.resume()
await task.waitUntilFinished()
