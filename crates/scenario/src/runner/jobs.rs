//! Jobs and terminals a step starts: fake jobs, real bash jobs, real terminals, and
//! `await_job`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use turnkit_core::Agent;
use turnkit_families::Families;
use turnkit_testkit::{FakeJob, FakeProducer, MemoryAgent, settle};

use super::lines::push;
use super::state::Runner;
use super::waiting::Settlement;

impl Runner {
    pub(super) fn registry(&mut self) -> Result<Arc<dyn turnkit_jobs::JobRegistry>, String> {
        self.setup()?
            .installed
            .as_ref()
            .map(Families::registry)
            .ok_or_else(|| "the job registry is not installed".to_owned())
    }

    pub(super) fn fake(&self, id: &str) -> Result<FakeJob, String> {
        self.jobs
            .get(id)
            .cloned()
            .ok_or_else(|| format!("no fake job {id:?}"))
    }

    pub(super) fn owner(
        &mut self,
        session: Option<&str>,
    ) -> Result<Option<Arc<MemoryAgent>>, String> {
        session.map(|session| self.agent(session)).transpose()
    }

    pub(super) fn insert_job_line(&self, mark: usize, id: &str, owner: Option<&Arc<MemoryAgent>>) {
        let session = owner.map_or(Value::Null, |a| json!(a.id().as_str()));
        let line = json!({"kind": "job", "id": id, "session": session}).to_string();
        let mut lines = turnkit_core::lock(&self.lines);
        let at = mark.min(lines.len());
        lines.insert(at, line);
    }

    pub(super) fn mark(&self) -> usize {
        turnkit_core::lock(&self.lines).len()
    }

    /// Starts a background bash job as the `bash` tool does: its command runs only after its
    /// start was saved (the owner's session flushed; `BashJobs::start_saved`).
    pub(super) async fn bash(
        &mut self,
        session: Option<&str>,
        command: &str,
        limit: Option<u64>,
    ) -> Result<(), String> {
        let owner = self.owner(session)?;
        let mark = self.mark();
        let setup = self.setup()?;
        let installed = setup
            .installed
            .as_ref()
            .ok_or_else(|| "the bash plugin is not installed".to_owned())?;
        let id = installed
            .bash()
            .ok_or_else(|| "the bash plugin is not installed".to_owned())?
            .jobs()
            .start_saved(owner.as_ref().map(|a| a.as_dyn()), command, limit)
            .await
            .map_err(|e| format!("the job was refused: {e}"))?;
        self.insert_job_line(mark, id.as_str(), owner.as_ref());
        self.owners
            .insert(id.as_str().to_owned(), owner.map(|a| a.id().clone()));
        Ok(())
    }

    /// Opens a real terminal (a PTY) for the step's session and prints a `terminal` line.
    pub(super) fn terminal(
        &mut self,
        session: Option<&str>,
        command: Option<&str>,
    ) -> Result<(), String> {
        let owner = self.owner(session)?;
        let setup = self.setup()?;
        let installed = setup
            .installed
            .as_ref()
            .ok_or_else(|| "the terminal plugin is not installed".to_owned())?;
        let id = installed
            .terminal()
            .ok_or_else(|| {
                "the terminal plugin is not installed (give the config step a \"terminal\" object)"
                    .to_owned()
            })?
            .terminals()
            .start(owner.as_ref().map(|a| a.as_dyn()), command)
            .map_err(|e| format!("the terminal was refused: {e}"))?;
        let session = owner
            .as_ref()
            .map_or(Value::Null, |a| json!(a.id().as_str()));
        push(
            &self.lines,
            json!({"kind": "terminal", "id": id.as_str(), "session": session}).to_string(),
        );
        Ok(())
    }

    /// Waits, in real time, for the job to settle (processes run in real time; tokio's clock
    /// is paused, so the time limit is kept by a watchdog thread), then lets the notice go
    /// out.
    pub(super) async fn await_job(&mut self, id: String, limit: Duration) -> Result<(), String> {
        let registry = self.registry()?;
        let job_id = turnkit_jobs::JobId::from(id.as_str());
        // Jobs started by a step have a known owner; one started by a tool call (`bash` with
        // `run_in_background`) belongs to whichever live session can see it.
        let caller = match self.owners.get(&id) {
            Some(owner) => owner.clone(),
            None => {
                let live: Vec<Option<turnkit_core::AgentId>> = std::iter::once(None)
                    .chain(
                        self.live
                            .iter()
                            .map(|s| Some(turnkit_core::AgentId::from(s))),
                    )
                    .collect();
                live.into_iter()
                    .find(|caller| registry.get(&job_id, caller.as_ref()).is_ok())
                    .flatten()
            }
        };
        let target = job_id.clone();
        let settlement = Settlement::watch(registry.as_ref(), move |id| *id == target);
        let terminal = registry
            .get(&job_id, caller.as_ref())
            .map_err(|e| format!("await_job {id:?}: {e}"))?
            .status
            .is_terminal();
        if !terminal && self.jobs.contains_key(&id) {
            // Nothing settles a fake job in real time: waiting could only run out the limit.
            return Err(format!(
                "job {id:?} is a fake job: only a later \"settle\" step can finish it"
            ));
        }
        if !terminal && !settlement.within(limit, std::future::pending()).await {
            return Err(format!(
                "job {id:?} did not finish within {}ms",
                limit.as_millis()
            ));
        }
        settle().await;
        Ok(())
    }

    pub(super) fn fake_job(
        &mut self,
        owner: Option<Arc<MemoryAgent>>,
        producer: FakeProducer,
    ) -> Result<(), String> {
        let (start, job) = producer.build();
        let registry = self.registry()?;
        let mark = self.mark();
        match registry.start(start) {
            Ok(id) => {
                self.insert_job_line(mark, id.as_str(), owner.as_ref());
                self.owners
                    .insert(id.as_str().to_owned(), owner.map(|a| a.id().clone()));
                self.jobs.insert(id.as_str().to_owned(), job);
                Ok(())
            }
            Err(error) => Err(format!("the job was refused: {error}")),
        }
    }

    /// Remembers every open terminal of the terminal family, so a wait can follow the end of
    /// one that a call stops (a stopped terminal leaves the family's table before its
    /// process has ended).
    pub(super) fn note_terminals(&mut self) {
        let Some(setup) = self.setup.as_ref() else {
            return;
        };
        let Some(terminals) = setup.installed.as_ref().and_then(Families::terminal) else {
            return;
        };
        let terminals = terminals.terminals();
        let callers: Vec<Option<turnkit_core::AgentId>> = std::iter::once(None)
            .chain(
                self.live
                    .iter()
                    .map(|s| Some(turnkit_core::AgentId::from(s))),
            )
            .collect();
        for id in terminals.ids() {
            if self.terminals.contains_key(id.as_str()) {
                continue;
            }
            if let Some(terminal) = callers
                .iter()
                .find_map(|caller| terminals.get(caller.as_ref(), id.as_str()).ok())
            {
                self.terminals.insert(id.as_str().to_owned(), terminal);
            }
        }
        self.terminals.retain(|_, terminal| !terminal.ended());
    }

    /// The remembered terminals that were told to stop and whose process has not ended yet.
    pub(super) fn ending_terminals(&mut self) -> Vec<turnkit_terminal::Terminal> {
        self.terminals.retain(|_, terminal| !terminal.ended());
        self.terminals
            .values()
            .filter(|terminal| terminal.stop_requested())
            .cloned()
            .collect()
    }
}
