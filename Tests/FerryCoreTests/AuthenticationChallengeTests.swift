import FerryCore
import Testing

@Suite struct AuthenticationChallengeTests {
    @Test func parametersParseQuotedEscapedAndBareValues() {
        let parsed = AuthParameters.parse(#" realm="a \"b\", c", nonce=abc,qop="auth,auth-int" , stale=true"#)
        #expect(parsed["realm"] == #"a "b", c"#)
        #expect(parsed["nonce"] == "abc")
        #expect(parsed["qop"] == "auth,auth-int")
        #expect(parsed["stale"] == "true")
    }

    @Test func malformedPiecesAreSkipped() {
        #expect(AuthParameters.parse("novalue, =x, a=1").count == 1)
        #expect(AuthParameters.parse(#"a="unterminated"#)["a"] == "unterminated")
        #expect(AuthParameters.parse("").isEmpty)
    }

    @Test func onlyBasicAndDigestAreSupportedDigestFirst() {
        let challenges = AuthenticationChallenge.supported(
            in: [#"Basic realm="r""#, "Negotiate", #"Digest realm="r", nonce="n""#],
            host: "h",
            port: 80
        )
        #expect(challenges.map(\.scheme) == ["digest", "basic"])
        #expect(challenges.first?.parameters["nonce"] == "n")
    }
}
