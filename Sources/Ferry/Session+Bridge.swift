public import Foundation

/// What FerryFoundationNetworking needs beyond the public API: tasks of each kind whose completion goes
/// to a handler (Apple's completion-handler factories) while their task-level events still go to the
/// task's delegate. Package-only: applications use the public factories or the async methods.
extension Session {
    /// What a bridged task transfers.
    package enum BridgedWork: Sendable {
        case data
        case upload(Data)
        case uploadFile(URL)
        /// The body comes from the task delegate's `needNewBodyStreamFor`.
        case uploadStream
        case download
        case downloadResume(Data)
    }

    /// How a bridged task ended.
    package enum BridgedOutcome: Sendable {
        case data(Data, Response)
        /// A download: the file is the receiver's to move or remove.
        case file(URL, Response)
        case failure(FerryError)
    }

    /// Runs a bridged task's transfer in the calling task, as this session's async methods do (one wake-up
    /// fewer than ``SessionTask/resume()``).
    /// - Returns: false when it did not start here: a background session's task (resume it instead), or
    ///   one cancelled before it began (it completes on its own).
    package func runInline(_ task: SessionTask) async -> Bool {
        guard background == nil else { return false }
        return await InProcessBackend().runInline(task)
    }

    /// A task of `work` for `request`, created suspended. With `completion`, the outcome goes there (the
    /// session delegate's data and completion events are skipped, as Apple's completion-handler tasks
    /// do); without, every event goes to the delegates.
    package func bridgedTask(
        _ request: Request,
        _ work: BridgedWork,
        completion: (@Sendable (BridgedOutcome) -> Void)?
    ) -> SessionTask {
        guard let completion else {
            switch work {
            case .data: return dataTask(with: request)
            case .upload(let data): return uploadTask(with: request, from: data)
            case .uploadFile(let file): return uploadTask(with: request, fromFile: file)
            case .uploadStream: return uploadTask(withStreamedRequest: request)
            case .download: return downloadTask(with: request)
            case .downloadResume(let data): return downloadTask(withResumeData: data)
            }
        }
        let route = SessionTask.Route.handler { outcome in
            switch outcome {
            case .data(let data, let response): completion(.data(data, response))
            case .file(let url, let response): completion(.file(url, response))
            case .failure(let error): completion(.failure(error))
            }
        }
        switch work {
        case .data:
            return register { DataTask(session: self, identifier: $0, request: request, work: .data, route: route, rejection: $1) }
        case .upload(let data):
            return register {
                UploadTask(session: self, identifier: $0, request: request, work: .upload(.data(data)), route: route, rejection: $1)
            }
        case .uploadFile(let file):
            return register {
                UploadTask(session: self, identifier: $0, request: request, work: .upload(.file(file)), route: route, rejection: $1)
            }
        case .uploadStream:
            return register {
                UploadTask(session: self, identifier: $0, request: request, work: .upload(.stream), route: route, rejection: $1)
            }
        case .download:
            return register {
                DownloadTask(
                    session: self,
                    identifier: $0,
                    request: request,
                    work: .download(resumeData: nil),
                    route: route,
                    rejection: $1
                )
            }
        case .downloadResume(let data):
            return makeDownloadTask(resumeData: data, route: route)
        }
    }
}
