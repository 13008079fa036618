import HTTPTypes

extension Router {
    /// `/redirect/{n}?code=302&mode=relative|path|absolute|cross&to=/echo`: n redirects (n ≥ 1), the last
    /// one to `to`.
    ///
    /// Each other hop's `Location` is `/redirect/{n-1}` with the same query, written as:
    /// `relative` (default) a relative reference (`2?code=302`), `path` an absolute path, `absolute` an
    /// absolute URL on this listener's origin, `cross` an absolute URL on the other plain listener
    /// (another origin; the TLS and resumable listeners cross to the main one).
    func redirect() -> ResponsePlan {
        guard segments.count == 2, let hops = Int(segments[1]), hops >= 1 else {
            return .text(.badRequest, "use /redirect/{n} with n ≥ 1 the number of redirects\n")
        }
        guard let status = redirectStatus() else {
            return .text(.badRequest, "code must be one of 301, 302, 303, 307, 308\n")
        }
        if let failure = injectedFailure() { return failure }
        let queryString =
            (request.path ?? "").split(separator: "?", maxSplits: 1).dropFirst().first.map { "?\($0)" } ?? ""
        let mode = query["mode"] ?? "relative"
        let location: String
        if hops == 1 {
            let target = query["to"] ?? "/echo"
            switch mode {
            case "absolute": location = (listener.origins[listener.kind] ?? "") + target
            case "cross": location = (listener.origins[crossOrigin] ?? "") + target
            default: location = target
            }
        } else {
            let next = "/redirect/\(hops - 1)\(queryString)"
            switch mode {
            case "relative": location = "\(hops - 1)\(queryString)"
            case "path": location = next
            case "absolute": location = (listener.origins[listener.kind] ?? "") + next
            case "cross": location = (listener.origins[crossOrigin] ?? "") + next
            default: return .text(.badRequest, "mode must be relative, path, absolute or cross\n")
            }
        }
        var headers = HTTPFields()
        headers[.location] = location
        var plan = ResponsePlan.text(status, "redirecting to \(location)\n", headers: headers)
        plan.faults = faults
        return plan
    }

    /// `/redirect-loop?code=302`: redirects to itself, forever.
    func redirectLoop() -> ResponsePlan {
        guard let status = redirectStatus() else {
            return .text(.badRequest, "code must be one of 301, 302, 303, 307, 308\n")
        }
        var headers = HTTPFields()
        headers[.location] = request.path ?? "/redirect-loop"
        return .text(status, "redirecting to myself\n", headers: headers)
    }

    private func redirectStatus() -> HTTPResponse.Status? {
        let code = Int(query["code"] ?? "302") ?? 0
        return [301, 302, 303, 307, 308].contains(code) ? HTTPResponse.Status(code: code) : nil
    }

    private var crossOrigin: ListenerKind {
        listener.kind == .alternate ? .main : .alternate
    }
}
