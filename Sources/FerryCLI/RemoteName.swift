public import FerryCore
public import Foundation

/// The local name of a download saved under its remote name (`-O`, `--dir`): the last path component
/// of the URL the user gave (never of a redirect's target), else `index.html`; with `-J`, the
/// Content-Disposition filename when the server gives one. Always a plain name by ``SafeFilename``'s
/// rules, never a path, so the file stays in the target directory.
public enum RemoteName {
    /// The name the URL suggests.
    public static func fromURL(_ url: URL) -> String {
        let component = url.path.split(separator: "/").last.map(String.init) ?? ""
        let decoded = component.removingPercentEncoding ?? component
        return SafeFilename.sanitize(decoded) ?? "index.html"
    }

    /// The Content-Disposition filename of an answer, made safe; nil without a usable one.
    public static func fromContentDisposition(_ headers: Headers) -> String? {
        headers["content-disposition"].flatMap(Response.filename(fromContentDisposition:))
    }
}
