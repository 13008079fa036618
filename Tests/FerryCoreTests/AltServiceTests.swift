import FerryCore
import Testing

/// `Alt-Svc` (RFC 7838): the HTTP/3 port an origin offers for itself, and what is not taken.
@Suite struct AltServiceTests {
    @Test func theHTTP3PortForTheSameHost() {
        #expect(AltService.http3Port([#"h3=":443"; ma=86400"#], host: "example.com") == 443)
        #expect(AltService.http3Port([#"h3-29=":443", h3=":8443"; ma=60"#], host: "example.com") == 8443)
        #expect(AltService.http3Port([#"h2=":443""#, #"h3="EXAMPLE.com:9443""#], host: "example.com") == 9443)
    }

    @Test func otherHostsOtherProtocolsAndClearAreNotTaken() {
        #expect(AltService.http3Port([#"h3="cdn.example.net:443""#], host: "example.com") == nil)
        #expect(AltService.http3Port([#"h2=":443""#], host: "example.com") == nil)
        #expect(AltService.http3Port(["clear"], host: "example.com") == nil)
        #expect(AltService.http3Port([#"h3=":0""#, #"h3=":99999""#, "h3=443"], host: "example.com") == nil)
    }
}
