import FerryCore
import Foundation

/// Why a redirect was the final answer, in a download's failure (issue 41: "the server answered 302;
/// nothing was saved" said nothing of why ferry stopped there).
enum UnfollowedRedirect {
    /// What to add after "the server answered `status`" for a redirect ferry did not follow: a
    /// `Location` to another scheme (`file:`, `ftp:`, `data:`: ferry fetches http and https only), or
    /// none at all; empty for any other status.
    static func explanation(status: Int, headers: Headers, base: URL) -> String {
        guard Redirect.statuses.contains(status) else { return "" }
        guard let location = headers["location"], !location.isEmpty else {
            return ", a redirect without a Location to follow"
        }
        let target = URL(string: location, relativeTo: base)?.absoluteURL
        if let target, Redirect.isHTTP(target) { return "" }
        let shown = String(location.prefix(200))
        if let scheme = target?.scheme?.lowercased() {
            return ", a redirect to \(shown), which ferry does not follow (\(scheme): is not fetched, only http and https)"
        }
        return ", a redirect to \(shown), which is not a URL ferry can follow"
    }
}
