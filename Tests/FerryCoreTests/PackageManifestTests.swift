import Foundation
import Testing

/// Package.swift declares, target by target, exactly the modules the target's files import
/// (`contrib/check-package.py imports`), and the check fails when a manifest says otherwise; every type
/// and test docs/ARCHITECTURE.md's "Where to change what" names exists (`… docs`); no source file is
/// over 600 lines and no function over 100 (`… limits`).
@Suite struct PackageManifestTests {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs the checker on `root`; its exit status and output.
    private func check(_ root: URL, _ what: String = "imports") throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.root.appendingPathComponent("contrib/check-package.py").path, what, root.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    @Test func theManifestMatchesTheImports() throws {
        let (status, output) = try check(Self.root)
        #expect(status == 0, "\(output)")
        #expect(output.contains("Package.swift matches the imports"))
    }

    @Test func aManifestThatSaysOtherwiseFails() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-manifest-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let sources = directory.appendingPathComponent("Sources/Lib")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try """
            // swift-tools-version:6.1
            import PackageDescription
            let package = Package(
                name: "Probe",
                targets: [
                    .target(name: "Lib", dependencies: ["Unused", .product(name: "NIOCore", package: "swift-nio")], swiftSettings: [.define("ON")]),
                ]
            )
            """.write(to: directory.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try """
            import Foundation
            public import NIOCore
            @testable import Missing
            #if ON
            import AlsoMissing
            #else
            import SwitchedOff
            #endif
            let text = \"\"\"
            import InAString
            \"\"\"
            """.write(to: sources.appendingPathComponent("Lib.swift"), atomically: true, encoding: .utf8)
        let (status, output) = try check(directory)
        #expect(status == 1)
        #expect(output.contains("Lib imports what Package.swift does not declare: AlsoMissing, Missing"), "\(output)")
        #expect(output.contains("Lib declares what none of its files imports: Unused"), "\(output)")
        #expect(!output.contains("SwitchedOff") && !output.contains("InAString"))
    }

    @Test func theArchitecturesWhereToChangeWhatNamesOnlyWhatExists() throws {
        let (status, output) = try check(Self.root, "docs")
        #expect(status == 0, "\(output)")
        #expect(output.contains("all exist"))
    }

    @Test func aTableThatNamesAMissingTypeFails() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-docs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        for folder in ["docs", "Sources/Lib", "Tests/LibTests"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try "struct Present {}\n".write(to: directory.appendingPathComponent("Sources/Lib/Present.swift"), atomically: true, encoding: .utf8)
        try "\n".write(to: directory.appendingPathComponent("Tests/LibTests/PresentTests.swift"), atomically: true, encoding: .utf8)
        try """
            ## Where to change what

            | to change | start at | tests |
            | --- | --- | --- |
            | a thing | `Present`, `Gone` | `PresentTests`, `GoneTests` |

            ## Next
            `AlsoGoneButOutsideTheTable`
            """.write(to: directory.appendingPathComponent("docs/ARCHITECTURE.md"), atomically: true, encoding: .utf8)
        let (status, output) = try check(directory, "docs")
        #expect(status == 1)
        #expect(output.contains("names Gone,") && output.contains("names GoneTests,"), "\(output)")
        #expect(!output.contains("Present,") && !output.contains("AlsoGone"))
    }

    @Test func noSourceFileOrFunctionIsTooLong() throws {
        let (status, output) = try check(Self.root, "limits")
        #expect(status == 0, "\(output)")
        #expect(output.contains("0 over the limits"))
    }

    @Test func aLongFunctionOrFileFails() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-limits-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let sources = directory.appendingPathComponent("Sources/Lib")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        let body = String(repeating: "    _ = 1\n", count: 99)
        // 101 lines, and one of exactly 100 whose URL holds "//" (not a comment that hides its brace).
        try """
            func long() {
            \(body)}

            func atTheLimit() {
                if true { _ = URL(string: "http://example.test/") }
            \(String(repeating: "    _ = 1\n", count: 97))}
            """.write(to: sources.appendingPathComponent("Long.swift"), atomically: true, encoding: .utf8)
        try String(repeating: "// a line\n", count: 601).write(to: sources.appendingPathComponent("Big.swift"), atomically: true, encoding: .utf8)
        let (status, output) = try check(directory, "limits")
        #expect(status == 1)
        #expect(output.contains("Long.swift:1: func long() { is 101 lines (limit 100)"), "\(output)")
        #expect(!output.contains("atTheLimit"), "\(output)")
        #expect(output.contains("Big.swift: 601 lines (limit 600)"), "\(output)")
        #expect(output.contains("2 over the limits"), "\(output)")
    }
}
