import FerryCore
import Foundation
import Testing

@Suite struct RedirectTests {
    func request(_ url: String, method: String = "GET", headers: [(String, String)] = []) -> Request {
        var request = Request(url: URL(string: url)!)
        request.method = method
        request.headers = Headers(headers)
        return request
    }

    @Test func resolvesRelativeLocations() {
        let base = request("http://127.0.0.1:8080/redirect/3?code=302")
        #expect(
            Redirect.follow(base, status: 302, location: "2?code=302")?.url.absoluteString
                == "http://127.0.0.1:8080/redirect/2?code=302"
        )
        #expect(
            Redirect.follow(base, status: 301, location: "/echo")?.url.absoluteString == "http://127.0.0.1:8080/echo"
        )
        #expect(
            Redirect.follow(base, status: 308, location: "https://other.invalid/x")?.url.absoluteString
                == "https://other.invalid/x"
        )
    }

    @Test func methodsChangeAsBrowsersDo() {
        let post = request("http://h/a", method: "POST", headers: [("Content-Type", "text/plain")])
        #expect(Redirect.follow(post, status: 301, location: "/b")?.method == "GET")
        #expect(Redirect.follow(post, status: 302, location: "/b")?.method == "GET")
        #expect(Redirect.follow(post, status: 302, location: "/b")?.headers["content-type"] == nil)
        #expect(Redirect.follow(post, status: 303, location: "/b")?.method == "GET")
        #expect(Redirect.follow(post, status: 307, location: "/b")?.method == "POST")
        #expect(Redirect.follow(post, status: 307, location: "/b")?.headers["content-type"] == "text/plain")
        #expect(Redirect.follow(post, status: 308, location: "/b")?.method == "POST")
        #expect(Redirect.follow(request("http://h/a", method: "HEAD"), status: 303, location: "/b")?.method == "HEAD")
        #expect(Redirect.follow(request("http://h/a", method: "PUT"), status: 302, location: "/b")?.method == "PUT")
        #expect(Redirect.keepsBody(status: 307, method: "POST"))
        #expect(!Redirect.keepsBody(status: 303, method: "POST"))
    }

    @Test func credentialsStayWithTheirOrigin() {
        let authorized = request("http://h:8080/a", headers: [("Authorization", "Basic x"), ("Cookie", "a=1")])
        let same = Redirect.follow(authorized, status: 302, location: "http://h:8080/b")
        #expect(same?.headers["authorization"] == "Basic x")
        let other = Redirect.follow(authorized, status: 302, location: "http://h:9090/b")
        #expect(other?.headers["authorization"] == nil)
        #expect(other?.headers["cookie"] == nil)
        // https to http on the same host is another origin too: followed (as URLSession and curl -L do),
        // without the credentials.
        let secure = request("https://h/a", headers: [("Authorization", "Basic x"), ("Cookie", "a=1")])
        let downgraded = Redirect.follow(secure, status: 302, location: "http://h/b")
        #expect(downgraded?.url.absoluteString == "http://h/b")
        #expect(downgraded?.headers["authorization"] == nil)
        #expect(downgraded?.headers["cookie"] == nil)
    }

    @Test func ignoresWhatIsNotARedirect() {
        let base = request("http://h/a")
        #expect(Redirect.follow(base, status: 200, location: "/b") == nil)
        #expect(Redirect.follow(base, status: 304, location: "/b") == nil)
        #expect(Redirect.follow(base, status: 302, location: nil) == nil)
        #expect(Redirect.follow(base, status: 302, location: "ftp://h/file") == nil)
    }
}
