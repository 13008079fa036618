import FerryCore
import Foundation
import Testing

/// The http-state corpus (../shared/conformance/http-state, see its README): Set-Cookie lines for
/// `http://home.example.org:8888/cookie-parser?NAME`, and the Cookie header the follow-up request must
/// carry. Skipped, with the reason, when the corpus is not there.
@Suite struct CookieConformanceTests {
    static let corpus: String? = {
        var directory = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { directory.deleteLastPathComponent() }
        let path = directory.appendingPathComponent("../shared/conformance/http-state").standardizedFileURL.path
        return FileManager.default.fileExists(atPath: path + "/parser") ? path : nil
    }()

    /// Cases this client answers differently, each with the reason (docs/COOKIES.md lists them).
    static let knownDifferences: [String: String] = [
        "0028": "the corpus's expected file holds Set-Cookie lines instead of a Cookie line (its README says so)"
    ]

    /// "Now" for the corpus: its future Expires dates (2019, 2027) were meant to be in the future.
    static let now = Date(timeIntervalSince1970: 1_262_304_000)  // 2010-01-01

    struct Outcome {
        var name: String
        var expected: String
        var actual: String
    }

    static func run(_ name: String, in parser: String) throws -> Outcome {
        let test = try String(contentsOfFile: "\(parser)/\(name)-test", encoding: .utf8)
        let expectedText = (try? String(contentsOfFile: "\(parser)/\(name)-expected", encoding: .utf8)) ?? ""
        let origin = URL(string: "http://home.example.org:8888/cookie-parser?\(name)")!
        var jar = CookieJar(publicSuffixes: .system)
        var location: String?
        for line in test.split(separator: "\n", omittingEmptySubsequences: true) {
            let text = line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
            if text.lowercased().hasPrefix("set-cookie:") {
                jar.receive(String(text.dropFirst("set-cookie:".count)), from: origin, now: now)
            } else if text.lowercased().hasPrefix("location:") {
                location = text.dropFirst("location:".count).trimmingCharacters(in: .whitespaces)
            }
        }
        let target =
            location.flatMap { URL(string: $0, relativeTo: origin)?.absoluteURL }
            ?? URL(string: "http://home.example.org:8888/cookie-parser-result?\(name)")!
        let expected = expectedText.split(separator: "\n").first.map {
            $0.hasPrefix("Cookie: ") ? String($0.dropFirst("Cookie: ".count)) : String($0)
        } ?? ""
        return Outcome(name: name, expected: expected, actual: jar.cookieHeader(for: target, now: now) ?? "")
    }

    @Test(.enabled(if: corpus != nil, "the http-state corpus is not at ../shared/conformance/http-state"))
    func theParserCasesPass() throws {
        let parser = try #require(Self.corpus) + "/parser"
        let names = try FileManager.default.contentsOfDirectory(atPath: parser)
            .filter { $0.hasSuffix("-test") }
            .map { String($0.dropLast("-test".count)) }
            .sorted()
        var passed = 0
        var failed: [String] = []
        var disabled = 0
        for name in names {
            let outcome = try Self.run(name, in: parser)
            if name.hasPrefix("disabled-") {
                disabled += 1
                continue
            }
            if Self.knownDifferences[name] != nil { continue }
            if outcome.actual == outcome.expected {
                passed += 1
            } else {
                failed.append("\(name): expected '\(outcome.expected)', got '\(outcome.actual)'")
            }
        }
        print("http-state parser cases: \(passed) passed, \(failed.count) failed, \(disabled) disabled (run, not counted)")
        #expect(failed.isEmpty, "\(failed.joined(separator: "\n"))")
        #expect(passed > 200)
    }

    @Test(.enabled(if: corpus != nil, "the http-state corpus is not at ../shared/conformance/http-state"))
    func theDateCasesPass() throws {
        let dates = try #require(Self.corpus) + "/dates"
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var failed: [String] = []
        var count = 0
        for file in try FileManager.default.contentsOfDirectory(atPath: dates) where file.hasSuffix(".json") {
            let text = try String(contentsOfFile: "\(dates)/\(file)", encoding: .utf8)
            // bsd-examples.json opens with // comment lines.
            let json = text.split(separator: "\n").filter { !$0.hasPrefix("//") }.joined(separator: "\n")
            let cases = try JSONSerialization.jsonObject(with: Data(json.utf8)) as! [[String: Any]]
            for entry in cases {
                count += 1
                let test = entry["test"] as! String
                let expected = entry["expected"] as? String
                let actual = CookieDate.parse(test).map { formatter.string(from: $0) }
                if actual != expected { failed.append("\(file) '\(test)': expected \(expected ?? "nil"), got \(actual ?? "nil")") }
            }
        }
        print("http-state date cases: \(count - failed.count) of \(count) passed")
        #expect(failed.isEmpty, "\(failed.joined(separator: "\n"))")
    }
}
