public import Foundation

/// The Netscape cookie-file format that curl (`-b`, `-c`) and wget (`--load-cookies`,
/// `--save-cookies`) read and write: one cookie a line, seven tab-separated fields — domain, whether
/// subdomains match, path, secure, expiry (seconds since 1970, 0 for a session cookie), name, value. A
/// leading `.` on the domain marks a domain cookie; `#HttpOnly_` before it an HttpOnly one; other `#`
/// lines are comments.
public enum NetscapeCookieFile {
    /// The first line curl writes.
    public static let header = "# Netscape HTTP Cookie File"

    /// The cookies a file holds (lines that are not cookies are skipped).
    /// - Parameter now: their creation time (the file keeps none); expired cookies are left out.
    public static func parse(_ text: String, now: Date) -> [Cookie] {
        var cookies: [Cookie] = []
        for raw in text.split(whereSeparator: \.isNewline) {
            var line = Substring(raw)
            var httpOnly = false
            if line.hasPrefix("#HttpOnly_") {
                httpOnly = true
                line = line.dropFirst("#HttpOnly_".count)
            } else if line.hasPrefix("#") || line.allSatisfy(\.isWhitespace) {
                continue
            }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count >= 7, let seconds = Int64(fields[4]) else { continue }
            var domain = String(fields[0]).lowercased()
            let domainCookie = fields[1].uppercased() == "TRUE" || domain.hasPrefix(".")
            if domain.hasPrefix(".") { domain.removeFirst() }
            guard !domain.isEmpty, !fields[5].isEmpty else { continue }
            let expires = seconds == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(seconds))
            if let expires, expires <= now { continue }
            var cookie = Cookie(
                name: String(fields[5]),
                value: fields[6...].joined(separator: "\t"),
                domain: domain,
                isHostOnly: !domainCookie,
                path: fields[2].isEmpty ? "/" : String(fields[2]),
                expires: expires,
                isSecure: fields[3].uppercased() == "TRUE",
                isHTTPOnly: httpOnly,
                created: now
            )
            cookie.created = now.addingTimeInterval(Double(cookies.count) * 1e-6)
            cookies.append(cookie)
        }
        return cookies
    }

    /// `cookies` in the format, with curl's header lines.
    public static func serialize(_ cookies: [Cookie]) -> String {
        var text = header + "\n# Written by ferry; curl and wget read this file.\n\n"
        for cookie in cookies {
            let domain = (cookie.isHTTPOnly ? "#HttpOnly_" : "") + (cookie.isHostOnly ? "" : ".") + cookie.domain
            let fields = [
                domain,
                cookie.isHostOnly ? "FALSE" : "TRUE",
                cookie.path,
                cookie.isSecure ? "TRUE" : "FALSE",
                String(cookie.expires.map { Int64($0.timeIntervalSince1970) } ?? 0),
                cookie.name,
                cookie.value,
            ]
            text += fields.joined(separator: "\t") + "\n"
        }
        return text
    }
}
