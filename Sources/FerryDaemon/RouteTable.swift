import HTTPTypes
import Hummingbird

/// Registers the control API's routes and remembers which methods each path answers, so that every
/// other method on a known path gets 405 Method Not Allowed with an Allow header (RFC 9110 §15.5.6)
/// instead of the router's 404, which would say the path does not exist.
struct RouteTable {

    /// The methods a client may send: those of RFC 9110, PATCH, and QUERY (an IETF draft).
    static let knownMethods: [HTTPRequest.Method] = [
        .get, .head, .post, .put, .delete, .connect, .options, .trace, .patch, HTTPRequest.Method("QUERY")!,
    ]

    private let group: RouterGroup<ControlContext>
    /// Paths in registration order, with the methods each answers.
    private var methods: [(path: String, allowed: [HTTPRequest.Method])] = []

    init(group: RouterGroup<ControlContext>) {
        self.group = group
    }

    mutating func on<Output: ResponseGenerator>(
        _ path: String,
        _ method: HTTPRequest.Method,
        _ handler: @escaping @Sendable (Request, ControlContext) async throws -> Output
    ) {
        group.on(RouterPath(path), method: method, use: handler)
        if let index = methods.firstIndex(where: { $0.path == path }) {
            methods[index].allowed.append(method)
        } else {
            methods.append((path, [method]))
        }
    }

    /// Answers every other known method on the registered paths with `refusal(allowed)`.
    func refuseOtherMethods(_ refusal: @escaping @Sendable ([HTTPRequest.Method]) -> ControlError) {
        for (path, allowed) in methods {
            for method in Self.knownMethods where !allowed.contains(method) {
                group.on(RouterPath(path), method: method) { _, _ -> Response in throw refusal(allowed) }
            }
        }
    }
}
