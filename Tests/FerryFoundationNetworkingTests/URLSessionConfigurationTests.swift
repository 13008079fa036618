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

    @Test func multipathAndDNSSECAreRefusedByNameAndKeptByCopies() async throws {
        let multipath = URLSessionConfiguration.ephemeral
        #expect(multipath.multipathServiceType == .none)
        #expect(multipath.requiresDNSSECValidation == false)
        #expect((try? multipath.ferryConfiguration().get()) != nil, "the defaults are accepted")
        multipath.multipathServiceType = .handover
        #expect((multipath.copy() as! URLSessionConfiguration).multipathServiceType == .handover)
        guard case .failure(let error) = multipath.ferryConfiguration() else {
            Issue.record("Multipath TCP was accepted")
            return
        }
        #expect(error.localizedDescription.contains("multipathServiceType"))
        let dnssec = URLSessionConfiguration.ephemeral
        dnssec.requiresDNSSECValidation = true
        #expect((dnssec.copy() as! URLSessionConfiguration).requiresDNSSECValidation)
        guard case .failure(let second) = dnssec.ferryConfiguration() else {
            Issue.record("DNSSEC validation was accepted")
            return
        }
        #expect(second.localizedDescription.contains("DNSSEC"))
        // A session made from it fails its tasks with that message, as for every refused setting.
        let session = URLSession(configuration: dnssec)
        defer { session.finishTasksAndInvalidate() }
        let failure = await withCheckedContinuation { (continuation: CheckedContinuation<(any Error)?, Never>) in
            session.dataTask(with: URL(string: "http://127.0.0.1:9/")!) { _, _, error in continuation.resume(returning: error) }
                .resume()
        }
        #expect(failure.map { "\($0.localizedDescription)" }?.contains("DNSSEC") == true, "\(String(describing: failure))")
    }
}
