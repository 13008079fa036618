import FerryCore
import FerryEngine
import Foundation
import Testing

/// ResponseCache keeps entries within its capacities, evicting the least recently used, in memory and
/// on disk.
@Suite struct ResponseCacheTests {
    func entry(_ path: String, bytes: Int) -> CachedResponse {
        CachedResponse(
            url: URL(string: "http://example.com/\(path)")!,
            statusCode: 200,
            headers: Headers([("Cache-Control", "max-age=60")]),
            data: Data(repeating: 7, count: bytes),
            requestDate: Date(),
            responseDate: Date()
        )
    }

    @Test func memoryEvictsTheLeastRecentlyUsed() {
        let cache = ResponseCache(memoryCapacity: 3_000, diskCapacity: 0, directory: nil, maximumEntrySize: 2_000)
        cache.store(entry("a", bytes: 900))
        cache.store(entry("b", bytes: 900))
        #expect(cache.cachedResponse(for: URL(string: "http://example.com/a")!) != nil)  // a is now the newest
        cache.store(entry("c", bytes: 900))
        #expect(cache.cachedResponse(for: URL(string: "http://example.com/b")!) == nil)
        #expect(cache.cachedResponse(for: URL(string: "http://example.com/a")!) != nil)
        #expect(cache.cachedResponse(for: URL(string: "http://example.com/c")!) != nil)
        #expect(cache.currentMemoryUsage <= 3_000)
        // Over the entry limit: not kept at all.
        cache.store(entry("big", bytes: 2_001))
        #expect(cache.cachedResponse(for: URL(string: "http://example.com/big")!) == nil)
    }

    @Test func diskEvictsTheLeastRecentlyUsedFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-cache-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = ResponseCache(memoryCapacity: 0, diskCapacity: 10_000, directory: directory, maximumEntrySize: 5_000)
        for name in ["a", "b", "c"] { cache.store(entry(name, bytes: 2_500)) }
        // Reading a touches its file; storing d then goes over 10,000 and evicts b, the oldest untouched.
        #expect(cache.cachedResponse(for: URL(string: "http://example.com/a")!) != nil)
        cache.store(entry("d", bytes: 2_500))
        let reader = ResponseCache(memoryCapacity: 0, diskCapacity: 10_000, directory: directory)
        #expect(reader.cachedResponse(for: URL(string: "http://example.com/b")!) == nil)
        for name in ["a", "c", "d"] {
            #expect(reader.cachedResponse(for: URL(string: "http://example.com/\(name)")!)?.data.count == 2_500)
        }
        #expect(reader.currentDiskUsage <= 9_000)
        // Entries are private to the user.
        let file = try #require(FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".entry") })
        let mode = try FileManager.default.attributesOfItem(atPath: directory + "/" + file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func aDamagedFileIsIgnored() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-cache-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = ResponseCache(memoryCapacity: 0, diskCapacity: 100_000, directory: directory)
        cache.store(entry("a", bytes: 100))
        let file = try #require(FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".entry") })
        let path = directory + "/" + file
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        try data.prefix(data.count - 10).write(to: URL(fileURLWithPath: path))
        #expect(cache.cachedResponse(for: URL(string: "http://example.com/a")!) == nil)
    }
}
