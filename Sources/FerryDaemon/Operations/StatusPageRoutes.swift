import FerryCore
import FerryStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

/// The status page's routes: the page itself (with the tasks as they are embedded, drawn as the
/// document loads), the tasks as JSON, a server-sent event stream of them, and the pause,
/// resume and cancel buttons' actions. Every asset is served from here; the page loads nothing else.
struct StatusPageRoutes: Sendable {
    let store: FerryStore
    let scheduler: Scheduler
    /// Seconds between updates on the event stream.
    var interval = 1.0

    /// Secrets in the tasks shown (credentials, query tokens) are redacted.
    var redaction = Redaction()
    /// The most tasks one snapshot carries: each client gets a page of them every second, so with tens
    /// of thousands of tasks a whole listing per client grew ferryd by 500 MB and took 27 s to draw.
    static let pageSize = 500

    /// A snapshot of what the page shows.
    struct Snapshot: Codable, Sendable {
        /// At most ``StatusPageRoutes/pageSize`` tasks: those not finished first, then the most recent
        /// finished ones.
        var tasks: [BackgroundTaskInfo]
        var backlog: [String: Int]
        /// How many tasks there are in all (``tasks`` may show fewer).
        var total: Int?
    }

    func snapshot() async throws -> Snapshot {
        let backlog = Dictionary(try store.eventBacklog().map { ($0.session, $0.count) }, uniquingKeysWith: +)
        // A page read from the store, not every task (FerryStore.page says why).
        let (tasks, total) = try await scheduler.page(limit: Self.pageSize)
        return Snapshot(tasks: tasks.map(redaction.task), backlog: backlog, total: total)
    }

    func router(token: String) -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: TokenMiddleware(token: token))
        router.get("/") { _, _ -> Response in
            let page = StatusPageHTML.render(try await self.snapshot())
            var headers = HTTPFields()
            headers[.contentType] = "text/html; charset=utf-8"
            headers[.cacheControl] = "no-store"
            headers[HTTPField.Name("Content-Security-Policy")!] =
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:"
            headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
            headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page)))
        }
        router.get("/api/tasks") { _, _ -> Response in
            try Self.json(try await self.snapshot())
        }
        router.get("/api/events") { _, _ -> Response in
            let routes = self
            let body = ResponseBody { writer in
                // Until the page is stopped: a graceful shutdown ends the stream, which would otherwise
                // hold the server's shutdown for as long as a browser keeps the page open.
                while !Task.isCancelled, !Task.isShuttingDownGracefully {
                    let data = try JSONEncoder().encode(try await routes.snapshot())
                    try await writer.write(ByteBuffer(string: "data: \(String(decoding: data, as: UTF8.self))\n\n"))
                    try? await cancelWhenGracefulShutdown {
                        try await Task.sleep(for: .milliseconds(Int64(routes.interval * 1000)))
                    }
                }
                try await writer.finish(nil)
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: body)
        }
        router.post("/api/sessions/:session/tasks/:task/:action") { _, context -> Response in
            guard let session = context.parameters.get("session"),
                let identifier = context.parameters.get("task", as: Int.self),
                let action = context.parameters.get("action")
            else { throw HTTPError(.badRequest, message: "a session, a task number and an action") }
            let key = TaskKey(session: session, identifier: identifier)
            guard (try? store.task(session: session, identifier: identifier)) != nil else {
                throw HTTPError(.notFound, message: "no task \(identifier) in session '\(session)'")
            }
            switch action {
            case "pause": _ = try await scheduler.suspend(key)
            case "resume": _ = try await scheduler.resume(key, update: nil)
            case "cancel": _ = try await scheduler.cancel(key, produceResumeData: false, reason: "cancelled on the status page")
            default: throw HTTPError(.notFound, message: "the actions are pause, resume and cancel")
            }
            return try Self.json(try await self.snapshot())
        }
        return router
    }

    private static func json(_ value: some Encodable) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(data: try JSONEncoder().encode(value))))
    }
}

/// Lets through only requests that carry the page's token — in the `token` query parameter or the
/// `X-Ferry-Token` header — and name 127.0.0.1 as their host (a page elsewhere that resolves its own
/// name to 127.0.0.1 gets nothing); the others get 403 Forbidden.
struct TokenMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let offered = request.headers[HTTPField.Name("X-Ferry-Token")!] ?? request.uri.queryParameters.get("token")
        let host = request.head.authority ?? ""
        guard let offered, Self.equal(offered, token), host.hasPrefix("127.0.0.1:") || host == "127.0.0.1" else {
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; charset=utf-8"
            return Response(
                status: .forbidden,
                headers: headers,
                body: .init(byteBuffer: ByteBuffer(string: "forbidden: open the address `ferry ui` printed, token included\n"))
            )
        }
        return try await next(request, context)
    }

    /// Compares in time that does not depend on where the strings differ.
    static func equal(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
