import Foundation
import Testing

/// GettingStarted.md's snippets are the sources of the GettingStarted* targets, character for
/// character, so that building this package proves each snippet compiles as a reader copies it
/// (issue 41: a snippet without `import Foundation` could not find `URL`).
@Suite struct GettingStartedTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test func everyRunnableSnippetIsABuiltTarget() throws {
        let article = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/Ferry/Ferry.docc/GettingStarted.md"),
            encoding: .utf8
        )
        // The ```swift blocks that are programs: they import Ferry and do more than import.
        let blocks = article.components(separatedBy: "```swift\n").dropFirst().compactMap { $0.components(separatedBy: "```").first }
        let programs = blocks.filter { $0.hasPrefix("import Ferry\n") && $0.split(separator: "\n").count > 2 }
        #expect(programs.count == 2)
        let targets = try ["GettingStartedAsync", "GettingStartedDelegate"].map { name in
            let source = try String(
                contentsOf: Self.root.appendingPathComponent("Examples/Sources/\(name)/main.swift"),
                encoding: .utf8
            )
            // Without the leading comment that says where it comes from.
            return source.split(separator: "\n", omittingEmptySubsequences: false).drop { $0.hasPrefix("//") || $0.isEmpty }
                .joined(separator: "\n")
        }
        #expect(programs == targets)
        for program in programs { #expect(program.contains("import Foundation\n")) }
    }
}
