// Ferry is the public API: Session, configuration, tasks, delegates and async/await, for in-process
// sessions (FerryEngine) and background sessions (through ferryd). It lands with the issue "Engine and
// in-process sessions" (docs/ARCHITECTURE.md).
@_exported public import FerryCore
import FerryEngine
