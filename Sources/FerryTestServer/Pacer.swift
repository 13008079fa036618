/// The pacing of `throttle=B`: how much may be sent now, and how long to wait otherwise. Pure, so it is
/// tested without a clock; computed in floating point because rate × nanoseconds overflows Int64 within
/// seconds at high rates.
struct Pacer: Sendable, Hashable {
    /// Bytes a second.
    let rate: Int64

    /// The largest write: a twentieth of a second's worth (at least 1 byte), so the flow looks steady.
    func quantum(chunkSize: Int64) -> Int64 {
        max(1, min(chunkSize, rate / 20))
    }

    /// Seconds to wait before `count` more bytes may follow `sent`, `elapsed` seconds after the start;
    /// nil when they may go now.
    func delay(sent: Int64, count: Int64, elapsed: Double) -> Double? {
        let due = Double(sent + count) / Double(rate)
        return due > elapsed ? due - elapsed : nil
    }
}
