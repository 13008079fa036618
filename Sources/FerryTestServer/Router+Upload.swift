import Foundation
import HTTPTypes
import NIOCore

extension Router {
    /// What `/upload`, `/echo` and `/multipart` report.
    struct UploadReport: Encodable {
        var method: String
        var length: Int64
        var sha256: String
        var contentType: String?
        var kept: String?
        var parts: [MultipartPartSummary]?
    }

    /// `/echo` (any method): the request as the server saw it.
    func echo(body: BodySummary) -> ResponsePlan {
        struct Echo: Encodable {
            var method: String
            var path: String
            var query: [String: [String]]
            var headers: [[String]]
            var bodyLength: Int64
            var bodySHA256: String
            var `protocol`: String
            var listener: String
        }
        var queryItems: [String: [String]] = [:]
        for item in query.items { queryItems[item.name, default: []].append(item.value) }
        if let failure = injectedFailure() { return failure }
        return json(
            .ok,
            Echo(
                method: request.method.rawValue,
                path: query.path,
                query: queryItems,
                headers: request.headerFields.map { [$0.name.canonicalName, $0.value] },
                bodyLength: body.length,
                bodySHA256: body.sha256,
                protocol: protocolName,
                listener: listener.kind.rawValue
            )
        )
    }

    /// `/upload` (POST, PUT, PATCH): consumes the body; `keep=KEY` keeps it for `GET /uploads/KEY`.
    func upload(body: BodySummary) -> ResponsePlan {
        if let refusal = refuseMethod(unless: [.post, .put, .patch]) { return refusal }
        if let failure = injectedFailure() { return failure }
        let key = query["keep"]
        if let key {
            guard !body.keepOverflow, let bytes = body.kept else {
                return .text(.contentTooLarge, "keep=\(key): at most \(HashingSink.keepLimit) bytes are kept\n")
            }
            listener.state.store(
                StoredUpload(
                    method: request.method.rawValue,
                    contentType: request.headerFields[.contentType],
                    body: bytes
                ),
                key: key
            )
        }
        return json(
            request.method == .put ? .created : .ok,
            UploadReport(
                method: request.method.rawValue,
                length: body.length,
                sha256: body.sha256,
                contentType: request.headerFields[.contentType],
                kept: key
            )
        )
    }

    /// `GET /uploads/{key}`: the bytes kept by `/upload?keep=KEY`.
    func storedUpload() -> ResponsePlan {
        if let refusal = refuseMethod(unless: [.get, .head]) { return refusal }
        guard segments.count == 2, let stored = listener.state.upload(key: String(segments[1])) else {
            return .text(.notFound, "nothing was kept under that key\n")
        }
        var headers = HTTPFields()
        headers[.contentType] = stored.contentType ?? "application/octet-stream"
        var plan = ResponsePlan(status: .ok, headers: headers, buffer: ByteBuffer(bytes: stored.body))
        plan.omitsBody = request.method == .head
        return plan
    }

    /// `POST /multipart`: parses multipart/form-data and reports each part (`?keep=KEY` keeps the report).
    func multipart(body: BodySummary) -> ResponsePlan {
        if let refusal = refuseMethod(unless: [.post, .put]) { return refusal }
        guard let contentType = request.headerFields[.contentType],
            contentType.lowercased().hasPrefix("multipart/form-data")
        else {
            return .text(.unsupportedMediaType, "send multipart/form-data with a boundary parameter\n")
        }
        if let error = body.parseError { return .text(.badRequest, error + "\n") }
        let report = UploadReport(
            method: request.method.rawValue,
            length: body.length,
            sha256: body.sha256,
            contentType: contentType,
            parts: body.parts
        )
        // ?keep=KEY: the report is kept for GET /uploads/KEY (a background upload's client sees no body).
        if let key = query["keep"] {
            listener.state.store(
                StoredUpload(method: request.method.rawValue, contentType: "application/json", body: Array(Self.jsonData(report))),
                key: key
            )
        }
        return json(.ok, report)
    }
}
