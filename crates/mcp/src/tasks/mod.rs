//! Tasks (the MCP tasks extension, `io.modelcontextprotocol/tasks`) for background work and
//! reminders, kept in the session log so they outlive the server process.
//!
//! A tool call that declared the extension in its own `_meta` opens a task when the families
//! say its result does ([`turnkit_families::task_target`]: it started a background job, or
//! created a reminder), or when it waits on a job in a way the families let move to a task
//! ([`turnkit_families::waited_target`]) for longer than [`WAIT_BOUND`]. The task waits for
//! a [`turnkit_core::Subject`] and completes with the delivery about it: the job's completion
//! notice (or the notice that it was lost with its host) without its pointer to the output
//! ([`turnkit_families::task_notice`]), followed by the job's final output
//! ([`turnkit_families::final_output`]); or the reminder the schedule queues first after the
//! task opened. While the client keeps polling, that
//! delivery is kept from tool results (see the inbox's holds); the `tasks/get` response that
//! carries it claims it (`mcp/taskDelivered`) once written, so it never reaches a later tool
//! result too. A task nobody polls for a while (three poll intervals, at least ten seconds)
//! or whose TTL passed lets its delivery go to the next tool result, as without tasks.
//!
//! A completed task's result is a tool result: `isError: true` when the final output that
//! ends it is an error (the job is unknown to the registry, say), `false` otherwise; a task
//! is never `failed`, which the extension keeps for protocol errors. A task whose TTL passed
//! is forgotten with its hold: `tasks/get`, `tasks/update` and `tasks/cancel` answer
//! "unknown task" (`tasks/cancel` kills nothing then), and a restarted server does not load
//! it. A completed result prepared for a `tasks/get` response that was never written is
//! prepared again by the next poll, so its messages, owed again, reach that poll or, once
//! the client stops polling, a tool result.
//!
//! Nothing here knows the transport: the MCP handlers turn these answers into protocol
//! values.

pub(crate) mod protocol;
pub(crate) mod state;

use turnkit_core::{ToolOutput, format_instant};

pub(crate) use state::{Completion, Entry, Target, Tasks};
pub use state::{JOB_TASK_TTL, TASK_CANCELLED_EVENT, TASK_EVENT};

use crate::inbox::{TaskDelivered, TaskRefused};
use crate::session::SessionHost;

/// How often a client should poll a job's task.
pub(crate) const JOB_POLL_MS: u64 = 500;
/// A reminder's task is kept this long past the reminder's due time.
pub(crate) const REMINDER_TTL_PAST_DUE_MS: u64 = 3_600_000;
/// The poll interval of a reminder's task is a twentieth of the time left, within these.
const REMINDER_POLL_MIN_MS: u64 = 500;
const REMINDER_POLL_MAX_MS: u64 = 30_000;
/// A job that settled this long ago with no notice owed (one delivered with an earlier tool
/// result) completes its task with its final output alone.
const NOTICE_GRACE_MS: i64 = 2_000;

/// How long a wait on a job that declared the tasks extension runs before it is answered
/// with a task for the job instead.
pub(crate) const WAIT_BOUND: std::time::Duration = std::time::Duration::from_secs(1);

/// Where a task stands, as `tasks/get` answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TaskState {
    Working,
    /// The completed result.
    Completed(Completion),
    Cancelled,
}

/// A `tasks/get` answer: the task, its state, the poll interval to suggest now and, for a
/// completed result not written before, the inbox reservation to commit once it is.
#[derive(Clone, Debug)]
pub(crate) struct TaskView {
    pub(crate) entry: Entry,
    pub(crate) state: TaskState,
    pub(crate) poll_ms: u64,
    pub(crate) reservation: Option<u64>,
}

/// The poll interval of a reminder's task `left_ms` before it is due.
pub(crate) fn reminder_poll_ms(left_ms: i64) -> u64 {
    (u64::try_from(left_ms).unwrap_or(0) / 20).clamp(REMINDER_POLL_MIN_MS, REMINDER_POLL_MAX_MS)
}

/// A prepared delivery whose messages another result took: the rest of its content (a job's
/// final output, read once and not again), claiming nothing; `None` when nothing is left (a
/// reminder's task prepares again from what is owed).
fn without_taken(delivery: TaskDelivered) -> Option<TaskDelivered> {
    let TaskDelivered {
        task_id,
        seqs,
        content,
        is_error,
    } = delivery;
    let rest: Vec<String> = content.into_iter().skip(seqs.len()).collect();
    (!rest.is_empty()).then_some(TaskDelivered {
        task_id,
        seqs: Vec::new(),
        content: rest,
        is_error,
    })
}

/// What the answer of tool `name` asks a task to wait for, if anything (the families say).
fn target_of(name: &str, output: &ToolOutput) -> Option<Target> {
    turnkit_families::task_target(name, output).and_then(|target| Target::of(&target.subject))
}

impl SessionHost {
    /// Opens the task the answer `output` of tool `name` asks for (see the module docs):
    /// records `mcp/task` and makes it durable. `None` when the answer starts nothing to
    /// wait for, or the record could not be made durable (the call is then answered as
    /// without tasks).
    pub(crate) async fn open_task(&self, name: &str, output: &ToolOutput) -> Option<Entry> {
        let target = target_of(name, output)?;
        self.open_target(target).await
    }

    /// Runs the call `answer`. When it waits on `waited` (a wait the families let move to a
    /// task: [`turnkit_families::waited_target`]) and outlasts [`WAIT_BOUND`], the call is
    /// cancelled through `call_ct` (the wait is aborted before it consumed anything) and, if
    /// its answer is that abort (`aborted` says an answer is an error), a task for the job is
    /// opened: `Err` with the task and the text the model is shown at once. A settlement
    /// that released the wait first answers as usual, as does a task that could not be
    /// opened.
    pub(crate) async fn bound_wait<A>(
        &self,
        answer: impl Future<Output = A>,
        waited: Option<(turnkit_families::TaskTarget, String)>,
        call_ct: &tokio_util::sync::CancellationToken,
        aborted: impl Fn(&A) -> bool,
    ) -> Result<A, (Entry, String)> {
        let Some((target, moved)) = waited else {
            return Ok(answer.await);
        };
        tokio::pin!(answer);
        tokio::select! {
            answer = &mut answer => Ok(answer),
            () = self.clock().sleep(WAIT_BOUND) => {
                call_ct.cancel();
                let answer = answer.await;
                if !aborted(&answer) {
                    return Ok(answer);
                }
                match Target::of(&target.subject) {
                    Some(target) => match self.open_target(target).await {
                        Some(entry) => Err((entry, moved)),
                        None => Ok(answer),
                    },
                    None => Ok(answer),
                }
            }
        }
    }

    async fn open_target(&self, target: Target) -> Option<Entry> {
        // The id is taken before any await, under the lock that keeps ids distinct.
        let id = self.tasks().reserve_id()?;
        let now = self.clock().now_millis();
        self.prune_tasks(now);
        let (ttl_ms, poll_ms) = match &target {
            Target::Job(_) => (self.job_task_ttl_ms(), JOB_POLL_MS),
            Target::Reminder { due, .. } => {
                let left = due.saturating_sub(now);
                (
                    u64::try_from(left)
                        .unwrap_or(0)
                        .saturating_add(REMINDER_TTL_PAST_DUE_MS),
                    reminder_poll_ms(left),
                )
            }
        };
        let Some(created) = chrono::DateTime::from_timestamp_millis(now) else {
            self.tasks().unreserve(&id);
            return None;
        };
        let mut entry = Entry {
            id,
            seq: 0,
            target,
            created_at: format_instant(created),
            created_ms: now,
            ttl_ms,
            poll_ms,
            delivered: None,
            cancelled: false,
            seen_ms: now,
            prepared: None,
        };
        let event = match self.log().append(TASK_EVENT, Tasks::event_data(&entry)) {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!("mcp: could not record a task: {error}");
                self.tasks().unreserve(&entry.id);
                return None;
            }
        };
        entry.seq = event.seq;
        if let Err(error) = self.log().flush().await {
            // The record stays pending and a later flush writes it: the id stays distinct
            // from every other task's, and the call is answered as without tasks.
            tracing::warn!("mcp: could not make a task durable: {error}");
            self.tasks().unreserve(&entry.id);
            return None;
        }
        if let Some(hold) = entry.hold() {
            self.owed().hold(hold);
        }
        self.tasks().push(entry.clone());
        Some(entry)
    }

    /// Forgets the tasks whose TTL has passed at `now`, with their holds.
    fn prune_tasks(&self, now: i64) {
        for id in self.tasks().prune(now) {
            self.owed().unhold(&id);
        }
    }

    /// Task `id` as it stands now, counting the request as interest (its delivery stays kept
    /// from tool results); `None` for a task this session never opened or whose TTL passed.
    fn touch_task(&self, id: &str, now: i64) -> Option<Entry> {
        self.prune_tasks(now);
        self.tasks().update(id, |e| e.seen_ms = now)
    }

    /// `tasks/update` of task `id`: acknowledged for a known task (this server asks no input
    /// of a task, so the responses it carries are ignored, as the extension says of keys it
    /// did not ask for); counts as interest, as a poll does.
    ///
    /// # Errors
    /// `unknown task: <id>` for a task this session never opened or whose TTL passed.
    pub(crate) fn update_task(&self, id: &str) -> Result<(), String> {
        let now = self.clock().now_millis();
        let entry = self
            .touch_task(id, now)
            .ok_or_else(|| format!("unknown task: {id}"))?;
        if let Some(hold) = entry.hold() {
            self.owed().hold(hold);
        }
        Ok(())
    }

    /// Task `id` as `tasks/get` answers it now; `None` for a task this session never opened
    /// or one whose TTL passed. Polling counts as interest: the task's delivery stays kept
    /// from tool results.
    pub(crate) async fn get_task(&self, id: &str) -> Option<TaskView> {
        let now = self.clock().now_millis();
        let entry = self.touch_task(id, now)?;
        let poll_ms = match &entry.target {
            Target::Job(_) => entry.poll_ms,
            Target::Reminder { due, .. } => reminder_poll_ms(due.saturating_sub(now)),
        };
        let view = |state, reservation| TaskView {
            entry: entry.clone(),
            state,
            poll_ms,
            reservation,
        };
        if let Some(completion) = &entry.delivered {
            return Some(view(TaskState::Completed(completion.clone()), None));
        }
        if entry.cancelled {
            return Some(view(TaskState::Cancelled, None));
        }
        if let Some(hold) = entry.hold() {
            self.owed().hold(hold);
        }
        let mut prepared = entry.prepared.clone();
        // Twice at most: a prepared delivery whose message another result took since (its
        // response was dropped, then the client stopped polling) is made again without it.
        for _ in 0..2 {
            let delivery = match prepared.take() {
                Some(delivery) => delivery,
                None => match self.prepare(&entry, now).await {
                    Some(delivery) => delivery,
                    None => return Some(view(TaskState::Working, None)),
                },
            };
            self.tasks()
                .update(id, |e| e.prepared = Some(delivery.clone()));
            match self.owed().reserve_task(delivery.clone()) {
                Ok(key) => {
                    let completion = Completion::from(&delivery);
                    return Some(view(TaskState::Completed(completion), Some(key)));
                }
                // Another response carries it now; a later poll completes.
                Err(TaskRefused::Carried) => return Some(view(TaskState::Working, None)),
                Err(TaskRefused::Stale) => {
                    prepared = without_taken(delivery);
                    self.tasks().update(id, |e| e.prepared = prepared.clone());
                }
            }
        }
        Some(view(TaskState::Working, None))
    }

    /// The completed result of `entry`, if what it waits for has happened.
    async fn prepare(&self, entry: &Entry, now: i64) -> Option<TaskDelivered> {
        let found = self.owed().find(&entry.target.subject(), entry.seq);
        let delivery = |seqs: Vec<u64>, (content, is_error): (Vec<String>, bool)| TaskDelivered {
            task_id: entry.id.clone(),
            seqs,
            content,
            is_error,
        };
        match (&entry.target, found) {
            // A tool result being written carries it.
            (_, Some((_, true))) => None,
            (Target::Reminder { .. }, Some((pending, false))) => Some(delivery(
                vec![pending.seq],
                (vec![pending.message.joined_text()], false),
            )),
            (Target::Reminder { .. }, None) => None,
            (Target::Job(_), Some((pending, false))) => {
                let (output, is_error) = self.final_output(&entry.target).await;
                let notice = turnkit_families::task_notice(
                    &entry.target.subject(),
                    &pending.message.joined_text(),
                );
                let mut content = vec![notice];
                content.extend(output);
                Some(delivery(vec![pending.seq], (content, is_error)))
            }
            (Target::Job(job), None) => {
                let snapshot = self.job_registry().get(
                    &turnkit_jobs::JobId::from(job.as_str()),
                    Some(self.agent_id()),
                );
                match snapshot {
                    Ok(snapshot) if snapshot.status.is_terminal() => {
                        let settled = snapshot.finished_at.unwrap_or(now);
                        let quiet =
                            snapshot.reported || now.saturating_sub(settled) >= NOTICE_GRACE_MS;
                        if !quiet {
                            return None;
                        }
                        Some(delivery(Vec::new(), self.final_output(&entry.target).await))
                    }
                    Ok(_) => None,
                    // The registry does not know the job (a restart without the journal):
                    // the task completes with the error, as a tool error.
                    Err(error) => Some(delivery(Vec::new(), (vec![error.to_string()], true))),
                }
            }
        }
    }

    /// The text blocks of the final output that ends a task for `target`, as the model would
    /// get them, and whether that result is an error (the families render it; a target with
    /// no final output gives no block).
    async fn final_output(&self, target: &Target) -> (Vec<String>, bool) {
        let registry = self.job_registry();
        let Some(output) = turnkit_families::final_output(
            registry.as_ref(),
            &target.subject(),
            Some(self.agent_id()),
        ) else {
            return (Vec::new(), false);
        };
        if let Err(error) = self.log().flush().await {
            tracing::warn!("mcp: could not flush a task's final output: {error}");
        }
        let texts = output
            .content
            .iter()
            .map(|block| block.as_text().to_owned())
            .collect();
        (texts, output.is_error)
    }

    /// `tasks/cancel` of task `id`: a job's task stops the job (the families'
    /// [`turnkit_families::cancel_target`]: the job is killed); a reminder's task stops waiting (the reminder stays scheduled and arrives with a later tool
    /// result). Records `mcp/taskCancelled`; a task already completed or cancelled is left
    /// as it is. A task whose TTL passed is unknown: its job is left running.
    ///
    /// # Errors
    /// `unknown task: <id>` for a task this session never opened or whose TTL passed.
    pub(crate) async fn cancel_task(&self, id: &str) -> Result<(), String> {
        let now = self.clock().now_millis();
        let entry = self
            .touch_task(id, now)
            .ok_or_else(|| format!("unknown task: {id}"))?;
        if entry.delivered.is_some() || entry.cancelled {
            return Ok(());
        }
        let registry = self.job_registry();
        let stopped = turnkit_families::cancel_target(
            registry.as_ref(),
            &entry.target.subject(),
            Some(self.agent_id()),
        );
        if let Some(stopped) = stopped.filter(|output| output.is_error) {
            let text = turnkit_core::join_text(&stopped.content);
            tracing::warn!("mcp: tasks/cancel {id}: {text}");
        }
        self.log()
            .append(TASK_CANCELLED_EVENT, Tasks::cancelled_data(id))
            .map_err(|e| e.to_string())?;
        self.tasks().update(id, |e| e.cancelled = true);
        self.owed().unhold(id);
        self.log().flush().await.map_err(|e| e.to_string())
    }

    /// A task delivery was written: the task is completed for good.
    pub(crate) fn task_delivered(&self, delivered: &TaskDelivered) {
        self.tasks().update(&delivered.task_id, |e| {
            e.delivered = Some(Completion::from(delivered));
            e.prepared = None;
        });
    }
}
