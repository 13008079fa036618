// FerryDaemon is the daemon as a library: a Service, the scheduler, the control API over a unix socket,
// event delivery and client launches. It lands with the issue "Background sessions: ferryd runs
// transfers durably out of process" (docs/ARCHITECTURE.md).
import FerryCore
import FerryEngine
import FerryStore

/// Facts about the daemon module itself.
public enum FerryDaemonInfo {
    /// The Ferry version this daemon was built as.
    public static var version: String { FerryVersion.current }
}
