public import Foundation

/// Dates in `Set-Cookie`'s Expires attribute, parsed as RFC 6265bis §5.1.1 says (the forgiving algorithm
/// browsers share: any order of tokens, two-digit years, extra text after each part).
public enum CookieDate {
    /// The date `text` names, or nil when it names none (a part missing or out of range, a day the
    /// month does not have, a year before 1601).
    public static func parse(_ text: String) -> Date? {
        var time: (Int, Int, Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        for token in tokens(Array(text.utf8)) {
            if time == nil, let found = hmsTime(token) {
                time = found
            } else if day == nil, let found = leadingDigits(token, minimum: 1, maximum: 2) {
                day = found
            } else if month == nil, let found = monthNumber(token) {
                month = found
            } else if year == nil, let found = leadingDigits(token, minimum: 2, maximum: 4) {
                year = found
            }
        }
        guard var year, let month, let day, let (hour, minute, second) = time else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard (1...31).contains(day), year >= 1601, hour <= 23, minute <= 59, second <= 59 else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        // A day the month does not have (Feb 30) fails rather than rolling over.
        guard components.isValidDate(in: calendar), let date = calendar.date(from: components) else { return nil }
        return date
    }

    /// §5.1.1's delimiter: %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E.
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte) || (0x5B...0x60).contains(byte)
            || (0x7B...0x7E).contains(byte)
    }

    private static func tokens(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        bytes.split(whereSeparator: isDelimiter)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    /// `minimum` to `maximum` digits, then nothing or a non-digit and anything.
    private static func leadingDigits(_ token: ArraySlice<UInt8>, minimum: Int, maximum: Int) -> Int? {
        let digits = token.prefix(while: isDigit)
        guard (minimum...maximum).contains(digits.count) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// hms-time = time-field ":" time-field ":" time-field (1*2DIGIT each), then a non-digit and anything.
    private static func hmsTime(_ token: ArraySlice<UInt8>) -> (Int, Int, Int)? {
        var fields: [Int] = []
        var rest = token[...]
        for index in 0..<3 {
            let digits = rest.prefix(while: isDigit)
            guard (1...2).contains(digits.count) else { return nil }
            fields.append(digits.reduce(0) { $0 * 10 + Int($1 - 0x30) })
            rest = rest.dropFirst(digits.count)
            if index < 2 {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                rest = rest.dropFirst()
            } else if let next = rest.first, isDigit(next) {
                return nil
            }
        }
        return (fields[0], fields[1], fields[2])
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// A token that starts with a month's three letters (any case).
    private static func monthNumber(_ token: ArraySlice<UInt8>) -> Int? {
        guard token.count >= 3 else { return nil }
        let prefix = String(decoding: token.prefix(3), as: UTF8.self).lowercased()
        return months.firstIndex(of: prefix).map { $0 + 1 }
    }
}
