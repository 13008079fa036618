import FerryFoundationNetworking
import Foundation

/// A task delegate for this target's tests: answers every challenge with ann/s3cret (the test server's
/// `/basic-auth/ann/s3cret` user), and gives `body` as a new stream each time one is asked for (counted
/// in `asked`). One class for both: on Linux a subclass's delegate method does not answer for a
/// protocol its superclass adopted.
final class CredentialDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let body: Data?
    let lock = NSLock()
    var asked = 0

    init(body: Data? = nil) {
        self.body = body
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.useCredential, URLCredential(user: "ann", password: "s3cret", persistence: .forSession))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void) {
        lock.withLock { asked += 1 }
        completionHandler(body.map { InputStream(data: $0) })
    }
}
