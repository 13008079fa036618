public import FerryCore
public import Foundation
import Synchronization

/// Credentials by protection space (URLCredentialStorage): the one set for a space answers its server's
/// challenge before the delegate is asked. ``Persistence/forSession`` keeps it in memory;
/// ``Persistence/permanent`` in a 0600 file in the user's data directory, shared by processes, for a
/// store made with a file (``shared``).
public final class CredentialStore: Sendable {
    /// How long a credential is kept (URLCredential.Persistence).
    public enum Persistence: Sendable {
        /// Not kept.
        case none
        /// As long as the store.
        case forSession
        /// In the store's file, across processes (in memory for a store without one).
        case permanent
    }

    struct Entry: Codable, Sendable {
        var space: ProtectionSpace
        var credential: Credential
    }

    /// The store default sessions share: permanent credentials in `$XDG_DATA_HOME/ferry/credentials.json`.
    public static let shared: CredentialStore = {
        let environment = ProcessInfo.processInfo.environment
        guard let cookies = CookieStore.defaultFile(environment) else { return CredentialStore() }
        return CredentialStore(file: (cookies as NSString).deletingLastPathComponent + "/credentials.json")
    }()

    private let session = Mutex<[ProtectionSpace: Credential]>([:])
    private let file: LockedJSONFile<Entry>?
    /// The file's entries as last read, with the stamp of the version read: a lookup (every request
    /// through a proxy given without credentials asks) costs a `stat`, not a read and a decode.
    private let permanent = Mutex<(stamp: LockedJSONFile<Entry>.Stamp?, entries: [Entry])>((nil, []))

    /// A store in memory.
    public init() {
        file = nil
    }

    /// A store whose permanent credentials live in `file`.
    public init(file: String) {
        self.file = LockedJSONFile(path: file)
    }

    /// Sets the credential for `space`.
    public func set(_ credential: Credential, for space: ProtectionSpace, persistence: Persistence) {
        switch persistence {
        case .none:
            return
        case .forSession:
            session.withLock { $0[space] = credential }
        case .permanent:
            guard let file else {
                session.withLock { $0[space] = credential }
                return
            }
            try? file.update({ entries, _ in
                entries.filter { $0.space != space } + [Entry(space: space, credential: credential)]
            }, written: { _ in })
        }
    }

    /// Removes the credential for `space`, wherever it is kept.
    public func remove(for space: ProtectionSpace) {
        session.withLock { $0[space] = nil }
        try? file?.update({ entries, _ in entries.filter { $0.space != space } }, written: { _ in })
    }

    /// Removes every credential, the session's and the file's (URLSession's `reset`).
    public func removeAll() {
        session.withLock { $0.removeAll() }
        try? file?.update({ _, _ in [] }, written: { _ in })
    }

    /// The credential for `space`: a session one first, else a permanent one; a space with no realm
    /// matches a stored one for the same host, port and scheme.
    public func credential(for space: ProtectionSpace) -> Credential? {
        let entries = session.withLock { $0.map { Entry(space: $0.key, credential: $0.value) } } + permanentEntries()
        if let exact = entries.first(where: { $0.space == space }) { return exact.credential }
        return entries.first { entry in
            entry.space.host == space.host && entry.space.port == space.port && entry.space.scheme == space.scheme
                && entry.space.isProxy == space.isProxy && (entry.space.realm == nil || space.realm == nil)
        }?.credential
    }

    /// Every stored credential with its space: the session's, then the file's (FerryFoundationNetworking's
    /// `URLCredentialStorage.allCredentials`).
    public var all: [(space: ProtectionSpace, credential: Credential)] {
        let sessionEntries = session.withLock { $0.map { (space: $0.key, credential: $0.value) } }
        let fileEntries = permanentEntries().filter { entry in !sessionEntries.contains { $0.space == entry.space } }
        return sessionEntries + fileEntries.map { (space: $0.space, credential: $0.credential) }
    }

    /// The file's entries, read again only when the file changed since the last read.
    private func permanentEntries() -> [Entry] {
        guard let file, let stamp = file.stamp() else { return [] }
        if let cached = permanent.withLock({ $0.stamp == stamp ? $0.entries : nil }) { return cached }
        let entries = (try? file.read()) ?? []
        permanent.withLock { $0 = (stamp, entries) }
        return entries
    }
}
