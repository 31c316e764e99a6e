//! Reads and waits (todo-jobs §4.4–§4.5): `list`, `get`, the consuming `read`, the
//! observers' `read_at` (decision 8) and `wait`.

use std::{panic::AssertUnwindSafe, panic::catch_unwind, sync::Mutex, time::Duration};

use futures::FutureExt;
use futures::channel::oneshot;
use tokio_util::sync::CancellationToken;
use turnkit_core::{AgentId, lock};
use turnkit_jobs::{JobError, JobId, JobRead, JobReadAt, JobSnapshot};

use super::{MAX_WAIT, Shared};
use crate::{state::Record, state::Stream, state::Waiter};

fn call_read(stream: &Mutex<Stream>) -> Result<String, JobError> {
    let mut stream = lock(stream);
    let pulled = match catch_unwind(AssertUnwindSafe(|| (stream.read)())) {
        Ok(result) => result.map_err(JobError::Producer)?,
        Err(_) => return Err(JobError::Producer("producer read_output panicked".into())),
    };
    Ok(stream.history.consume(pulled))
}

fn call_read_at(stream: &Mutex<Stream>, cursor: u64) -> Result<(String, bool, u64), JobError> {
    let mut stream = lock(stream);
    let pulled = match catch_unwind(AssertUnwindSafe(|| (stream.read)())) {
        Ok(result) => result.map_err(JobError::Producer)?,
        Err(_) => return Err(JobError::Producer("producer read_output panicked".into())),
    };
    stream.history.append(&pulled);
    Ok(stream.history.text_from(cursor))
}
impl Shared {
    pub(super) fn list(&self, caller: Option<&AgentId>) -> Vec<JobSnapshot> {
        let state = lock(&self.state);
        state
            .records
            .visible(caller)
            .into_iter()
            .map(Record::snapshot)
            .collect()
    }

    pub(super) fn get(
        &self,
        id: &JobId,
        caller: Option<&AgentId>,
    ) -> Result<JobSnapshot, JobError> {
        let mut state = lock(&self.state);
        Ok(state.find(id, caller)?.snapshot())
    }

    pub(super) fn read(&self, id: &JobId, caller: Option<&AgentId>) -> Result<JobRead, JobError> {
        let stream = {
            let mut state = lock(&self.state);
            let record = state.find(id, caller)?;
            match &record.stream {
                Some(stream) => stream.clone(),
                None => {
                    let terminal = record.status.is_terminal();
                    let text = match (&record.output, terminal) {
                        (Some(output), true) => String::from(&**output),
                        _ => String::new(),
                    };
                    if terminal {
                        record.reported = true;
                    }
                    return Ok(JobRead {
                        text,
                        snapshot: record.snapshot(),
                    });
                }
            }
        };
        let text = call_read(&stream)?;
        let mut state = lock(&self.state);
        let record = state
            .records
            .get_mut(id)
            .ok_or_else(|| JobError::UnknownJob(id.clone()))?;
        if record.status.is_terminal() {
            record.reported = true;
        }
        Ok(JobRead {
            text,
            snapshot: record.snapshot(),
        })
    }

    pub(super) fn read_at(
        &self,
        id: &JobId,
        cursor: u64,
        caller: Option<&AgentId>,
    ) -> Result<JobReadAt, JobError> {
        let stream = {
            let mut state = lock(&self.state);
            let record = state.find(id, caller)?;
            match &record.stream {
                Some(stream) => stream.clone(),
                None => {
                    let output = match (&record.output, record.status.is_terminal()) {
                        (Some(output), true) => &**output,
                        _ => "",
                    };
                    let start = usize::try_from(cursor)
                        .unwrap_or(usize::MAX)
                        .min(output.len());
                    let start = output.ceil_char_boundary(start);
                    return Ok(JobReadAt {
                        text: output[start..].to_owned(),
                        next_cursor: output.len() as u64,
                        dropped: false,
                        snapshot: record.snapshot(),
                    });
                }
            }
        };
        let (text, dropped, end) = call_read_at(&stream, cursor)?;
        let state = lock(&self.state);
        let record = state
            .records
            .get(id)
            .ok_or_else(|| JobError::UnknownJob(id.clone()))?;
        Ok(JobReadAt {
            text,
            next_cursor: end,
            dropped,
            snapshot: record.snapshot(),
        })
    }

    pub(super) async fn wait(
        &self,
        id: &JobId,
        timeout: Duration,
        caller: Option<&AgentId>,
        cancel: Option<CancellationToken>,
    ) -> Result<JobSnapshot, JobError> {
        let sh = self;
        let (waiter_id, resolved) = {
            let mut state = lock(&sh.state);
            let state = &mut *state;
            let waiter_id = state.next_waiter_id();
            let record = state.find(id, caller)?;
            if timeout.is_zero() {
                return Err(JobError::invalid_wait_timeout(0.0));
            }
            if record.status.is_terminal() {
                record.reported = true;
                return Ok(record.snapshot());
            }
            if cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                return Err(JobError::WaitAborted);
            }
            let (resolve, resolved) = oneshot::channel();
            record.waiters.get_or_insert_default().push(Waiter {
                id: waiter_id,
                cancel: cancel.clone(),
                resolve,
            });
            (waiter_id, resolved)
        };
        let sleep = sh.clock.sleep(timeout.min(MAX_WAIT));
        let aborted = async {
            match &cancel {
                Some(cancel) => cancel.cancelled().await,
                None => futures::future::pending().await,
            }
        };
        tokio::pin!(resolved, sleep, aborted);
        let woke = tokio::select! {
            biased;
            result = &mut resolved => Woke::Settled(result),
            () = &mut aborted => Woke::Aborted,
            () = &mut sleep => Woke::TimedOut,
        };
        let settled = match woke {
            Woke::Settled(Ok(snapshot)) => Some(snapshot),
            // Dropped unsent: the settlement saw this wait already aborted.
            Woke::Settled(Err(_)) => return Err(JobError::WaitAborted),
            Woke::Aborted | Woke::TimedOut => {
                let still_waiting = {
                    let mut state = lock(&sh.state);
                    match state.records.get_mut(id) {
                        Some(record) => match &mut record.waiters {
                            Some(waiters) => {
                                let before = waiters.len();
                                waiters.retain(|w| w.id != waiter_id);
                                waiters.len() != before
                            }
                            None => false,
                        },
                        None => false,
                    }
                };
                // A settlement may have released this wait in the meantime; it wins.
                let released = if still_waiting {
                    None
                } else {
                    resolved.as_mut().now_or_never().and_then(Result::ok)
                };
                match (woke, released) {
                    (_, Some(snapshot)) => Some(snapshot),
                    (Woke::Aborted, None) => return Err(JobError::WaitAborted),
                    _ => None,
                }
            }
        };
        let mut state = lock(&sh.state);
        match state.records.get_mut(id) {
            Some(record) => {
                if record.status.is_terminal() {
                    record.reported = true;
                }
                Ok(record.snapshot())
            }
            None => settled.ok_or_else(|| JobError::UnknownJob(id.clone())),
        }
    }
}

/// What ended a wait.
enum Woke {
    Settled(Result<JobSnapshot, oneshot::Canceled>),
    Aborted,
    TimedOut,
}
