// Uploads a file with the resumable upload protocol (IETF draft "Resumable Uploads for HTTP"): a cut
// connection is followed by an offset query and the rest of the file, not by the whole file again.
//
// usage: ResumableUploader URL FILE [TRUST_ROOT_PEM]
import Ferry
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 3, let url = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: ResumableUploader URL FILE [TRUST_ROOT_PEM]\n".utf8))
    exit(2)
}
let file = URL(fileURLWithPath: arguments[2])

/// Prints progress as the body goes out.
final class Progress: TaskDelegate {
    func session(
        _ session: Session,
        task: SessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) async {
        print("sent \(totalBytesSent)/\(totalBytesExpectedToSend)")
    }
}

var configuration = SessionConfiguration.ephemeral
if arguments.count > 3 {
    configuration.tls.additionalTrustRootsPEM = [try String(contentsOfFile: arguments[3], encoding: .utf8)]
}
let session = Session(configuration: configuration)
var request = Request(url: url)
request.method = "POST"
request.resumableUpload = true
do {
    let (body, response) = try await session.upload(for: request, fromFile: file, delegate: Progress())
    print("status \(response.statusCode), \(body.count) bytes of answer")
    exit(response.statusCode < 300 ? 0 : 1)
} catch let error as FerryError {
    print("failed: \(error.message)")
    exit(1)
}
