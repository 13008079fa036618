// FerryStore holds the daemon's durable state on SQLite (GRDB, WAL): sessions, tasks, segments, the
// event journal and launch registrations, with versioned migrations. It lands with the issue
// "Background sessions: ferryd runs transfers durably out of process" (docs/ARCHITECTURE.md).
import FerryCore

/// Facts about the store module itself.
public enum FerryStoreInfo {
    /// The Ferry version this store was built as.
    public static var version: String { FerryVersion.current }
}
