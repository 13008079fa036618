import Foundation
public import Logging

/// A swift-log handler that writes one JSON object a line: `time` (RFC 3339, milliseconds, UTC),
/// `level`, `label`, `message`, and the metadata's fields at the top level (`session`, `task`, …), so
/// that `jq 'select(.task == 3)'` finds one task's story.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let output: @Sendable (String) -> Void

    /// A handler for `label` at `level` whose lines go to `output` (each ends with a newline).
    public init(label: String, level: Logger.Level, output: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.logLevel = level
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [String: Any] = [
            "time": Self.timestamp(Date()),
            "level": event.level.rawValue,
            "label": label,
            "message": "\(event.message)",
        ]
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        for (key, value) in merged where fields[key] == nil { fields[key] = Self.json(value) }
        if event.level >= .warning { fields["source"] = "\(event.file.split(separator: "/").last ?? ""):\(event.line)" }
        guard
            let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes]),
            let text = String(data: data, encoding: .utf8)
        else { return }
        output(text + "\n")
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible):
            // Numbers stay numbers in the JSON.
            if let number = convertible as? Int { number } else { convertible.description }
        case .array(let values): values.map(json)
        case .dictionary(let values): values.mapValues(json)
        }
    }

    private static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true).timeSeparator(.colon).timeZone(separator: .omitted))
    }
}
