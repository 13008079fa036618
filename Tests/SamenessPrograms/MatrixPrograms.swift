// The same question asked of every task kind: each status a server may answer with, cancellation at
// each phase, and a timeout before the head. Programs of the sameness suite, compiled against
// FoundationNetworking and against FerryFoundationNetworking like the rest.
import Foundation
#if FERRY
import FerryFoundationNetworking
#elseif canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SamenessPrograms {
    /// How a matrix program makes its task: each hands back body bytes (a download's file read while the
    /// handler runs), response and error through a completion handler.
    enum Kind: String, CaseIterable, Sendable {
        case data = "data"
        case download = "download"
        case upload = "POST upload"

        /// Makes the task for `request` (an upload POSTs 5,000 bytes, to /upload for a /bytes URL), suspended.
        func task(
            _ session: URLSession,
            _ request: URLRequest,
            _ done: @escaping @Sendable ([String]) -> Void
        ) -> URLSessionTask {
            switch self {
            case .data:
                return session.dataTask(with: request) { data, response, error in
                    done([describe(data), describe(response), describe(error)])
                }
            case .download:
                return session.downloadTask(with: request) { location, response, error in
                    done([describe(location.flatMap { try? Data(contentsOf: $0) }), describe(response), describe(error)])
                    removeIfKept(location, after: session)
                }
            case .upload:
                var post = request
                post.httpMethod = "POST"
                // /bytes answers GET and HEAD only: an upload goes to /upload, with the same faults.
                if var parts = request.url.flatMap({ URLComponents(url: $0, resolvingAgainstBaseURL: false) }),
                    parts.path.hasPrefix("/bytes/")
                {
                    parts.path = "/upload"
                    post.url = parts.url
                }
                return session.uploadTask(with: post, from: Data(repeating: 7, count: 5000)) { data, response, error in
                    done([describe(data), describe(response), describe(error)])
                }
            }
        }
    }

    /// Statuses a server may answer with that are neither informational, nor redirects, nor bodiless by
    /// definition (204 and 304 have programs of their own): each is a response, not an error.
    static let answeredStatuses = [
        200, 201, 202, 203, 205, 226, 300, 400, 401, 402, 403, 404, 405, 406, 408, 409, 410, 411, 412, 413, 414,
        415, 417, 418, 422, 423, 424, 425, 428, 429, 431, 451, 500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511,
    ]

    static let matrixPrograms: [(name: String, program: Program)] =
        answeredStatuses.flatMap { code in
            Kind.allCases.map { kind in
                ("status \(code) to a \(kind.rawValue) task is a response with its body", { @Sendable origin in
                    await answered(origin, code, kind)
                })
            } + [("status \(code) to a HEAD through async data(for:)", { @Sendable origin in await headAnswered(origin, code) })]
        }
        + Kind.allCases.flatMap { kind in
            [
                ("a \(kind.rawValue) task cancelled before it is resumed ends with cancelled", { @Sendable origin in
                    await cancelledBeforeResume(origin, kind)
                }),
                ("a \(kind.rawValue) task cancelled while it waits for the head ends with cancelled", { @Sendable origin in
                    await cancelledBeforeHead(origin, kind)
                }),
                ("a \(kind.rawValue) task cancelled after it completed changes nothing", { @Sendable origin in
                    await cancelledAfterCompletion(origin, kind)
                }),
                ("a \(kind.rawValue) task whose head does not come in time is timedOut", { @Sendable origin in
                    await headTimesOut(origin, kind)
                }),
            ] as [(name: String, program: Program)]
        }

    /// Runs `kind`'s task for `request` to its completion handler.
    static func run(_ session: URLSession, _ request: URLRequest, _ kind: Kind) async -> [String] {
        let waiter = Waiter<[String]>()
        kind.task(session, request) { waiter.finish($0) }.resume()
        return await waiter.value()
    }

    static func answered(_ origin: String, _ code: Int, _ kind: Kind) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        return await run(session, URLRequest(url: URL(string: "\(origin)/status/\(code)")!), kind)
    }

    static func headAnswered(_ origin: String, _ code: Int) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: URL(string: "\(origin)/status/\(code)")!)
        request.httpMethod = "HEAD"
        do {
            let (data, response) = try await session.data(for: request)
            return [describe(data), describe(response)]
        } catch {
            return [describe(error)]
        }
    }

    static func cancelledBeforeResume(_ origin: String, _ kind: Kind) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let waiter = Waiter<[String]>()
        let task = kind.task(session, URLRequest(url: URL(string: "\(origin)/bytes/100")!)) { waiter.finish($0) }
        task.cancel()
        return await waiter.value()
    }

    static func cancelledBeforeHead(_ origin: String, _ kind: Kind) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let waiter = Waiter<[String]>()
        // The head never comes (ten minutes): only the cancel ends the task, sent or not yet.
        let task = kind.task(session, URLRequest(url: URL(string: "\(origin)/bytes/100?delay_ms=600000")!)) {
            waiter.finish($0)
        }
        task.resume()
        task.cancel()
        return await waiter.value()
    }

    static func cancelledAfterCompletion(_ origin: String, _ kind: Kind) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let waiter = Waiter<[String]>()
        let task = kind.task(session, URLRequest(url: URL(string: "\(origin)/bytes/300?seed=3")!)) { waiter.finish($0) }
        task.resume()
        let first = await waiter.value()
        task.cancel()
        // The session goes on: the next task of the same kind is answered.
        let next = await run(session, URLRequest(url: URL(string: "\(origin)/bytes/200?seed=4")!), kind)
        return first + ["then"] + next
    }

    static func headTimesOut(_ origin: String, _ kind: Kind) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: URL(string: "\(origin)/bytes/100?delay_ms=600000")!)
        request.timeoutInterval = 1
        return await run(session, request, kind)
    }
}
