//! Running async work to completion on a fresh runtime, whatever runtime the caller is on.

use std::panic::AssertUnwindSafe;

/// Why [`block_on_fresh`] produced no value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunFailure {
    /// No runtime could be built; the text is the builder's error.
    #[error("cannot start a runtime: {0}")]
    Runtime(String),
    /// The work panicked; the text is the panic's message (`unknown panic` when it has none).
    #[error("internal error: {0}")]
    Panic(String),
}

/// Runs `work` to completion on a fresh current-thread tokio runtime (all drivers enabled,
/// then `configure`d: the scenario runner pauses its clock) and returns its value.
///
/// A runtime cannot block from inside another, so when the caller is itself on a tokio
/// runtime the fresh one runs on a thread of its own and the caller's thread waits for it:
/// the functions built on this work from synchronous code and from async code alike. A panic
/// in `work` is caught and returned, never propagated.
///
/// # Errors
/// [`RunFailure`].
pub fn block_on_fresh<T, W>(
    configure: impl FnOnce(&mut tokio::runtime::Builder) + Send,
    work: W,
) -> Result<T, RunFailure>
where
    W: AsyncFnOnce() -> T + Send,
    T: Send,
{
    let run = move || {
        let mut builder = tokio::runtime::Builder::new_current_thread();
        builder.enable_all();
        configure(&mut builder);
        let runtime = builder
            .build()
            .map_err(|e| RunFailure::Runtime(e.to_string()))?;
        std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(work())))
            .map_err(|panic| RunFailure::Panic(panic_message(panic.as_ref())))
    };
    if tokio::runtime::Handle::try_current().is_err() {
        return run();
    }
    std::thread::scope(|scope| {
        scope
            .spawn(run)
            .join()
            .unwrap_or_else(|panic| Err(RunFailure::Panic(panic_message(panic.as_ref()))))
    })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}
