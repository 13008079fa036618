import FerryCore
import Foundation
import Testing

/// A name someone else chose (a server's Content-Disposition, a URL's last component) is made safe
/// before it names a local file: no path, no hidden file, no control or bidirectional characters, never
/// one of Ferry's own working files.
@Suite struct SafeFilenameTests {
    @Test func pathsAndDotsAreStripped() {
        #expect(SafeFilename.sanitize("../../etc/passwd") == "passwd")
        #expect(SafeFilename.sanitize("a\\..\\b.txt") == "b.txt")
        #expect(SafeFilename.sanitize(".bashrc") == "bashrc")
        #expect(SafeFilename.sanitize(". .profile") == "profile")
        #expect(SafeFilename.sanitize("...") == nil)
        #expect(SafeFilename.sanitize("..") == nil)
        #expect(SafeFilename.sanitize("  ") == nil)
        #expect(SafeFilename.sanitize("report.v2.pdf") == "report.v2.pdf")
    }

    @Test func controlAndBidirectionalCharactersGo() {
        // U+202E (right-to-left override) makes "evil\u{202E}fdp.exe" show as "evilexe.pdf".
        #expect(SafeFilename.sanitize("evil\u{202E}fdp.exe") == "evilfdp.exe")
        #expect(SafeFilename.sanitize("a\u{2066}b\u{2069}c\u{200F}.txt") == "abc.txt")
        #expect(SafeFilename.sanitize("line\r\nbreak\u{7F}\u{85}.txt") == "linebreak.txt")
        #expect(SafeFilename.sanitize("zero\u{200B}width\u{FEFF}.txt") == "zerowidth.txt")
        // Ordinary non-ASCII letters stay.
        #expect(SafeFilename.sanitize("résumé 数据.txt") == "résumé 数据.txt")
    }

    @Test func ferrysOwnSuffixesAreRefused() {
        for suffix in SafeFilename.reservedSuffixes {
            #expect(SafeFilename.sanitize("movie.iso" + suffix) == nil, "\(suffix)")
            #expect(SafeFilename.sanitize("MOVIE.ISO" + suffix.uppercased()) == nil, "\(suffix)")
        }
        #expect(SafeFilename.sanitize("notes.ferry-partial") == "notes.ferry-partial")
    }

    @Test func longNamesFitNameMax() throws {
        let name = String(repeating: "é", count: 300) + ".tar.gz"
        let safe = try #require(SafeFilename.sanitize(name))
        #expect(safe.utf8.count <= 255)
        #expect(safe.hasSuffix(".gz"))
    }

    @Test func theSuggestedFilenameFollowsTheRules() throws {
        let url = try #require(URL(string: "http://h/download"))
        func suggested(_ disposition: String) -> String {
            Response(url: url, statusCode: 200, headers: ["Content-Disposition": disposition]).suggestedFilename
        }
        #expect(suggested("attachment; filename=\".bashrc\"") == "bashrc")
        #expect(suggested("attachment; filename=\"x\u{202E}gpj.exe\"") == "xgpj.exe")
        #expect(suggested("attachment; filename=\"a.ferry-part\"") == "download")
        #expect(Response(url: try #require(URL(string: "http://h/.hidden")), statusCode: 200, headers: [:]).suggestedFilename == "hidden")
    }
}
