import FerryCore
import Foundation
import Testing

@Suite struct SessionConfigurationTests {
    @Test func defaultsAreApples() {
        let configuration = SessionConfiguration.default
        #expect(configuration.kind == .default)
        #expect(configuration.timeoutIntervalForRequest == 60)
        #expect(configuration.timeoutIntervalForResource == 604_800)
        #expect(configuration.httpMaximumConnectionsPerHost == 6)
        #expect(!configuration.httpShouldUsePipelining)
        #expect(configuration.httpShouldSetCookies)
        #expect(configuration.httpCookieAcceptPolicy == .onlyFromMainDocumentDomain)
        #expect(configuration.requestCachePolicy == .useProtocolCachePolicy)
        #expect(configuration.allowsCellularAccess && configuration.allowsExpensiveNetworkAccess)
        #expect(configuration.allowsConstrainedNetworkAccess)
        #expect(!configuration.waitsForConnectivity)
        #expect(!configuration.isDiscretionary)
        #expect(configuration.sessionSendsLaunchEvents)
        #expect(configuration.tlsMinimumSupportedProtocolVersion == .tlsv12)
        #expect(configuration.tlsMaximumSupportedProtocolVersion == .tlsv13)
        #expect(configuration.httpCookieStorage == .shared)
        #expect(configuration.urlCache?.diskCapacity ?? 0 > 0)
    }

    @Test func ephemeralKeepsNothingOnDisk() {
        let configuration = SessionConfiguration.ephemeral
        #expect(configuration.httpCookieStorage == .sessionPrivate)
        #expect(configuration.urlCredentialStorage == .sessionPrivate)
        #expect(configuration.urlCache?.diskCapacity == 0)
    }

    @Test func backgroundNeedsAGoodIdentifier() throws {
        let background = SessionConfiguration.background(identifier: "com.example.sync")
        #expect(background.identifier == "com.example.sync")
        #expect(background.waitsForConnectivity)
        try background.validate()
        for bad in ["", "a/b", "line\nbreak", String(repeating: "x", count: 256)] {
            #expect(throws: FerryError.self) { try SessionConfiguration.background(identifier: bad).validate() }
        }
    }

    @Test func refusesContradictions() {
        var configuration = SessionConfiguration.default
        configuration.tlsMinimumSupportedProtocolVersion = .tlsv13
        configuration.tlsMaximumSupportedProtocolVersion = .tlsv12
        #expect(throws: FerryError.self) { try configuration.validate() }
        configuration = .default
        configuration.httpMaximumConnectionsPerHost = 0
        #expect(throws: FerryError.self) { try configuration.validate() }
        configuration = .default
        configuration.httpAdditionalHeaders["X-Bad"] = "a\nb"
        #expect(throws: FerryError.self) { try configuration.validate() }
        configuration = .default
        configuration.httpShouldUsePipelining = true
        #expect(throws: FerryError.self) { try configuration.validate() }
        // A background session's cookies must be in the file ferryd applies.
        configuration = .background(identifier: "com.example.x")
        configuration.httpCookieStorage = .sessionPrivate
        #expect(throws: FerryError.self) { try configuration.validate() }
        configuration.httpCookieStorage = .none
        #expect(throws: Never.self) { try configuration.validate() }
        // Network policy and waiting are kept now (issue 19); a bandwidth limit must be positive.
        for change: (inout SessionConfiguration) -> Void in [
            { $0.allowsCellularAccess = false }, { $0.allowsExpensiveNetworkAccess = false },
            { $0.allowsConstrainedNetworkAccess = false }, { $0.waitsForConnectivity = true },
            { $0.bandwidthLimit = 1 },
        ] {
            configuration = .default
            change(&configuration)
            #expect(throws: Never.self) { try configuration.validate() }
        }
        configuration = .default
        configuration.bandwidthLimit = 0
        #expect(throws: FerryError.self) { try configuration.validate() }
        #expect(throws: Never.self) { try SessionConfiguration.background(identifier: "a.b").validate() }
    }

    @Test func additionalHeadersFillOnlyWhatIsMissing() {
        var configuration = SessionConfiguration.default
        configuration.httpAdditionalHeaders = ["User-Agent": "ferry", "Accept": "*/*"]
        var request = Request(url: URL(string: "http://127.0.0.1/")!)
        request.headers["accept"] = "application/json"
        let sent = configuration.applyingAdditionalHeaders(to: request)
        #expect(sent.headers["Accept"] == "application/json")
        #expect(sent.headers.values("accept").count == 1)
        #expect(sent.headers["user-agent"] == "ferry")
    }

    @Test func survivesEncoding() throws {
        var configuration = SessionConfiguration.background(identifier: "id")
        configuration.proxy = .init(kind: .socks5, host: "127.0.0.1", port: 1080)
        configuration.httpAdditionalHeaders["X-A"] = "1"
        let decoded = try JSONDecoder().decode(
            SessionConfiguration.self,
            from: try JSONEncoder().encode(configuration)
        )
        #expect(decoded == configuration)
    }

    /// The settings sit in one copy-on-write box (a copy is one retain): a copy changed apart leaves the
    /// original as it was, and equal settings in two boxes are equal, with one hash.
    @Test func aCopyChangesApart() {
        var original = SessionConfiguration.ephemeral
        original.httpAdditionalHeaders["X-A"] = "1"
        var copy = original
        #expect(copy == original)
        copy.httpAdditionalHeaders["X-A"] = "2"
        copy.timeoutIntervalForRequest = 5
        copy.proxy = .init(kind: .http, host: "proxy.example", port: 3128)
        #expect(original.httpAdditionalHeaders["X-A"] == "1")
        #expect(original.timeoutIntervalForRequest == 60)
        #expect(original.proxy == nil)
        #expect(copy != original)
        var same = SessionConfiguration.ephemeral
        same.httpAdditionalHeaders["X-A"] = "1"
        #expect(same == original)
        #expect(same.hashValue == original.hashValue)
    }

    /// ferryd stores a background session's configuration: the encoding has one key per setting, as
    /// before the settings were boxed (a stored configuration written then reads back now).
    @Test func encodesOneKeyPerSetting() throws {
        let configuration = SessionConfiguration.background(identifier: "id")
        let object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(configuration)) as? [String: Any]
        let keys = Set(object?.keys.map { $0 } ?? [])
        #expect(
            keys == [
                "kind", "requestCachePolicy", "timeoutIntervalForRequest", "timeoutIntervalForResource",
                "allowsCellularAccess", "allowsExpensiveNetworkAccess", "allowsConstrainedNetworkAccess",
                "waitsForConnectivity", "isDiscretionary", "sessionSendsLaunchEvents", "protocolHandlers",
                "tlsMinimumSupportedProtocolVersion", "tlsMaximumSupportedProtocolVersion", "tls",
                "httpVersionPreference", "httpShouldUsePipelining", "httpShouldSetCookies", "httpCookieAcceptPolicy",
                "httpAdditionalHeaders", "httpMaximumConnectionsPerHost", "httpCookieStorage", "urlCredentialStorage",
                "urlCache",
            ]
        )
        #expect(object?["timeoutIntervalForRequest"] as? Double == 60)
        #expect(object?["waitsForConnectivity"] as? Bool == true)
    }
}
