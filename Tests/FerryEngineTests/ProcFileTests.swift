import FerryEngine
import Foundation
import Testing

@Suite struct ProcFileTests {
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/maps"), "Linux /proc"))
    func aProcFileIsReadWholeNotItsFirstPage() throws {
        // This test process maps dozens of libraries: its maps file is far longer than the ~4 KB
        // Foundation's String(contentsOfFile:) reads of a /proc file.
        let text = try #require(ProcFile.read("/proc/self/maps"))
        #expect(text.utf8.count > 8 * 1024, "\(text.utf8.count) bytes")
        #expect(text.hasSuffix("\n"))
        #expect(text.split(separator: "\n").allSatisfy { $0.split(separator: " ").count >= 5 })
        #expect(ProcFile.read("/proc/no-such-file") == nil)
    }
}
