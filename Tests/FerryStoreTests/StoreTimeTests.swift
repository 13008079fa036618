import Foundation
import GRDB
import Testing

@testable import FerryStore

/// The store's own text for a time is character for character GRDB's, so rows written either way read
/// back and compare alike.
@Suite struct StoreTimeTests {
    @Test func theTextIsGRDBsForDatesAcrossTheCalendar() throws {
        var generator = SystemRandomNumberGenerator()
        var dates: [Date] = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -0.0005), Date(timeIntervalSince1970: 0.9995),
            Date(timeIntervalSince1970: 951_782_400), // 2000-02-29
            Date(timeIntervalSince1970: 4_107_542_399.999), // 2100-02-28 23:59:59.999
            Date(timeIntervalSince1970: -11_676_096_000), // 1600-01-01
            Date(timeIntervalSince1970: 253_402_300_799.999), // 9999-12-31 23:59:59.999
            Date(timeIntervalSince1970: -12_000_000_000), // 1589: GRDB's own formatter
            Date(), Date.distantPast, Date.distantFuture,
        ]
        for _ in 0..<2000 {
            dates.append(Date(timeIntervalSince1970: Double.random(in: -11_676_096_000...253_402_300_799, using: &generator)))
            dates.append(Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_000_000_000_000, using: &generator)) / 1000))
        }
        for date in dates {
            let grdb = String.fromDatabaseValue(date.databaseValue)
            #expect(StoreTime.text(date) == grdb, "\(date.timeIntervalSince1970)")
        }
    }

    @Test func aStoredTimeReadsBackAsGRDBsDate() throws {
        let queue = try DatabaseQueue()
        let date = Date(timeIntervalSince1970: 1_795_000_123.4567)
        let read = try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (at DATETIME)")
            try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [StoreTime(date)])
            return try Date.fetchOne(db, sql: "SELECT at FROM t")
        }
        #expect(read == Date.fromDatabaseValue(date.databaseValue))
    }
}
