//! Running work on a fresh paused runtime, whatever runtime the caller is on.

use std::panic::AssertUnwindSafe;

/// Why [`block_on_paused`] produced no value.
pub(crate) enum RunFailure {
    /// No runtime could be built; the text is the builder's error.
    Runtime(String),
    /// The work panicked; the text is the panic's message (`unknown panic` when it has none).
    Panic(String),
}

/// Runs `work` to completion on a fresh current-thread tokio runtime whose clock is paused
/// (so "let all work that can proceed finish" is exact), and returns its value.
///
/// A runtime cannot block from inside another, so when the caller is itself on a tokio
/// runtime the fresh one runs on a thread of its own and the caller's thread waits for it:
/// the functions built on this work from synchronous code and from async code alike. A
/// panic in `work` is caught and returned, never propagated.
pub(crate) fn block_on_paused<T, W>(work: W) -> Result<T, RunFailure>
where
    W: AsyncFnOnce() -> T + Send,
    T: Send,
{
    let run = move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
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
