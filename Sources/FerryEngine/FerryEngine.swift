// FerryEngine performs transfers: the HTTP transport adapter over AsyncHTTPClient, file sinks,
// Range/If-Range resume, retries, segmented downloads, resumable uploads, cache, cookies, auth and
// metrics. It lands with the issue "Engine and in-process sessions" (docs/ARCHITECTURE.md).
import FerryCore

/// Facts about the engine module itself.
public enum FerryEngineInfo {
    /// The Ferry version this engine was built as.
    public static var version: String { FerryVersion.current }
}
