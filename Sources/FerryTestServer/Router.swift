import FerryCore
import Foundation
import HTTPTypes
import NIOCore

/// Decides the response to a request. One function per route family, in the `Router+*.swift` files;
/// docs/TESTSERVER.md lists the routes.
struct Router {
    let listener: ListenerContext
    let request: HTTPRequest
    let query: Query
    let faults: Faults
    let protocolName: String

    init(listener: ListenerContext, request: HTTPRequest, protocolName: String) {
        self.listener = listener
        self.request = request
        self.query = Query(target: request.path ?? "/")
        var faults = Faults(query: query, headers: request.headerFields)
        if let onlyFirst = faults.onlyFirst {
            let key = "only:" + faults.counterKey(target: request.path)
            if listener.state.nextRequestIndex(key: key) >= onlyFirst { faults = faults.withoutBodyFaults }
        }
        self.faults = faults
        self.protocolName = protocolName
    }

    /// The path segments after the leading slash.
    var segments: [Substring] { query.path.split(separator: "/", omittingEmptySubsequences: true) }

    /// The sink for this request's body, chosen from the head.
    func bodySink() -> any RequestBodySink {
        if segments.first == "multipart" {
            if let contentType = request.headerFields[.contentType],
                contentType.lowercased().hasPrefix("multipart/form-data"),
                let boundary = MultipartSink.dispositionParameters(contentType)["boundary"], !boundary.isEmpty
            {
                return MultipartSink(boundary: boundary)
            }
        }
        let keep =
            (segments.first == "upload" && query["keep"] != nil)
            || (segments.first == "tus" && request.method == .patch)
        return HashingSink(keep: keep)
    }

    /// The response to the request, once its body has been consumed.
    func plan(body: BodySummary) -> ResponsePlan {
        var plan = route(body: body)
        decorate(&plan)
        return plan
    }

    private func route(body: BodySummary) -> ResponsePlan {
        let first = segments.first.map(String.init) ?? ""
        switch first {
        case "bytes": return bytes()
        case "files": return files()
        case "redirect": return redirect()
        case "redirect-loop": return redirectLoop()
        case "status": return status()
        case "echo": return echo(body: body)
        case "upload": return upload(body: body)
        case "uploads": return storedUpload()
        case "tus": return tus(body: body)
        case "multipart": return multipart(body: body)
        case "cookies": return cookies()
        case "basic-auth": return basicAuth()
        case "digest-auth": return digestAuth()
        case "counters": return json(.ok, listener.state.counters)
        case "info": return info()
        case "": return .text(.ok, "ferry-testserver: see docs/TESTSERVER.md for the routes and fault knobs\n")
        default: return .text(.notFound, "no route for \(query.path)\n")
        }
    }

    /// Adds the headers that every response may carry: cookies, caching, Vary, Content-Disposition.
    private func decorate(_ plan: inout ResponsePlan) {
        for cookie in faults.setCookies { plan.headers.append(HTTPField(name: .setCookie, value: cookie)) }
        if let cacheControl = faults.cacheControl { plan.headers[.cacheControl] = cacheControl }
        if let expiresIn = faults.expiresIn {
            plan.headers[.expires] = HTTPDate.format(Int64(Date().timeIntervalSince1970) + expiresIn)
        }
        if let vary = faults.vary { plan.headers[.vary] = vary }
        if let disposition = faults.contentDisposition { plan.headers[.contentDisposition] = disposition }
        for line in faults.extraHeaders {
            let colon = line.firstIndex(of: ":")!
            let value = String(line[line.index(after: colon)...].drop { $0 == " " })
            if let name = HTTPField.Name(String(line[..<colon])) { plan.headers.append(HTTPField(name: name, value: value)) }
        }
        if plan.headers[.date] == nil { plan.headers[.date] = HTTPDate.format(Int64(Date().timeIntervalSince1970)) }
        if plan.headers[.server] == nil { plan.headers[.server] = "ferry-testserver" }
    }

    /// A JSON response (sorted keys, so tests and people read stable output).
    /// `value` as the JSON the server answers with (keys sorted).
    static func jsonData<Value: Encodable>(_ value: Value) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(value)) ?? Data("{}".utf8)
    }

    func json<Value: Encodable>(
        _ status: HTTPResponse.Status,
        _ value: Value,
        headers: HTTPFields = [:]
    ) -> ResponsePlan {
        let data = Self.jsonData(value)
        var headers = headers
        headers[.contentType] = "application/json"
        var plan = ResponsePlan(status: status, headers: headers, buffer: ByteBuffer(bytes: data))
        plan.faults = faults
        return plan
    }

    /// The request's method must be one of `allowed`; else a 405 with `Allow`.
    func refuseMethod(unless allowed: [HTTPRequest.Method]) -> ResponsePlan? {
        guard !allowed.contains(request.method) else { return nil }
        var headers = HTTPFields()
        headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
        return .text(.methodNotAllowed, "\(request.method.rawValue) is not allowed here\n", headers: headers)
    }

    private func info() -> ResponsePlan {
        var origins: [String: String] = [:]
        for kind in ListenerKind.allCases { origins[kind.rawValue] = listener.origins[kind] }
        struct Info: Encodable {
            var listener: String
            var origins: [String: String]
            var `protocol`: String
        }
        return json(.ok, Info(listener: listener.kind.rawValue, origins: origins, protocol: protocolName))
    }
}
