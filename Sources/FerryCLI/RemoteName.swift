public import FerryCore
public import Foundation

/// The local name of a download saved under its remote name (`-O`, `--dir`): from Content-Disposition
/// when the server gives one, else the URL's last path component, else `index.html` — always a plain
/// name, never a path, so the file stays in the target directory.
public enum RemoteName {
    /// The name the URL suggests (before any response).
    public static func fromURL(_ url: URL) -> String {
        let component = url.path.split(separator: "/").last.map(String.init) ?? ""
        let decoded = component.removingPercentEncoding ?? component
        return Response.sanitizedFilename(decoded) ?? "index.html"
    }

    /// The name a response suggests (Content-Disposition first).
    public static func fromResponse(url: URL, headers: Headers) -> String {
        guard headers["content-disposition"] != nil else { return fromURL(url) }
        return Response(url: url, statusCode: 200, headers: headers).suggestedFilename
    }
}
