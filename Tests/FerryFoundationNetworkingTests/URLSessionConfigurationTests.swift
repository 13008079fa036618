@testable import FerryFoundationNetworking
import Foundation
import Testing

/// What a configuration becomes in Ferry's, or why it is refused.
@Suite struct URLSessionConfigurationTests {
    @Test func tlsVersionsReachFerrysConfiguration() throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.tlsMinimumSupportedProtocolVersion = .TLSv13
        let ferry = try configuration.ferryConfiguration().get()
        #expect(ferry.tlsMinimumSupportedProtocolVersion == .tlsv13)
        #expect(ferry.tlsMaximumSupportedProtocolVersion == .tlsv13)
        let copy = try #require(configuration.copy() as? URLSessionConfiguration)
        #expect(copy.tlsMinimumSupportedProtocolVersion == .TLSv13, "a copy keeps the version")
    }

    @Test func dtlsOrAnUpsideDownRangeIsRefusedByName() {
        let dtls = URLSessionConfiguration.ephemeral
        dtls.tlsMaximumSupportedProtocolVersion = .DTLSv12
        guard case .failure(let error) = dtls.ferryConfiguration() else {
            Issue.record("DTLS was accepted")
            return
        }
        #expect(error.localizedDescription.contains("DTLS"))
        let upsideDown = URLSessionConfiguration.ephemeral
        upsideDown.tlsMinimumSupportedProtocolVersion = .TLSv13
        upsideDown.tlsMaximumSupportedProtocolVersion = .TLSv12
        guard case .failure(let second) = upsideDown.ferryConfiguration() else {
            Issue.record("a minimum above the maximum was accepted")
            return
        }
        #expect(second.localizedDescription.contains("above"))
    }
}
