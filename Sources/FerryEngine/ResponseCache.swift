import Crypto
import NIOPosix
public import FerryCore
public import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The HTTP cache of a session (URLCache's role): stored responses in memory and on disk, each part
/// within its capacity, the least recently used evicted first. ``SessionTransport`` consults it under
/// RFC 9111's rules (``HTTPCacheRules``); this type only keeps entries.
///
/// On disk each URL has one file (named by the SHA-256 of the URL) holding its variants (one per set of
/// `Vary` values), written to a temporary file and renamed, so a reader in another process never sees
/// half an entry. Reading an entry touches its file; eviction removes the files touched longest ago.
/// A response larger than ``maximumEntrySize`` is not kept (Apple keeps none above 5 % of the cache).
public final class ResponseCache: Sendable {
    /// Bytes kept in memory at most.
    public let memoryCapacity: Int
    /// Bytes kept on disk at most (0: memory only).
    public let diskCapacity: Int
    /// The disk cache's directory; nil for a cache in memory only.
    public let directory: String?
    /// The largest body kept: 5 % of the larger capacity unless set at creation.
    public let maximumEntrySize: Int

    private struct MemoryEntry {
        var variants: [CachedResponse]
        var cost: Int
        var lastUse: UInt64
    }

    private struct State {
        var memory: [String: MemoryEntry] = [:]
        var memoryUsage = 0
        var tick: UInt64 = 0
        /// The disk usage as last measured plus what this process wrote since; nil until measured.
        var diskUsage: Int?
    }

    private let state = Mutex(State())
    /// Entries being revalidated in the background now (stale-while-revalidate), by key and variant.
    private let revalidating = Mutex(Set<String>())

    /// `part` (a 206 to store) with what is stored for its URL and variant: combined with a stored part of
    /// the same representation (``HTTPCacheRules/combine(_:with:)``), the complete response when they add
    /// up to it; nil when the complete response of that representation is stored already.
    func withStoredParts(_ part: CachedResponse) -> CachedResponse? {
        guard let existing = cachedResponses(for: part.url).first(where: { $0.varyValues == part.varyValues }) else { return part }
        if existing.statusCode == 200, existing.headers["etag"] == part.headers["etag"] { return nil }
        return HTTPCacheRules.combine(existing, with: part) ?? part
    }

    /// Marks `key` as being revalidated; false when it already is (one revalidation at a time).
    func beginRevalidation(_ key: String) -> Bool {
        revalidating.withLock { $0.insert(key).inserted }
    }

    /// `key`'s background revalidation ended.
    func endRevalidation(_ key: String) {
        _ = revalidating.withLock { $0.remove(key) }
    }

    /// A cache with these capacities; `directory` (created when first written, mode 0700) holds the disk
    /// part and is required when `diskCapacity` is above zero.
    public init(memoryCapacity: Int, diskCapacity: Int, directory: String?, maximumEntrySize: Int? = nil) {
        self.memoryCapacity = max(0, memoryCapacity)
        self.diskCapacity = directory == nil ? 0 : max(0, diskCapacity)
        self.directory = directory
        self.maximumEntrySize = maximumEntrySize ?? max(memoryCapacity, diskCapacity) / 20
    }

    /// Where a default session's disk cache lives for `environment`: `$XDG_CACHE_HOME/ferry/http`, by
    /// default `~/.cache/ferry/http`; nil without a home directory.
    public static func defaultDirectory(_ environment: [String: String]) -> String? {
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/ferry/http" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.cache/ferry/http"
    }

    private static let registry = Mutex<[SessionConfiguration.Cache: ResponseCache]>([:])

    /// The cache for a configuration's `urlCache`: sessions with the same description share one (as
    /// default sessions share URLCache.shared), so one session's invalidation reaches the others.
    public static func forConfiguration(_ description: SessionConfiguration.Cache) -> ResponseCache {
        let directory =
            description.diskCapacity > 0
            ? description.directory ?? defaultDirectory(ProcessInfo.processInfo.environment) : nil
        var key = description
        key.directory = directory
        return registry.withLock { caches in
            if let cache = caches[key] { return cache }
            let cache = ResponseCache(
                memoryCapacity: description.memoryCapacity,
                diskCapacity: description.diskCapacity,
                directory: directory
            )
            caches[key] = cache
            return cache
        }
    }

    // MARK: Reading and writing entries

    /// Every stored variant for `url`.
    public func cachedResponses(for url: URL) -> [CachedResponse] {
        let key = HTTPCacheRules.key(for: url)
        if let variants = state.withLock({ state -> [CachedResponse]? in
            guard var entry = state.memory[key] else { return nil }
            state.tick += 1
            entry.lastUse = state.tick
            state.memory[key] = entry
            return entry.variants
        }) {
            return variants
        }
        guard let file = file(for: key), let variants = Self.readVariants(file), !variants.isEmpty else { return [] }
        touch(file)
        keepInMemory(key: key, variants: variants)
        return variants
    }

    /// The stored response a request with `headers` to `url` would be served, whatever its freshness:
    /// the newest variant whose `Vary` values match.
    public func cachedResponse(for url: URL, headers: Headers = Headers()) -> CachedResponse? {
        cachedResponses(for: url)
            .filter { HTTPCacheRules.varyMatches($0, requestHeaders: headers) }
            .max { $0.responseDate < $1.responseDate }
    }

    /// Stores `response`, replacing the variant with the same `Vary` values; `.allowedInMemoryOnly`
    /// keeps it out of the disk part, `.notAllowed` and a body over ``maximumEntrySize`` keep it out.
    public func store(_ response: CachedResponse) {
        guard response.storagePolicy != .notAllowed, response.data.count <= maximumEntrySize else { return }
        let key = HTTPCacheRules.key(for: response.url)
        // The variants kept now, read without counting as a use: the new set replaces them.
        let kept = state.withLock { $0.memory[key]?.variants } ?? file(for: key).flatMap(Self.readVariants) ?? []
        var variants = kept.filter { $0.varyValues != response.varyValues }
        variants.append(response)
        keepInMemory(key: key, variants: variants)
        let persistent = variants.filter { $0.storagePolicy == .allowed }
        if let file = file(for: key) {
            if persistent.isEmpty {
                remove(file)
            } else {
                write(persistent, to: file)
            }
        }
    }

    /// ``store(_:)`` with its file work (reading the kept variants, writing, evicting) on NIO's blocking
    /// thread pool, so that a burst of responses does not hold Swift's cooperative threads in disk calls
    /// (1,000 concurrent data tasks did, and starved every other task of the process for seconds).
    func storeOffPool(_ response: CachedResponse) async {
        guard directory != nil, diskCapacity > 0 else { return store(response) }
        do {
            try await NIOThreadPool.singleton.runIfActive { self.store(response) }
        } catch {
            store(response)
        }
    }

    /// Forgets every stored response for `url`.
    public func removeCachedResponses(for url: URL) {
        let key = HTTPCacheRules.key(for: url)
        state.withLock { state in
            if let entry = state.memory.removeValue(forKey: key) { state.memoryUsage -= entry.cost }
        }
        if let file = file(for: key) { remove(file) }
    }

    /// Forgets everything, on disk too.
    public func removeAllCachedResponses() {
        state.withLock { state in
            state.memory = [:]
            state.memoryUsage = 0
        }
        guard let directory else { return }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasSuffix(".entry") {
            remove(directory + "/" + name)
        }
    }

    /// Bytes in memory now.
    public var currentMemoryUsage: Int { state.withLock { $0.memoryUsage } }

    /// Bytes on disk now (measured).
    public var currentDiskUsage: Int { Self.scan(directory).reduce(0) { $0 + $1.size } }

    // MARK: Memory

    private func keepInMemory(key: String, variants: [CachedResponse]) {
        let cost = variants.reduce(0) { $0 + $1.cost }
        state.withLock { state in
            if let old = state.memory.removeValue(forKey: key) { state.memoryUsage -= old.cost }
            guard cost <= memoryCapacity, !variants.isEmpty else { return }
            state.tick += 1
            state.memory[key] = MemoryEntry(variants: variants, cost: cost, lastUse: state.tick)
            state.memoryUsage += cost
            while state.memoryUsage > memoryCapacity,
                let oldest = state.memory.min(by: { $0.value.lastUse < $1.value.lastUse })
            {
                state.memory.removeValue(forKey: oldest.key)
                state.memoryUsage -= oldest.value.cost
            }
        }
    }

    // MARK: Disk

    private func file(for key: String) -> String? {
        guard let directory, diskCapacity > 0 else { return nil }
        let digest = SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
        return directory + "/" + digest + ".entry"
    }

    /// The file's layout: a magic line, the metadata's length (8 bytes, big-endian), the metadata (JSON:
    /// each variant without its body, with the body's length), then the bodies one after another.
    private static let magic = Data("ferry-cache 1\n".utf8)

    private struct Metadata: Codable {
        var variant: CachedResponse
        var bodyLength: Int
    }

    private static func readVariants(_ path: String) -> [CachedResponse]? {
        guard let data = FileManager.default.contents(atPath: path), data.count >= magic.count + 8,
            data.prefix(magic.count) == magic
        else { return nil }
        var offset = data.startIndex + magic.count
        let length = data[offset..<offset + 8].reduce(0) { $0 << 8 | Int($1) }
        offset += 8
        guard length >= 0, length <= data.endIndex - offset,
            let metadata = try? JSONDecoder().decode([Metadata].self, from: data[offset..<offset + length])
        else { return nil }
        offset += length
        var variants: [CachedResponse] = []
        for item in metadata {
            guard item.bodyLength >= 0, item.bodyLength <= data.endIndex - offset else { return nil }
            var variant = item.variant
            variant.data = Data(data[offset..<offset + item.bodyLength])
            offset += item.bodyLength
            variants.append(variant)
        }
        return variants
    }

    private func write(_ variants: [CachedResponse], to path: String) {
        guard let directory else { return }
        let metadata = variants.map { variant -> Metadata in
            var bare = variant
            bare.data = Data()
            return Metadata(variant: bare, bodyLength: variant.data.count)
        }
        guard let json = try? JSONEncoder().encode(metadata) else { return }
        var contents = Self.magic
        withUnsafeBytes(of: UInt64(json.count).bigEndian) { contents.append(contentsOf: $0) }
        contents.append(json)
        for variant in variants { contents.append(variant.data) }
        guard contents.count <= diskCapacity else { return }
        do {
            try FileManager.default.createDirectory(
                atPath: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
            let previous = Self.size(path)
            // Written beside, then renamed: another process reads the old entry or the new, never half.
            let temporary = path + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
            guard FileManager.default.createFile(atPath: temporary, contents: contents, attributes: [.posixPermissions: 0o600]) else {
                return
            }
            guard rename(temporary, path) == 0 else {
                unlink(temporary)
                return
            }
            let over = state.withLock { state -> Bool in
                let usage = (state.diskUsage ?? Self.scan(directory).reduce(0) { $0 + $1.size }) - previous + contents.count
                state.diskUsage = usage
                return usage > diskCapacity
            }
            if over { evict() }
        } catch {
            // A cache that cannot be written is a cache that does not keep this entry; the request
            // it came from has its response already.
        }
    }

    /// Removes the least recently used files until the disk part is within 90 % of its capacity.
    private func evict() {
        var files = Self.scan(directory).sorted { $0.used < $1.used }
        var usage = files.reduce(0) { $0 + $1.size }
        let target = diskCapacity / 10 * 9
        while usage > target, !files.isEmpty {
            let oldest = files.removeFirst()
            unlink(oldest.path)
            usage -= oldest.size
        }
        // The memory part may still hold what left the disk; it goes by its own eviction.
        state.withLock { $0.diskUsage = usage }
    }

    private func remove(_ path: String) {
        let size = Self.size(path)
        guard unlink(path) == 0 else { return }
        state.withLock { state in
            if let usage = state.diskUsage { state.diskUsage = max(0, usage - size) }
        }
    }

    private func touch(_ path: String) {
        // mtime, not atime: many file systems are mounted noatime or relatime.
        utimes(path, nil)
    }

    private static func size(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    private static func scan(_ directory: String?) -> [(path: String, size: Int, used: Int64)] {
        guard let directory, let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.compactMap { name in
            guard name.hasSuffix(".entry") else { return nil }
            let path = directory + "/" + name
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            let used = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            return (path, Int(info.st_size), used)
        }
    }
}
