import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM while a command runs: the first one cancels the running work (which then saves
/// what it can, e.g. a download's resume record) instead of killing the process outright.
/// `@unchecked`: the signal sources are set once in `init` and only kept alive; the rest is atomic or
/// under a mutex.
final class Interruption: @unchecked Sendable {
    private let flag = Atomic<Bool>(false)
    private let cancel = Mutex<(@Sendable () -> Void)?>(nil)
    private var sources: [any DispatchSourceSignal] = []

    /// Installs the handlers.
    init() {
        var made: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                flag.store(true, ordering: .relaxed)
                cancel.withLock { $0 }?()
            }
            source.resume()
            made.append(source)
        }
        sources = made
    }

    /// Whether a signal arrived.
    var happened: Bool { flag.load(ordering: .relaxed) }

    /// What a signal cancels (a Swift task's `cancel`).
    func onSignal(_ action: @escaping @Sendable () -> Void) {
        cancel.withLock { $0 = action }
        if happened { action() }
    }
}
