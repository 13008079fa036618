/// HTTP dates in the IMF-fixdate form (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7), as whole seconds
/// since the Unix epoch. Written by hand because it is tiny and keeps the hot path free of formatters.
public enum HTTPDate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Formats seconds since the epoch as an IMF-fixdate.
    public static func format(_ seconds: Int64) -> String {
        let dayNumber = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - dayNumber * 86_400
        let (year, month, day) = civil(fromDays: dayNumber)
        let weekday = days[Int(((dayNumber % 7) + 7) % 7)]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekday), \(two(day)) \(months[Int(month) - 1]) \(year) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// Parses an IMF-fixdate; returns nil for anything else (the caller then ignores the header, RFC 9110).
    public static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), parts[5] == "GMT",
            let day = Int64(parts[1]), let monthIndex = months.firstIndex(of: String(parts[2])),
            let year = Int64(parts[3])
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let hour = Int64(clock[0]), let minute = Int64(clock[1]),
            let second = Int64(clock[2]), (1...9999).contains(year), (1...31).contains(day), (0..<24).contains(hour),
            (0..<60).contains(minute), (0...60).contains(second)
        else { return nil }
        let dayNumber = days(fromCivil: year, month: Int64(monthIndex + 1), day: day)
        return dayNumber * 86_400 + hour * 3600 + minute * 60 + second
    }

    // Howard Hinnant's days-from-civil and civil-from-days algorithms.
    private static func days(fromCivil year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays dayNumber: Int64) -> (Int64, Int64, Int64) {
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
