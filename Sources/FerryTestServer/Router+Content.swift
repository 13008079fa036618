import FerryCore
import Foundation
import HTTPTypes
import NIOCore

/// A resource the content routes serve: its length, where its bytes come from, its validators.
struct Representation {
    var length: Int64
    var source: BodySource
    var validators: Validators?
    var contentType: String
}

extension Router {
    /// The base of the Last-Modified dates of `/bytes`: 2024-01-01T00:00:00Z, plus an hour per version.
    static let bytesEpoch: Int64 = 1_704_067_200

    /// The largest body `gzip=1` compresses (in memory).
    static let gzipLimit: Int64 = 64 * 1024 * 1024

    /// `GET /bytes/{n}?seed={s}`: n deterministic bytes.
    func bytes() -> ResponsePlan {
        if let refusal = refuseMethod(unless: [.get, .head]) { return refusal }
        guard segments.count == 2, let length = Int64(segments[1]), length >= 0 else {
            return .text(.badRequest, "use /bytes/{n} with n a byte count, e.g. /bytes/1048576?seed=7\n")
        }
        guard let seed = UInt64(query["seed"] ?? "0") else {
            return .text(.badRequest, "seed must be an unsigned 64-bit integer\n")
        }
        if let failure = injectedFailure() { return failure }
        let version = resourceVersion()
        let representation = Representation(
            length: length,
            source: .generated(DeterministicBytes(seed: seed, version: version)),
            validators: Validators(
                etag: "\"bytes-\(length)-\(seed)-v\(version)\"",
                lastModified: Self.bytesEpoch + Int64(version) * 3600
            ),
            contentType: "application/octet-stream"
        )
        return content(representation)
    }

    /// `GET /files/{path}`: a file under the server's root directory.
    func files() -> ResponsePlan {
        if let refusal = refuseMethod(unless: [.get, .head]) { return refusal }
        guard let root = listener.root else {
            return .text(.notFound, "this server has no --root directory to serve files from\n")
        }
        let relative = segments.dropFirst()
        guard !relative.isEmpty, !relative.contains(where: { $0 == ".." || $0 == "." }) else {
            return .text(.badRequest, "use /files/{path} with a path inside the root directory\n")
        }
        guard let file = FileBody(path: root + "/" + relative.joined(separator: "/")) else {
            return .text(.notFound, "no such file: \(relative.joined(separator: "/"))\n")
        }
        if let failure = injectedFailure() { return failure }
        let representation = Representation(
            length: file.size,
            source: .file(file),
            validators: Validators(
                etag: "\"file-\(file.size)-\(file.modified)-\(file.modifiedNanoseconds)\"",
                lastModified: file.modified
            ),
            contentType: "application/octet-stream"
        )
        return content(representation)
    }

    /// `/status/{code}`: that status with a small HTML error page as body.
    func status() -> ResponsePlan {
        guard segments.count == 2, let code = Int(segments[1]), (200...599).contains(code) else {
            return .text(.badRequest, "use /status/{code} with a code from 200 to 599\n")
        }
        if let failure = injectedFailure() { return failure }
        let page = "<html><body><h1>\(code)</h1><p>ferry-testserver error page</p></body></html>\n"
        let representation = Representation(
            length: Int64(page.utf8.count),
            source: .buffer(ByteBuffer(string: page)),
            validators: nil,
            contentType: "text/html; charset=utf-8"
        )
        var plan = content(representation)
        if plan.status == .ok {
            plan.status = HTTPResponse.Status(code: code)
            // 204 and 304 never carry a body (RFC 9110 §15.3.5, §15.4.5).
            if code == 204 || code == 304 {
                plan.omitsBody = true
                plan.range = ByteRange(start: 0, end: 0)
            }
        }
        return plan
    }

    /// `fail=K`: the first K requests with this key get an error; `fail_after=N`: those after the first N.
    func injectedFailure() -> ResponsePlan? {
        if let failAfter = faults.failAfter {
            // `fail_after=N`: the first N served, the rest fail.
            let index = listener.state.nextRequestIndex(key: "fail-after:" + requestKey)
            guard index >= failAfter else { return nil }
            var plan = ResponsePlan.text(HTTPResponse.Status(code: faults.failStatus), "injected failure after \(failAfter)\n")
            plan.faults = faults
            return plan
        }
        guard faults.failCount > 0 else { return nil }
        let index = listener.state.nextRequestIndex(key: "fail:" + requestKey)
        guard index < faults.failCount else { return nil }
        var headers = HTTPFields()
        if faults.retryAfter >= 0 { headers[.retryAfter] = String(faults.retryAfter) }
        var plan = ResponsePlan.text(
            HTTPResponse.Status(code: faults.failStatus),
            "injected failure \(index + 1) of \(faults.failCount)\n",
            headers: headers
        )
        plan.faults = faults
        return plan
    }

    /// `change_after=N`: the version of the resource this request sees.
    func resourceVersion() -> Int {
        guard let changeAfter = faults.changeAfter else { return 0 }
        return listener.state.nextRequestIndex(key: "version:" + requestKey) / changeAfter
    }

    /// The key under which `fail` and `change_after` count: `key=` or the request target.
    var requestKey: String { faults.counterKey(target: request.path) }

    /// Serves a representation: conditionals, Range, gzip, chunked, and the body faults.
    func content(_ representation: Representation) -> ResponsePlan {
        var headers = HTTPFields()
        headers[.contentType] = representation.contentType
        headers[.acceptRanges] = "bytes"
        if let validators = representation.validators {
            headers[.eTag] = validators.etag
            headers[.lastModified] = HTTPDate.format(validators.lastModified)
        }
        let isHead = request.method == .head
        var plan = ResponsePlan(
            status: .ok,
            headers: headers,
            source: representation.source,
            range: ByteRange(start: 0, end: representation.length),
            declaresLength: !faults.chunked,
            omitsBody: isHead,
            faults: faults
        )

        if faults.gzip { return gzipped(representation, plan: plan) }

        let outcome: ConditionalOutcome
        if let validators = representation.validators {
            outcome = ConditionalOutcome(
                ifNoneMatch: request.headerFields[.ifNoneMatch],
                ifModifiedSince: request.headerFields[.ifModifiedSince],
                range: faults.ignoreRange ? nil : request.headerFields[.range],
                ifRange: request.headerFields[.ifRange],
                validators: validators,
                length: representation.length
            )
        } else {
            switch RangeRequest(
                header: faults.ignoreRange ? nil : request.headerFields[.range],
                length: representation.length
            )
            {
            case .whole: outcome = .whole
            case .partial(let range): outcome = .partial(range)
            case .unsatisfiable: outcome = .unsatisfiable
            }
        }
        switch outcome {
        case .whole:
            return plan
        case .notModified:
            plan.status = .notModified
            plan.headers[.contentType] = nil
            plan.range = ByteRange(start: 0, end: 0)
            plan.omitsBody = true
            return plan
        case .unsatisfiable:
            plan.status = .rangeNotSatisfiable
            plan.headers[.contentRange] = "bytes */\(representation.length)"
            plan.range = ByteRange(start: 0, end: 0)
            return plan
        case .partial(let range):
            plan.status = .partialContent
            plan.range = range
            var claimed = range
            if let shift = faults.badContentRangeShift {
                let start = max(0, range.start + shift)
                claimed = ByteRange(start: start, end: start + range.count)
            }
            plan.headers[.contentRange] = claimed.contentRange(total: representation.length)
            return plan
        }
    }

    private func gzipped(_ representation: Representation, plan: ResponsePlan) -> ResponsePlan {
        guard representation.length <= Self.gzipLimit else {
            return .text(.contentTooLarge, "gzip=1 compresses at most \(Self.gzipLimit) bytes\n")
        }
        var raw: [UInt8]
        switch representation.source {
        case .buffer(let buffer): raw = Array(buffer.readableBytesView)
        case .generated(let generator): raw = generator.bytes(offset: 0, count: Int(representation.length))
        case .file(let file):
            raw = [UInt8](repeating: 0, count: Int(representation.length))
            let got = raw.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, $0.count, 0) }
            guard got == raw.count else { return .text(.internalServerError, "could not read the file\n") }
        }
        guard let compressed = try? Gzip.compress(raw) else {
            return .text(.internalServerError, "gzip compression failed\n")
        }
        var plan = plan
        plan.source = .buffer(ByteBuffer(bytes: compressed))
        plan.range = ByteRange(start: 0, end: Int64(compressed.count))
        plan.headers[.contentEncoding] = "gzip"
        plan.headers[.acceptRanges] = nil
        if let etag = representation.validators?.etag { plan.headers[.eTag] = String(etag.dropLast()) + "-gzip\"" }
        return plan
    }
}
