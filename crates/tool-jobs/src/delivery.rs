//! Completion notices (todo-jobs §5.7, §5.8, decision 12): building the notice, choosing the
//! lane (followup or inject), the per-owner wake budget, and moving a stranded notice to a
//! followup when its busy owner turns idle without claiming it.
//!
//! State is kept per exact owner instance and per install (mount). It holds the owner only
//! weakly; the owner's event subscription is made at the first notice under `wakeup`
//! delivery and dropped when the owner is disposed or the mount is uninstalled.

use std::sync::{Arc, Mutex, Weak};

use turnkit_core::{
    Agent, AgentEvent, AgentStatus, MessageSource, Registration, Subject, UserMessage, lock,
    same_agent,
};
use turnkit_jobs::{
    BoxError, JobDoneListener, JobNotice, JobNoticeListener, JobSnapshot, JobsLostListener,
    ListenerFuture,
};

use crate::config::CompletionDelivery;
use crate::fit::{NoticeParts, fit_notice};
use crate::public::PublicJob;
use crate::text::{PLUGIN_NAME, lost_notice_line, notice_summary};

/// The completion notice for a terminal `snapshot` (todo-jobs §5.7 steps 2–3): the
/// user-role message with one text block (fitted to the job's `outputLimitBytes`) and the
/// source `{plugin:"tool-jobs", form:"notice", summary}`, the summary cut to 120 characters.
pub fn notice_message(snapshot: &JobSnapshot) -> UserMessage {
    let job = PublicJob::from_snapshot(snapshot);
    let line = job.status_line();
    let parts = NoticeParts {
        id: &job.id,
        kind: &job.kind,
        label: job.label.as_str(),
        status_line: &line,
    };
    let text = fit_notice(&parts, snapshot.output_limit_bytes);
    let summary = notice_summary(&job.kind, &job.label, &line);
    UserMessage::text(
        text,
        MessageSource::Plugin {
            plugin: PLUGIN_NAME.to_owned(),
            form: Some("notice".to_owned()),
            summary: Some(summary),
        },
    )
    .about(vec![Subject::job(snapshot.id.as_str())])
}

/// The lost-jobs notice for `lost` (the job journal, todo-jobs §5.9): one user-role message
/// with a line per job, e.g. `background job <id> (<kind>: <label>) was lost <status line>.
/// Its output went with the stopped host.` (the three forms, by the job's detail, are in
/// `docs/spec/todo-jobs.md` §5.9), joined by `\n`, and the source
/// `{plugin:"tool-jobs", form:"notice", summary}`, the summary being the jobs' notice
/// summaries joined by `; `, cut to 120 characters. Not byte-capped.
pub fn lost_notice_message(lost: &[JobSnapshot]) -> UserMessage {
    let jobs: Vec<PublicJob> = lost.iter().map(PublicJob::from_snapshot).collect();
    let text = jobs
        .iter()
        .map(|job| {
            let detail = job.detail.as_deref();
            lost_notice_line(&job.id, &job.kind, &job.label, detail, &job.status_line())
        })
        .collect::<Vec<_>>()
        .join("\n");
    let summary = jobs
        .iter()
        .map(|job| format!("{} {} {}", job.kind, job.label, job.status_line()))
        .collect::<Vec<_>>()
        .join("; ");
    UserMessage::text(
        text,
        MessageSource::Plugin {
            plugin: PLUGIN_NAME.to_owned(),
            form: Some("notice".to_owned()),
            summary: Some(turnkit_core::summarize_chars(
                &summary,
                crate::text::SUMMARY_MAX_CHARS,
            )),
        },
    )
    .about(
        lost.iter()
            .map(|snapshot| Subject::job(snapshot.id.as_str()))
            .collect(),
    )
}

/// The message for `notice`, raised by the running job of `snapshot`: one text block
/// `background job <id> (<kind>: <label>) says: <text>` and the source
/// `{plugin:"tool-jobs", form:"update", summary}` (the summary `<kind> <label>: <text>`, cut to
/// 120 characters), about [`Subject::JobNotice`] (the job id and the notice's key).
pub fn running_notice_message(snapshot: &JobSnapshot, notice: &JobNotice) -> UserMessage {
    let job = PublicJob::from_snapshot(snapshot);
    let text = format!(
        "background job {} ({}: {}) says: {}",
        job.id,
        job.kind,
        job.label.as_str(),
        notice.text
    );
    let summary = format!("{} {}: {}", job.kind, job.label.as_str(), notice.text);
    UserMessage::text(
        text,
        MessageSource::Plugin {
            plugin: PLUGIN_NAME.to_owned(),
            form: Some("update".to_owned()),
            summary: Some(turnkit_core::summarize_chars(
                &summary,
                crate::text::SUMMARY_MAX_CHARS,
            )),
        },
    )
    .about(vec![Subject::job_notice(
        snapshot.id.as_str(),
        notice.key.as_str(),
    )])
}

/// Per-owner state of one mount.
struct OwnerState {
    owner: Weak<dyn Agent>,
    /// Wakes spent since the owner last claimed a user-authored message.
    spent: u64,
    /// Ids of notices injected while the owner was busy and not claimed yet (decision 12).
    stranded: Vec<String>,
    /// The owner's event subscription (only under `wakeup`).
    subscription: Option<Registration>,
}

#[derive(Default)]
struct Owners {
    entries: Vec<OwnerState>,
    /// Subscriptions of disposed owners, dropped later outside the owner's listener call.
    retired: Vec<Registration>,
    closed: bool,
}

/// The completion-notice reporter of one mount.
pub(crate) struct Reporter {
    delivery: CompletionDelivery,
    max_wakes: u64,
    owners: Mutex<Owners>,
    me: Weak<Reporter>,
}

/// Which lane a notice takes.
enum Lane {
    Followup,
    Inject { track: bool },
}

impl Reporter {
    pub(crate) fn new(delivery: CompletionDelivery, max_wakes: u64) -> Arc<Self> {
        Arc::new_cyclic(|me| Reporter {
            delivery,
            max_wakes,
            owners: Mutex::new(Owners::default()),
            me: me.clone(),
        })
    }

    /// The `on_job_done` listener of this mount.
    pub(crate) fn listener(self: &Arc<Self>) -> JobDoneListener {
        let me = Arc::downgrade(self);
        Arc::new(
            move |snapshot: &JobSnapshot,
                  owner: Option<&Arc<dyn Agent>>|
                  -> Result<Option<ListenerFuture>, BoxError> {
                match me.upgrade() {
                    Some(reporter) => reporter.on_done(snapshot, owner),
                    None => Ok(None),
                }
            },
        )
    }

    /// The `on_jobs_lost` listener of this mount: the lost-jobs notice, delivered like a
    /// completion notice (lane, wake budget, quiet mode). `Ok(Some(message id))` once handed
    /// over.
    pub(crate) fn lost_listener(self: &Arc<Self>) -> JobsLostListener {
        let me = Arc::downgrade(self);
        Arc::new(
            move |lost: &[JobSnapshot],
                  owner: &Arc<dyn Agent>|
                  -> Result<Option<String>, BoxError> {
                match me.upgrade() {
                    Some(reporter) if !lost.is_empty() => {
                        let message = lost_notice_message(lost);
                        let id = message.id.clone();
                        Ok(reporter.deliver(owner, message)?.then_some(id))
                    }
                    _ => Ok(None),
                }
            },
        )
    }

    /// The `on_job_notice` listener of this mount: a running job's notice, delivered like a
    /// completion notice (lane, wake budget, quiet mode) to the job's owner.
    pub(crate) fn notice_listener(self: &Arc<Self>) -> JobNoticeListener {
        let me = Arc::downgrade(self);
        Arc::new(
            move |snapshot: &JobSnapshot,
                  owner: Option<&Arc<dyn Agent>>,
                  notice: &JobNotice|
                  -> Result<(), BoxError> {
                match (me.upgrade(), owner) {
                    (Some(reporter), Some(owner)) => {
                        reporter.deliver(owner, running_notice_message(snapshot, notice))?;
                        Ok(())
                    }
                    _ => Ok(()),
                }
            },
        )
    }

    /// Drops every owner subscription; later settlements deliver nothing.
    pub(crate) fn close(&self) {
        let (entries, retired) = {
            let mut owners = lock(&self.owners);
            owners.closed = true;
            (
                std::mem::take(&mut owners.entries),
                std::mem::take(&mut owners.retired),
            )
        };
        drop(entries);
        drop(retired);
    }

    fn on_done(
        &self,
        snapshot: &JobSnapshot,
        owner: Option<&Arc<dyn Agent>>,
    ) -> Result<Option<ListenerFuture>, BoxError> {
        let Some(owner) = owner else {
            return Ok(None);
        };
        if snapshot.reported {
            return Ok(None);
        }
        self.deliver(owner, notice_message(snapshot))?;
        Ok(None)
    }

    /// Hands `message` to `owner` in the lane §5.7 step 4 chooses; `Ok(false)` once the
    /// mount is closed (nothing delivered).
    fn deliver(&self, owner: &Arc<dyn Agent>, message: UserMessage) -> Result<bool, BoxError> {
        let Some(lane) = self.choose_lane(owner, &message.id) else {
            return Ok(false);
        };
        match lane {
            Lane::Followup => owner.followup(message)?,
            Lane::Inject { track } => {
                let id = message.id.clone();
                if let Err(error) = owner.inject(message) {
                    if track {
                        self.untrack(owner, &id);
                    }
                    return Err(error.into());
                }
            }
        }
        Ok(true)
    }

    /// Step 4 of §5.7, committing the budget and (under `wakeup`, for a busy owner) tracking
    /// the notice id before the message is handed over. `None` once the mount is closed.
    fn choose_lane(&self, owner: &Arc<dyn Agent>, message_id: &str) -> Option<Lane> {
        if self.delivery == CompletionDelivery::Quiet {
            return (!lock(&self.owners).closed).then_some(Lane::Inject { track: false });
        }
        if !self.ensure_entry(owner) {
            return None;
        }
        let status = owner.status();
        let mut owners = lock(&self.owners);
        if owners.closed {
            return None;
        }
        let max_wakes = self.max_wakes;
        let entry = owners
            .entries
            .iter_mut()
            .find(|entry| is_owner(entry, owner))?;
        let lane = if status == AgentStatus::Idle && entry.spent < max_wakes {
            entry.spent += 1;
            Lane::Followup
        } else if status == AgentStatus::Running {
            // Tracked before the inject so that a claim during the call is not missed.
            entry.stranded.push(message_id.to_owned());
            Lane::Inject { track: true }
        } else {
            Lane::Inject { track: false }
        };
        Some(lane)
    }

    /// Makes sure `owner` has an entry with an event subscription. Subscribing and dropping
    /// stale subscriptions happen outside this mount's lock, so an agent that emits events
    /// while holding its own lock cannot deadlock with us. `false` once the mount is closed.
    fn ensure_entry(&self, owner: &Arc<dyn Agent>) -> bool {
        let (known, stale) = {
            let mut owners = lock(&self.owners);
            if owners.closed {
                return false;
            }
            let mut stale = std::mem::take(&mut owners.retired);
            let (live, dead): (Vec<OwnerState>, Vec<OwnerState>) =
                std::mem::take(&mut owners.entries)
                    .into_iter()
                    .partition(|entry| entry.owner.strong_count() > 0);
            owners.entries = live;
            stale.extend(
                dead.into_iter()
                    .filter_map(|mut entry| entry.subscription.take()),
            );
            let known = owners.entries.iter().any(|entry| is_owner(entry, owner));
            (known, stale)
        };
        drop(stale);
        if known {
            return true;
        }
        let weak_owner = Arc::downgrade(owner);
        let me = self.me.clone();
        let listener_owner = weak_owner.clone();
        let subscription = owner.subscribe(Arc::new(move |event: &AgentEvent| {
            if let Some(reporter) = me.upgrade() {
                reporter.on_agent_event(&listener_owner, event);
            }
        }));
        let mut owners = lock(&self.owners);
        if owners.closed {
            drop(owners);
            drop(subscription);
            return false;
        }
        if owners.entries.iter().any(|entry| is_owner(entry, owner)) {
            drop(owners);
            drop(subscription);
            return true;
        }
        owners.entries.push(OwnerState {
            owner: weak_owner,
            spent: 0,
            stranded: Vec::new(),
            subscription: Some(subscription),
        });
        true
    }

    fn untrack(&self, owner: &Arc<dyn Agent>, message_id: &str) {
        let mut owners = lock(&self.owners);
        if let Some(entry) = owners
            .entries
            .iter_mut()
            .find(|entry| is_owner(entry, owner))
        {
            entry.stranded.retain(|id| id != message_id);
        }
    }

    fn on_agent_event(&self, owner: &Weak<dyn Agent>, event: &AgentEvent) {
        match event {
            AgentEvent::InboxClaimed { message, .. } => {
                let mut owners = lock(&self.owners);
                if let Some(entry) = find_entry(&mut owners, owner) {
                    entry.stranded.retain(|id| *id != message.id);
                    if message.source.is_user() {
                        entry.spent = 0;
                    }
                }
            }
            AgentEvent::Status(AgentStatus::Idle) => self.on_idle(owner),
            AgentEvent::Status(AgentStatus::Running) => {}
            AgentEvent::Disposed => {
                let mut owners = lock(&self.owners);
                let Some(index) = owners
                    .entries
                    .iter()
                    .position(|entry| same_agent(&entry.owner, owner))
                else {
                    return;
                };
                let mut entry = owners.entries.remove(index);
                if let Some(subscription) = entry.subscription.take() {
                    owners.retired.push(subscription);
                }
            }
        }
    }

    /// Decision 12: the owner turned idle while notices injected during its turn are still
    /// unclaimed. The oldest one that can still be withdrawn becomes a followup (one woken
    /// turn, which also claims the others), if the wake budget allows; otherwise they stay
    /// injected, exactly like a notice delivered after the budget was spent.
    fn on_idle(&self, owner: &Weak<dyn Agent>) {
        let Some(agent) = owner.upgrade() else {
            return;
        };
        let candidates = {
            let mut owners = lock(&self.owners);
            if owners.closed {
                return;
            }
            let max_wakes = self.max_wakes;
            let Some(entry) = find_entry(&mut owners, owner) else {
                return;
            };
            if entry.stranded.is_empty() {
                return;
            }
            let candidates = std::mem::take(&mut entry.stranded);
            if entry.spent >= max_wakes {
                return;
            }
            candidates
        };
        for id in candidates {
            let Some(message) = agent.withdraw_injected(&id) else {
                continue;
            };
            {
                let mut owners = lock(&self.owners);
                if let Some(entry) = find_entry(&mut owners, owner) {
                    entry.spent += 1;
                }
            }
            if let Err(error) = agent.followup(message) {
                tracing::warn!(
                    "tool-jobs: could not wake {} for notice {id}: {error}",
                    agent.id()
                );
            }
            return;
        }
    }
}

fn is_owner(entry: &OwnerState, owner: &Arc<dyn Agent>) -> bool {
    entry
        .owner
        .upgrade()
        .is_some_and(|known| same_agent(&known, owner))
}

fn find_entry<'a>(owners: &'a mut Owners, owner: &Weak<dyn Agent>) -> Option<&'a mut OwnerState> {
    owners
        .entries
        .iter_mut()
        .find(|entry| same_agent(&entry.owner, owner))
}

#[cfg(test)]
#[path = "delivery_tests.rs"]
mod tests;
