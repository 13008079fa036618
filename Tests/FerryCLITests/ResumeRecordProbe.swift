import FerryCore
import Foundation

@testable import FerryCLI

/// Builds ``ResumeRecord``s (internal to FerryCLI) for the tests.
enum ResumeRecordProbe {
    struct Record {
        let record: ResumeRecord
        var trustedBytes: Int64? { record.trustworthy?.bytesReceived }
    }

    static var currentBootID: String? { ResumeRecord.currentBootID }

    static func make(bootID: String?, written: Int64, durable: Int64) -> Record {
        let data = ResumeData(
            originalRequest: Request(url: URL(string: "http://h/f")!),
            currentRequest: Request(url: URL(string: "http://h/f")!),
            bytesReceived: written,
            expectedLength: 1000,
            entityTag: "\"v1\"",
            lastModified: nil,
            partialFilePath: "/tmp/f.ferry-part"
        )
        return Record(record: ResumeRecord(bootID: bootID, resumeData: data, durableBytes: durable))
    }
}
