import Testing

@testable import FerryTestServer

@Suite struct HTTPAuthenticationTests {
    /// RFC 7616 §3.9.1.
    let rfcAuthorization =
        "Digest username=\"Mufasa\", realm=\"http-auth@example.org\", uri=\"/dir/index.html\", "
        + "algorithm=MD5, nonce=\"7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v\", nc=00000001, "
        + "cnonce=\"f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ\", qop=auth, "
        + "response=\"8ca523f5e9506fed4657c9700eebdbec\", opaque=\"FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS\""

    @Test func parsesDigestParameters() throws {
        let parameters = try #require(HTTPAuthentication.digestParameters(rfcAuthorization))
        #expect(parameters["username"] == "Mufasa")
        #expect(parameters["nc"] == "00000001")
        #expect(parameters["qop"] == "auth")
        #expect(parameters["uri"] == "/dir/index.html")
    }

    @Test func computesTheRFCResponses() throws {
        let parameters = try #require(HTTPAuthentication.digestParameters(rfcAuthorization))
        #expect(
            HTTPAuthentication.digestResponse(
                parameters: parameters,
                method: "GET",
                password: "Circle of Life",
                algorithm: .md5,
                realm: "http-auth@example.org"
            ) == "8ca523f5e9506fed4657c9700eebdbec"
        )
        #expect(
            HTTPAuthentication.digestResponse(
                parameters: parameters,
                method: "GET",
                password: "Circle of Life",
                algorithm: .sha256,
                realm: "http-auth@example.org"
            )
                == "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"
        )
    }

    @Test func checksBasicCredentials() {
        // "user:pass" in base64.
        #expect(HTTPAuthentication.basicAccepts("Basic dXNlcjpwYXNz", user: "user", password: "pass"))
        #expect(!HTTPAuthentication.basicAccepts("Basic dXNlcjpwYXNz", user: "user", password: "other"))
        #expect(!HTTPAuthentication.basicAccepts("Bearer dXNlcjpwYXNz", user: "user", password: "pass"))
        #expect(!HTTPAuthentication.basicAccepts(nil, user: "user", password: "pass"))
    }
}
