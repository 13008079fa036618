import FerryCore
import Foundation
import GRDB

/// A time as the store writes it: GRDB's own text form of a `Date` (`yyyy-MM-dd HH:mm:ss.SSS`, UTC,
/// to the nearest millisecond), so it reads back as a `Date` and compares in SQL exactly as GRDB's would.
///
/// Why not bind the `Date` itself: GRDB formats every `Date` it binds through a shared `DateFormatter`,
/// that is ICU, at 3–5 µs a time. A task creation binds three (the session's registration, `createdAt`,
/// `updatedAt`): a profile of ferryd under four submitting clients put ICU and Foundation's formatter
/// at 3–4% of ferryd's CPU. This writes the same characters with integer arithmetic; `StoreTimeTests`
/// checks them against GRDB's for dates across the calendar.
struct StoreTime: DatabaseValueConvertible {
    let date: Date

    init(_ date: Date) { self.date = date }

    var databaseValue: DatabaseValue { Self.text(date).databaseValue }

    static func fromDatabaseValue(_ dbValue: DatabaseValue) -> StoreTime? {
        Date.fromDatabaseValue(dbValue).map(StoreTime.init)
    }

    /// `date` as GRDB stores it. Years before 1600 (where ICU's calendar turns Julian) and after 9999
    /// (which four digits cannot hold) are left to GRDB's formatter.
    static func text(_ date: Date) -> String {
        // As Foundation hands the date to ICU: milliseconds since 1970 as a Double, half a millisecond
        // added, then floored (the nearest millisecond).
        let milliseconds = ((date.timeIntervalSinceReferenceDate + 978_307_200) * 1000 + 0.5).rounded(.down)
        // 1600-01-01 and 10000-01-01 in milliseconds since 1970.
        guard milliseconds.isFinite, milliseconds >= -11_676_096_000_000, milliseconds < 253_402_300_800_000 else {
            return String.fromDatabaseValue(date.databaseValue) ?? ""
        }
        let total = Int64(milliseconds)
        let (days, millisecondOfDay) = floorDivision(total, 86_400_000)
        let (year, month, day) = HTTPDate.civil(fromDays: days)
        let hour = millisecondOfDay / 3_600_000
        let minute = millisecondOfDay / 60_000 % 60
        let second = millisecondOfDay / 1000 % 60
        let millisecond = millisecondOfDay % 1000
        var bytes = [UInt8]()
        bytes.reserveCapacity(23)
        append(year, digits: 4, then: "-", to: &bytes)
        append(month, digits: 2, then: "-", to: &bytes)
        append(day, digits: 2, then: " ", to: &bytes)
        append(hour, digits: 2, then: ":", to: &bytes)
        append(minute, digits: 2, then: ":", to: &bytes)
        append(second, digits: 2, then: ".", to: &bytes)
        append(millisecond, digits: 3, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let quotient = value / divisor - (value % divisor < 0 ? 1 : 0)
        return (quotient, value - quotient * divisor)
    }

    /// `value` in `digits` decimal digits, then `separator` if one is given.
    private static func append(_ value: Int64, digits: Int, then separator: Unicode.Scalar? = nil, to bytes: inout [UInt8]) {
        var divisor: Int64 = 1
        for _ in 1..<digits { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
        if let separator { bytes.append(UInt8(ascii: separator)) }
    }
}
