//! One step of a scenario, dispatched to the runner.

use std::time::Duration;

use serde_json::{Value, json};
use turnkit_core::{Agent, SessionHeader, SessionId};
use turnkit_jobs::{JobOutcome, TerminalStatus};
use turnkit_subagent::ChildAction;
use turnkit_testkit::{FakeProducer, OnCancel};

use super::clock::parse_instant;
use super::lines::push;
use super::state::{ClockMode, Runner};
use super::waiting::{TEARDOWN_HINT, blocked};
use crate::grammar::{CancelMode, FaultMode, Phase, SettleStatus, Step};

impl Runner {
    pub(super) async fn step(&mut self, line: usize, step: Step) -> Result<(), String> {
        self.steps_seen += 1;
        self.note_terminals();
        match step {
            Step::Config(config) => {
                if self.steps_seen != 1 {
                    return Err("config must be the first step".to_owned());
                }
                self.configure(Some(*config))?;
            }
            Step::Session { id, time_zone } => {
                let mut header = SessionHeader::new(id.as_str());
                header.time_zone = time_zone;
                self.host()?
                    .create_session(header)
                    .map_err(|e| e.to_string())?;
                self.live.push(SessionId::from(id));
            }
            Step::Fork { id, from } => {
                let id = SessionId::from(id);
                let from = SessionId::from(from);
                self.host()?
                    .fork_session(id.clone(), &from)
                    .map_err(|e| e.to_string())?;
                self.live.push(id);
            }
            Step::Dispose { session } => {
                let id = SessionId::from(session);
                let host = self.host()?;
                if host.memory_agent(&id).is_none() {
                    return Err(format!("no live agent for session {id}"));
                }
                let what = format!("dispose of session {id}");
                let stuck = blocked(&what, &format!("{TEARDOWN_HINT} first"));
                let registry = self.registry().ok();
                let disposal = host.dispose_agent(&id);
                self.until_done(registry, &what, stuck, disposal).await?;
                self.live.retain(|s| s != &id);
            }
            Step::Resume { session } => {
                let id = SessionId::from(session);
                let host = self.host()?;
                if host.memory_agent(&id).is_some() {
                    return Err(format!("session {id} already has a live agent"));
                }
                host.resume(&id).map_err(|e| e.to_string())?;
                self.live.push(id);
            }
            Step::Restart {} => self.restart().await?,
            Step::Turn { session, phase } => {
                let agent = self.agent(&session)?;
                match phase {
                    Phase::Start => agent.start_turn(),
                    Phase::End => agent.end_turn(),
                }
            }
            Step::User {
                session,
                text,
                client_time_zone,
            } => {
                let agent = self.agent(&session)?;
                agent
                    .send_user(&text, client_time_zone)
                    .map_err(|e| e.to_string())?;
            }
            Step::Call {
                tool,
                args,
                session,
                id,
                is_async,
            } => {
                let id = id.unwrap_or_else(|| format!("L{line}"));
                let session = session.map(SessionId::from);
                self.call(id, tool, args, session, is_async.unwrap_or(false))
                    .await?;
            }
            Step::Await { call: id } => {
                let mut handle = self
                    .calls
                    .remove(&id)
                    .ok_or_else(|| format!("no async call {id:?} is pending"))?;
                let what = format!("the await of call {id:?}");
                let stuck = blocked(
                    &what,
                    "advance the clock or settle the job before awaiting it",
                );
                let registry = self.registry().ok();
                match self.until_done(registry, &what, stuck, &mut handle).await {
                    Ok(joined) => joined.map_err(|e| format!("call {id:?} failed: {e}"))?,
                    Err(error) => {
                        // The run stops here: the call must not print after the error.
                        handle.abort();
                        return Err(error);
                    }
                }
            }
            Step::Advance { ms } => match &self.setup()?.clock_mode {
                ClockMode::Manual(clock) => {
                    let by = Duration::from_millis(ms);
                    if !clock.can_advance(by) {
                        return Err(format!(
                            "advance by {ms} ms leaves the representable time range"
                        ));
                    }
                    clock.advance(by).await;
                }
                ClockMode::System => {
                    return Err("advance needs the manual clock".to_owned());
                }
            },
            Step::SetClock { at } => {
                let at = parse_instant(&at)?;
                match &self.setup()?.clock_mode {
                    ClockMode::Manual(clock) => clock.set(at),
                    ClockMode::System => {
                        return Err("set_clock needs the manual clock".to_owned());
                    }
                }
            }
            Step::Fault {
                session,
                flush,
                append,
            } => {
                let faults = self.host()?.faults(&SessionId::from(session));
                if let Some(mode) = flush {
                    faults.set_flush_fail(mode == FaultMode::Fail);
                }
                if let Some(mode) = append {
                    faults.set_append_fail(mode == FaultMode::Fail);
                }
            }
            Step::Projection { session, key } => {
                let value = self
                    .host()?
                    .projections()
                    .view(&SessionId::from(session.as_str()), &key)
                    .map_or(Value::Null, |v| v.value);
                push(
                    &self.lines,
                    json!({"kind": "projection", "session": session, "key": key, "value": value})
                        .to_string(),
                );
            }
            Step::Log {
                session,
                event_type,
            } => {
                let id = SessionId::from(session.as_str());
                let host = self.host()?;
                let log = match host.memory_agent(&id) {
                    Some(agent) => agent.session(),
                    None => host.store().open(&id).map_err(|e| e.to_string())?,
                };
                let events: Vec<Value> = log
                    .events()
                    .into_iter()
                    .filter(|e| event_type.as_ref().is_none_or(|t| *t == e.r#type))
                    .map(|e| json!({"seq": e.seq, "type": e.r#type, "data": e.data}))
                    .collect();
                push(
                    &self.lines,
                    json!({"kind": "log", "session": session, "events": events}).to_string(),
                );
            }
            Step::ChildScript { prompt, steps } => {
                let actions = steps
                    .iter()
                    .map(ChildAction::from_json)
                    .collect::<Result<Vec<_>, _>>()?;
                self.setup()?.families.children.script(prompt, actions);
            }
            Step::FakeJob {
                session,
                kind,
                label,
                stream,
                output_limit_bytes,
                on_cancel,
            } => {
                let owner = self.owner(session.as_deref())?;
                let mut producer = FakeProducer::new(kind, label)
                    .stream(stream.unwrap_or(true))
                    .owner_opt(owner.as_ref().map(|a| a.as_dyn()));
                if let Some(limit) = output_limit_bytes {
                    producer = producer.output_limit_bytes(limit);
                }
                producer = producer.on_cancel(match on_cancel {
                    None | Some(CancelMode::Settle) => OnCancel::Settle,
                    Some(CancelMode::Hang) => OnCancel::Hang,
                    Some(CancelMode::Throw) => OnCancel::Throw("cancel failed".to_owned()),
                });
                self.fake_job(owner, producer)?;
            }
            Step::Emit { job, text } => self.fake(&job)?.emit(&text),
            Step::Settle {
                job,
                status,
                detail,
                output,
            } => {
                let job = self.fake(&job)?;
                let status = match status {
                    SettleStatus::Completed => TerminalStatus::Completed,
                    SettleStatus::Killed => TerminalStatus::Killed,
                    SettleStatus::Failed => TerminalStatus::Failed,
                };
                job.settle(JobOutcome {
                    status,
                    detail,
                    output,
                });
            }
            Step::Bash {
                session,
                command,
                output_limit_bytes,
            } => {
                self.bash(session.as_deref(), &command, output_limit_bytes)
                    .await?;
            }
            Step::Terminal { session, command } => {
                self.terminal(session.as_deref(), command.as_deref())?;
            }
            Step::AwaitJob { job, timeout_ms } => {
                self.await_job(job, Duration::from_millis(timeout_ms.unwrap_or(30_000)))
                    .await?;
            }
        }
        Ok(())
    }
}
