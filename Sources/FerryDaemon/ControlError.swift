import FerryCore
import FerryStore
import Foundation
import HTTPTypes
public import Hummingbird
import Logging
import NIOCore

/// What the control API answers a request it does not carry out with: a status and a
/// ``ControlAPI/ErrorBody`` (Hummingbird's `HTTPResponseError`). Nothing changed (D6).
struct ControlError: HTTPResponseError {
    let status: HTTPResponse.Status
    let error: FerryError
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ error: FerryError, headers: HTTPFields = [:]) {
        self.status = status
        self.error = error
        self.headers = headers
    }

    /// 404: no such task.
    static func notFound(_ message: String) -> ControlError {
        ControlError(.notFound, FerryError(.invalidOperation, message))
    }

    /// 409: a well-formed request that the daemon's files contradict (a missing upload file, a
    /// destination directory that does not exist or cannot be written).
    static func conflict(_ check: () throws -> Void) throws {
        do { try check() } catch let error as FerryError { throw ControlError(.conflict, error) }
    }

    /// Whatever a route threw, as the API answers it: a request's mistake is a 400, the daemon's
    /// trouble (a file it cannot write, its store) a 500.
    init(_ thrown: any Error) {
        switch thrown {
        case let error as ControlError:
            self = error
        case let error as FerryError:
            switch error.code {
            case .backgroundSessionInUseByAnotherProcess: self.init(.conflict, error)
            case .cannotWriteToFile, .cannotCreateFile, .cannotMoveFile, .unknown: self.init(.internalServerError, error)
            default: self.init(.badRequest, error)
            }
        case let error as FerryStoreError where error.isConflict:
            self.init(.conflict, FerryError(.invalidOperation, error.message))
        case let error as FerryStoreError:
            self.init(.internalServerError, FerryError(.unknown, error.message))
        case let error as HTTPError:
            self.init(error.status, FerryError(.invalidOperation, error.body ?? error.status.reasonPhrase))
        default:
            self.init(.internalServerError, FerryError(.unknown, "\(thrown)"))
        }
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json"
        let data = try JSONEncoder().encode(ControlAPI.ErrorBody(error: error))
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Turns whatever a route throws into a ``ControlError`` answer (Hummingbird would answer an error it
/// does not know with a bare 500), logging the daemon's own failures.
struct ControlErrorMiddleware: RouterMiddleware {
    typealias Context = ControlContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            let answer = ControlError(error)
            if answer.status == .internalServerError { logger.error("control API: \(answer.error)") }
            throw answer
        }
    }
}

// The API's answers, encoded by Hummingbird with the context's encoder.
extension BackgroundTaskInfo: ResponseGenerator {}
extension BackgroundTaskInfo: ResponseEncodable {}
extension BackgroundEvent: ResponseGenerator {}
extension BackgroundEvent: ResponseEncodable {}
extension ControlAPI.DaemonStatus: ResponseGenerator {}
extension ControlAPI.DaemonStatus: ResponseEncodable {}
extension ControlAPI.CancelResult: ResponseGenerator {}
extension ControlAPI.CancelResult: ResponseEncodable {}
extension ControlAPI.CleanResult: ResponseGenerator {}
extension ControlAPI.CleanResult: ResponseEncodable {}
extension ControlAPI.StatusPage: ResponseGenerator {}
extension ControlAPI.StatusPage: ResponseEncodable {}

extension ControlAPI.NetworkReport: ResponseEncodable {}

extension ControlAPI.BandwidthLimit: ResponseEncodable {}
