import Crypto
import Foundation
import HTTPTypes
import NIOCore

/// `/tus/`: the tus 1.0 resumable upload protocol (https://tus.io/protocols/resumable-upload) with the
/// creation, concatenation and termination extensions — the protocol Ferry's parallel chunked uploads
/// speak (each chunk a partial upload, sent at once over several connections, then concatenated).
///
/// `POST /tus/` with `Upload-Length` (and `Upload-Concat: partial`) creates an upload; `PATCH /tus/ID`
/// with `Upload-Offset` appends; `HEAD` tells the offset; `POST /tus/` with
/// `Upload-Concat: final;/tus/A /tus/B` assembles finished partial uploads (kept for
/// `GET /uploads/KEY` with `?keep=KEY`); `GET /tus/ID` returns the bytes; `DELETE` ends an upload.
extension Router {
    static let tusVersion = "1.0.0"
    static let tusMaximumSize: Int64 = 256 << 20

    func tus(body: BodySummary) -> ResponsePlan {
        var plan = tusRoute(body: body)
        plan.headers[HTTPField.Name("Tus-Resumable")!] = Self.tusVersion
        return plan
    }

    private func tusRoute(body: BodySummary) -> ResponsePlan {
        if request.method == .options {
            var headers = HTTPFields()
            headers[HTTPField.Name("Tus-Version")!] = Self.tusVersion
            headers[HTTPField.Name("Tus-Extension")!] = "creation,concatenation,termination"
            headers[HTTPField.Name("Tus-Max-Size")!] = String(Self.tusMaximumSize)
            return ResponsePlan(status: .noContent, headers: headers, buffer: ByteBuffer())
        }
        guard request.headerFields[HTTPField.Name("Tus-Resumable")!] == Self.tusVersion else {
            var headers = HTTPFields()
            headers[HTTPField.Name("Tus-Version")!] = Self.tusVersion
            return .text(.preconditionFailed, "send Tus-Resumable: \(Self.tusVersion)\n", headers: headers)
        }
        if let failure = injectedFailure() { return failure }
        if segments.count == 1 {
            guard request.method == .post else {
                return refuseMethod(unless: [.post, .options]) ?? .text(.badRequest, "POST to create\n")
            }
            return tusCreate()
        }
        guard segments.count == 2 else { return .text(.notFound, "no tus upload at \(query.path)\n") }
        let id = String(segments[1])
        switch request.method {
        case .head: return tusOffset(id)
        case .patch: return tusAppend(id, body: body)
        case .get: return tusBytes(id)
        case .delete:
            let removed = listener.state.withTusUploads { uploads, _ in uploads.removeValue(forKey: id) != nil }
            return removed
                ? ResponsePlan(status: .noContent, buffer: ByteBuffer()) : .text(.notFound, "no upload \(id)\n")
        default:
            return refuseMethod(unless: [.head, .patch, .get, .delete]) ?? .text(.badRequest, "\n")
        }
    }

    /// The upload's URL; it carries the creating request's knobs (`read_throttle`, `fail` …, not `keep`),
    /// so they apply to the upload's own requests too.
    private func tusLocation(_ id: String) -> String {
        let knobs = query.items.filter { $0.name != "keep" }.map { item in
            let allowed = CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+"))
            let value = item.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
            return item.name + "=" + value
        }
        let suffix = knobs.isEmpty ? "" : "?" + knobs.joined(separator: "&")
        return (listener.origins[listener.kind] ?? "") + "/tus/" + id + suffix
    }

    private func tusCreate() -> ResponsePlan {
        let concat = request.headerFields[HTTPField.Name("Upload-Concat")!]
        if let concat, concat.hasPrefix("final;") {
            return tusConcatenate(concat.dropFirst("final;".count).split(separator: " ").map(String.init))
        }
        guard let text = request.headerFields[HTTPField.Name("Upload-Length")!], let length = Int64(text), length >= 0
        else { return .text(.badRequest, "Upload-Length is required (deferred lengths are not supported)\n") }
        guard length <= Self.tusMaximumSize else {
            return .text(.contentTooLarge, "at most \(Self.tusMaximumSize) bytes\n")
        }
        let id = listener.state.withTusUploads { uploads, next in
            let id = next()
            uploads[id] = TusUpload(length: length, isPartial: concat == "partial")
            return id
        }
        var headers = HTTPFields()
        headers[.location] = tusLocation(id)
        return ResponsePlan(status: .created, headers: headers, buffer: ByteBuffer())
    }

    private func tusConcatenate(_ parts: [String]) -> ResponsePlan {
        // Each part is a URL or a path; its last path segment is the upload's id.
        let ids = parts.map { part -> String in
            let path = URL(string: part)?.path ?? String(part.prefix { $0 != "?" })
            return String(path.split(separator: "/").last ?? "")
        }
        let outcome = listener.state.withTusUploads { uploads, next -> Result<(String, [UInt8]), TusRefusal> in
            var assembled: [UInt8] = []
            for id in ids {
                guard let upload = uploads[id], upload.isPartial else { return .failure(.unknown(id)) }
                guard upload.isComplete else { return .failure(.incomplete(id)) }
                assembled += upload.bytes
            }
            let id = next()
            uploads[id] = TusUpload(length: Int64(assembled.count), bytes: assembled, isPartial: false)
            for part in ids { uploads[part] = nil }
            return .success((id, assembled))
        }
        switch outcome {
        case .failure(.unknown(let id)):
            return .text(.badRequest, "\(id) is not a partial upload of this server\n")
        case .failure(.incomplete(let id)):
            return .text(.badRequest, "the partial upload \(id) is not complete\n")
        case .success(let (id, bytes)):
            if let key = query["keep"] {
                listener.state.store(StoredUpload(method: "POST", contentType: nil, body: bytes), key: key)
            }
            var headers = HTTPFields()
            headers[.location] = tusLocation(id)
            return json(
                .created,
                UploadReport(method: "POST", length: Int64(bytes.count), sha256: SHA256.hash(data: bytes).hexString),
                headers: headers
            )
        }
    }

    private enum TusRefusal: Error {
        case unknown(String)
        case incomplete(String)
    }

    private func tusOffset(_ id: String) -> ResponsePlan {
        guard let upload = listener.state.withTusUploads({ uploads, _ in uploads[id] }) else {
            return .text(.notFound, "no upload \(id)\n")
        }
        var headers = HTTPFields()
        headers[HTTPField.Name("Upload-Offset")!] = String(upload.offset)
        headers[HTTPField.Name("Upload-Length")!] = String(upload.length)
        headers[.cacheControl] = "no-store"
        if upload.isPartial { headers[HTTPField.Name("Upload-Concat")!] = "partial" }
        return ResponsePlan(status: .ok, headers: headers, buffer: ByteBuffer())
    }

    private func tusAppend(_ id: String, body: BodySummary) -> ResponsePlan {
        guard request.headerFields[.contentType] == "application/offset+octet-stream" else {
            return .text(.unsupportedMediaType, "PATCH needs Content-Type: application/offset+octet-stream\n")
        }
        guard let text = request.headerFields[HTTPField.Name("Upload-Offset")!], let offset = Int64(text) else {
            return .text(.badRequest, "Upload-Offset is required\n")
        }
        guard let bytes = body.kept, !body.keepOverflow else { return .text(.contentTooLarge, "too large\n") }
        let outcome = listener.state.withTusUploads { uploads, _ -> Result<Int64, TusAppendRefusal> in
            guard var upload = uploads[id] else { return .failure(.notFound) }
            guard upload.offset == offset else { return .failure(.conflict(upload.offset)) }
            guard upload.offset + Int64(bytes.count) <= upload.length else { return .failure(.tooLong) }
            upload.bytes += bytes
            uploads[id] = upload
            return .success(upload.offset)
        }
        var headers = HTTPFields()
        switch outcome {
        case .success(let offset):
            headers[HTTPField.Name("Upload-Offset")!] = String(offset)
            return ResponsePlan(status: .noContent, headers: headers, buffer: ByteBuffer())
        case .failure(.notFound):
            return .text(.notFound, "no upload \(id)\n")
        case .failure(.conflict(let current)):
            headers[HTTPField.Name("Upload-Offset")!] = String(current)
            return .text(.conflict, "the upload is at \(current), not \(offset)\n", headers: headers)
        case .failure(.tooLong):
            return .text(.badRequest, "the body goes past Upload-Length\n")
        }
    }

    private enum TusAppendRefusal: Error {
        case notFound
        case conflict(Int64)
        case tooLong
    }

    private func tusBytes(_ id: String) -> ResponsePlan {
        guard let upload = listener.state.withTusUploads({ uploads, _ in uploads[id] }) else {
            return .text(.notFound, "no upload \(id)\n")
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        return ResponsePlan(status: .ok, headers: headers, buffer: ByteBuffer(bytes: upload.bytes))
    }
}
