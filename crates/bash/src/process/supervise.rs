//! The supervisor task: reaps the shell, escalates a cancel from SIGTERM to SIGKILL, waits
//! for the pipes, then publishes the end.

use std::os::unix::process::ExitStatusExt as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::future::BoxFuture;
use rustix::process::Signal;
use tokio::process::Child;
use tokio::task::AbortHandle;
use tokio_util::task::AbortOnDropHandle;
use turnkit_core::{Clock, lock};

use super::end::{EndStatus, ProcessEnd};
use super::shared::{KillOnDrop, Shared};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Running,
    /// SIGTERM sent; the timer runs to SIGKILL.
    Terminating,
    /// SIGKILL sent; the timer runs to abandoning the pipes.
    Killed,
    /// The pipes were abandoned; nothing more to do.
    Abandoned,
}

struct Escalation {
    stage: Stage,
    timer: Option<BoxFuture<'static, ()>>,
    grace: Duration,
    clock: Arc<dyn Clock>,
}

impl Escalation {
    async fn next_deadline(&mut self) {
        match &mut self.timer {
            Some(timer) => timer.await,
            None => std::future::pending().await,
        }
    }

    fn on_cancel(&mut self, shared: &Shared) {
        if self.stage == Stage::Running {
            shared.signal_group(Signal::TERM);
            self.stage = Stage::Terminating;
            self.timer = Some(self.clock.sleep(self.grace));
        }
    }

    fn on_deadline(&mut self, shared: &Shared, readers: &[AbortHandle; 2]) {
        match self.stage {
            Stage::Terminating => {
                shared.signal_group(Signal::KILL);
                self.stage = Stage::Killed;
                self.timer = Some(self.clock.sleep(self.grace));
            }
            Stage::Killed => {
                // Something outside the group (a daemonized grandchild) still holds a
                // pipe: stop reading so the job can settle.
                tracing::warn!("bash: pipes still open after SIGKILL; abandoning them");
                for reader in readers {
                    reader.abort();
                }
                self.stage = Stage::Abandoned;
                self.timer = None;
            }
            Stage::Running | Stage::Abandoned => self.timer = None,
        }
    }

    /// The task set is shutting down: SIGKILL to the whole tree now and stop reading the
    /// pipes, so the supervisor ends as soon as the shell is reaped.
    fn on_shutdown(&mut self, shared: &Shared, readers: &[AbortHandle; 2]) {
        shared.signal_group(Signal::KILL);
        for reader in readers {
            reader.abort();
        }
        self.stage = Stage::Abandoned;
        self.timer = None;
    }
}

/// Reaps the shell, escalates a cancel, waits for both pipes to close, then publishes the
/// end. The shutdown of the process's task set ends it early (SIGKILL, pipes abandoned, and
/// no grace waited for).
pub(super) async fn supervise(
    mut child: Child,
    shared: Arc<Shared>,
    readers: [AbortOnDropHandle<()>; 2],
    grace: Duration,
    clock: Arc<dyn Clock>,
) {
    let cancel = shared.cancel.clone();
    let stopped = shared.tasks.stopped();
    tokio::pin!(stopped);
    let mut shut = false;
    let aborts = [readers[0].abort_handle(), readers[1].abort_handle()];
    let mut escalation = Escalation {
        stage: Stage::Running,
        timer: None,
        grace,
        clock,
    };
    let waited = loop {
        tokio::select! {
            status = child.wait() => break status,
            () = cancel.cancelled(), if escalation.stage == Stage::Running => {
                escalation.on_cancel(&shared);
            }
            () = escalation.next_deadline() => escalation.on_deadline(&shared, &aborts),
            () = &mut stopped, if !shut => {
                shut = true;
                escalation.on_shutdown(&shared, &aborts);
            }
        }
    };
    let status = match waited {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => EndStatus::Exited(code),
            (None, Some(signal)) => EndStatus::Signaled(signal),
            (None, None) => EndStatus::Lost(format!("unrecognised exit status {status}")),
        },
        Err(error) => EndStatus::Lost(format!("waiting for bash failed: {error}")),
    };
    // Grandchildren may still hold the pipes: the job runs until they close them, and a
    // cancel meanwhile still reaches (and escalates on) the whole group.
    let mut pipes = futures::future::join_all(readers);
    loop {
        tokio::select! {
            _ = &mut pipes => break,
            () = cancel.cancelled(), if escalation.stage == Stage::Running => {
                escalation.on_cancel(&shared);
            }
            () = escalation.next_deadline() => escalation.on_deadline(&shared, &aborts),
            () = &mut stopped, if !shut => {
                shut = true;
                escalation.on_shutdown(&shared, &aborts);
            }
        }
    }
    let cancel_requested = cancel.is_cancelled();
    shared.finished.store(true, Ordering::SeqCst);
    {
        let mut streams = lock(&shared.streams);
        streams.stdout.close();
        streams.stderr.close();
    }
    shared.end.send_replace(Some(ProcessEnd {
        status,
        cancel_requested,
    }));
    shared.output_ready.notify_one();
    // A cancelled command whose pipes closed within the grace may have left processes that
    // ignore SIGTERM: they still get SIGKILL when the grace ends.
    if escalation.stage == Stage::Terminating && shared.tree.has_members() {
        let last_resort = KillOnDrop(shared.tree.clone());
        drop(shared);
        if !shut {
            tokio::select! {
                () = escalation.next_deadline() => {}
                () = stopped => {}
            }
        }
        drop(last_resort);
    }
}
