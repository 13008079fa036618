// Ferry is the public API: Session, configuration, tasks, delegates and async/await. In-process sessions
// run on FerryEngine; background sessions go through ferryd (docs/ARCHITECTURE.md).
@_exported public import FerryCore
