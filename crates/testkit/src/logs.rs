//! Capturing `tracing` output in tests without the process-wide interest race.
//!
//! `tracing` caches, per callsite and for the whole process, whether any subscriber is
//! interested in it. A test that installs a thread-local subscriber (`set_default`) races every
//! concurrent test thread that hits the same callsite with no subscriber: the cache may say
//! "never" and the capture stays empty. [`LogCapture`] avoids the race instead of repairing it:
//! one process-wide subscriber is installed once and is interested in every callsite at `INFO`
//! and above; each capture routes the lines formatted on its own thread into its buffer, and
//! lines from threads with no capture are dropped.

use std::cell::RefCell;
use std::io::Write;
use std::sync::{Arc, Mutex, Once};

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::FmtSpan;

thread_local! {
    static SINK: RefCell<Option<Arc<Mutex<Vec<u8>>>>> = const { RefCell::new(None) };
}

static INSTALL: Once = Once::new();

/// The formatted `tracing` lines emitted on this thread while the capture lives.
///
/// Lines have no time and no target, are not coloured, and span closings are reported as one
/// `close` line with the span's fields (`INFO harness.job{job.id=bash-1 …}: close`, followed by
/// ` time.busy=… time.idle=…`). Tests that run on a current-thread runtime see every line their
/// futures emit. Only one capture may be alive on a thread at a time; a newer one replaces the
/// older one's routing.
#[derive(Debug)]
pub struct LogCapture {
    buffer: Arc<Mutex<Vec<u8>>>,
}

impl LogCapture {
    /// Starts capturing this thread's lines. The first call in a process installs the
    /// process-wide subscriber; if another global subscriber is already installed, nothing is
    /// captured (and the test's assertions say so).
    pub fn start() -> Self {
        INSTALL.call_once(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_span_events(FmtSpan::CLOSE)
                .with_ansi(false)
                .without_time()
                .with_target(false)
                .with_writer(ThreadSink)
                .finish();
            // An error means a global subscriber exists already: leave it in place.
            let _ = tracing::subscriber::set_global_default(subscriber);
        });
        let buffer: Arc<Mutex<Vec<u8>>> = Arc::default();
        SINK.with(|sink| *sink.borrow_mut() = Some(buffer.clone()));
        Self { buffer }
    }

    /// Everything captured so far, as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&turnkit_core::lock(&self.buffer)).into_owned()
    }
}

impl Drop for LogCapture {
    fn drop(&mut self) {
        SINK.with(|sink| {
            let mut sink = sink.borrow_mut();
            if sink
                .as_ref()
                .is_some_and(|buffer| Arc::ptr_eq(buffer, &self.buffer))
            {
                *sink = None;
            }
        });
    }
}

/// The process-wide subscriber's writer: the calling thread's capture buffer, if any.
#[derive(Clone, Copy)]
struct ThreadSink;

impl<'a> MakeWriter<'a> for ThreadSink {
    type Writer = ThreadSink;

    fn make_writer(&'a self) -> Self::Writer {
        ThreadSink
    }
}

impl Write for ThreadSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        SINK.with(|sink| {
            if let Some(buffer) = sink.borrow().as_ref() {
                turnkit_core::lock(buffer).extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
