public import Foundation

/// HTTP dates (RFC 9110 §5.6.7), strictly: the one parser the cache (`Expires`, `Date`,
/// `Last-Modified`), retries (`Retry-After`), `ferry get -R` and the test server share.
///
/// Accepted are exactly the three forms the RFC names, as it spells them:
/// - IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT` (the only form written);
/// - the obsolete RFC 850 form, `Sunday, 06-Nov-94 08:49:37 GMT`, its two-digit year taken as the
///   latest year with those digits that is not more than 50 years after now;
/// - the obsolete asctime form, `Sun Nov  6 08:49:37 1994`.
///
/// Anything else is not a date: another zone (`UTC`, `+0000`, `AEST`), a two-digit year in the first
/// form, a missing comma, doubled spaces, a one-digit hour, a day past the month's end. A cache must
/// then treat `Expires` as already past (RFC 9111 §5.3), and a `Retry-After` is ignored. The day name
/// must be one of the form's, but need not agree with the date (as browsers and curl read it).
/// Cookies keep their own lenient algorithm (``CookieDate``, RFC 6265 §5.1.1).
///
/// Written by hand rather than with `DateFormatter`: a formatter is not strict about spaces and zones,
/// and building one per call (as `Retry-After` did) cost more than the whole parse.
public enum HTTPDate {
    private static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `seconds` since the Unix epoch as an IMF-fixdate.
    public static func format(_ seconds: Int64) -> String {
        let dayNumber = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - dayNumber * 86_400
        let (year, month, day) = civil(fromDays: dayNumber)
        // 1970-01-01 was a Thursday (index 3 from Monday).
        let weekday = shortDays[Int(((dayNumber + 3) % 7 + 7) % 7)]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let paddedYear = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(weekday), \(two(day)) \(months[Int(month) - 1]) \(paddedYear) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// `date` as an IMF-fixdate (to the second, rounded down).
    public static func format(_ date: Date) -> String {
        format(Int64(date.timeIntervalSince1970.rounded(.down)))
    }

    /// The date `text` names, in any of the three forms; nil when it is none of them.
    /// - Parameter now: what an RFC 850 date's two-digit year is read against.
    public static func date(_ text: String, now: Date = Date()) -> Date? {
        parse(text, now: now).map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }

    /// Seconds since the Unix epoch of the date `text` names, in any of the three forms; nil when it is
    /// none of them.
    /// - Parameter now: what an RFC 850 date's two-digit year is read against.
    public static func parse(_ text: String, now: Date = Date()) -> Int64? {
        var reader = Reader(Array(text.utf8))
        let parsed: Parts?
        if text.utf8.count == 29, text.utf8.dropFirst(3).first == UInt8(ascii: ",") {
            parsed = reader.imfFixdate()
        } else if text.utf8.count == 24 {
            parsed = reader.asctime()
        } else {
            parsed = reader.rfc850(now: now)
        }
        guard let parts = parsed, reader.atEnd else { return nil }
        return parts.seconds
    }

    // MARK: Parsing

    private struct Parts {
        var year: Int64
        var month: Int64
        var day: Int64
        var hour: Int64
        var minute: Int64
        var second: Int64

        /// Seconds since the epoch, or nil when a field is out of its range.
        var seconds: Int64? {
            guard (1...9999).contains(year), (1...12).contains(month), (1...HTTPDate.length(ofMonth: month, year: year)).contains(day),
                (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
            else { return nil }
            return HTTPDate.days(fromCivil: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }

        mutating func literal(_ text: String) -> Bool {
            for byte in text.utf8 {
                guard index < bytes.count, bytes[index] == byte else { return false }
                index += 1
            }
            return true
        }

        /// Exactly `count` digits.
        mutating func digits(_ count: Int) -> Int64? {
            guard index + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + count] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            index += count
            return value
        }

        /// One of `names`, case-sensitive as the grammar is; its index.
        mutating func oneOf(_ names: [String]) -> Int? {
            for (position, name) in names.enumerated() {
                let start = index
                if literal(name) { return position }
                index = start
            }
            return nil
        }

        /// `HH:MM:SS`.
        mutating func time() -> (Int64, Int64, Int64)? {
            guard let hour = digits(2), literal(":"), let minute = digits(2), literal(":"), let second = digits(2) else {
                return nil
            }
            return (hour, minute, second)
        }

        /// `Sun, 06 Nov 1994 08:49:37 GMT`
        mutating func imfFixdate() -> Parts? {
            guard oneOf(HTTPDate.shortDays) != nil, literal(", "), let day = digits(2), literal(" "),
                let month = oneOf(HTTPDate.months), literal(" "), let year = digits(4), literal(" "),
                let (hour, minute, second) = time(), literal(" GMT")
            else { return nil }
            return Parts(year: year, month: Int64(month + 1), day: day, hour: hour, minute: minute, second: second)
        }

        /// `Sunday, 06-Nov-94 08:49:37 GMT`
        mutating func rfc850(now: Date) -> Parts? {
            guard oneOf(HTTPDate.longDays) != nil, literal(", "), let day = digits(2), literal("-"),
                let month = oneOf(HTTPDate.months), literal("-"), let twoDigits = digits(2), literal(" "),
                let (hour, minute, second) = time(), literal(" GMT")
            else { return nil }
            // RFC 9110 §5.6.7: a year more than 50 years in the future is the most recent past one.
            let thisYear = HTTPDate.civil(fromDays: Int64((now.timeIntervalSince1970 / 86_400).rounded(.down))).year
            var year = thisYear - thisYear % 100 + twoDigits
            if year > thisYear + 50 { year -= 100 }
            return Parts(year: year, month: Int64(month + 1), day: day, hour: hour, minute: minute, second: second)
        }

        /// `Sun Nov  6 08:49:37 1994` (the day is two digits, or a space and one).
        mutating func asctime() -> Parts? {
            guard oneOf(HTTPDate.shortDays) != nil, literal(" "), let month = oneOf(HTTPDate.months), literal(" ") else {
                return nil
            }
            let day: Int64
            if literal(" ") {
                guard let single = digits(1) else { return nil }
                day = single
            } else {
                guard let double = digits(2) else { return nil }
                day = double
            }
            guard literal(" "), let (hour, minute, second) = time(), literal(" "), let year = digits(4) else { return nil }
            return Parts(year: year, month: Int64(month + 1), day: day, hour: hour, minute: minute, second: second)
        }
    }

    // MARK: Calendar (proleptic Gregorian, UTC)

    static func length(ofMonth month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's days-from-civil and civil-from-days algorithms.
    static func days(fromCivil year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a day counted from 1970-01-01 (also the store's timestamps).
    package static func civil(fromDays dayNumber: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = dayNumber + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
