import FerryCore
import Testing

@Suite struct FormFieldTests {
    @Test func curlsSyntaxGivesValuesFilesTypesAndNames() throws {
        #expect(try FormField(curlSyntax: "title=Holiday") == FormField(name: "title", value: "Holiday"))
        #expect(try FormField(curlSyntax: "photo=@a/b.PNG") == FormField(name: "photo", file: "a/b.PNG", contentType: "image/png"))
        #expect(
            try FormField(curlSyntax: "raw=@x.bin;type=application/x-raw;filename=r.dat")
                == FormField(name: "raw", file: "x.bin", filename: "r.dat", contentType: "application/x-raw")
        )
        // Text after a ; that is not an attribute is part of the value, as in curl.
        #expect(try FormField(curlSyntax: "q=a;b") == FormField(name: "q", value: "a;b"))
        #expect(try FormField(curlSyntax: "n=v;type=text/plain") == FormField(name: "n", value: "v", contentType: "text/plain"))
        #expect(FormField.contentType(forFile: "/dir.d/archive") == "application/octet-stream")
        #expect(FormField.contentType(forFile: ".txt") == "application/octet-stream")
        for bad in ["novalue", "=x", "f=@x;type=", "f=@x;type=a\r\nb"] {
            #expect(throws: FerryError.self, "\(bad)") { try FormField(curlSyntax: bad) }
        }
    }

    @Test func anotherProcesssFieldsAreCheckedByBytesNotCharacters() throws {
        try FormField(name: "f", file: "/tmp/x").validate()
        try FormField(name: "v", value: "x", contentType: "text/plain").validate()
        let refused: [FormField] = [
            FormField(name: "", value: "x"),
            FormField(name: "f", file: "relative"),
            // "/" with a combining skin tone is one Character: still a path that starts with "/" by bytes.
            FormField(name: "f", file: "/\u{1F3FB}a\u{0}"),
            // "\r\n" is one Character, equal to neither "\r" nor "\n".
            FormField(name: "v", value: "x", contentType: "text/plain\r\nX-Injected: 1"),
            { var both = FormField(name: "f", file: "/a"); both.value = "x"; return both }(),
        ]
        for field in refused {
            #expect(throws: FerryError.self, "\(field)") { try field.validate() }
        }
        // A path whose first Character is "/" plus a combining mark is absolute.
        try FormField(name: "f", file: "/\u{1F3FB}").validate()
    }
}
