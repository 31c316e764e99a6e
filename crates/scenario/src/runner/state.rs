//! The runner's state and the host the `config` step sets up.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;
use turnkit_core::{Clock, JsonlStore, MemoryStore, SessionId, SessionStore};
use turnkit_families::{Families, FamiliesConfig};
use turnkit_testkit::{FakeJob, HostRecord, ManualClock, MemoryHarness, Recorder};

use super::clock::{RealTimeClock, parse_instant};
use super::lines::{push, record_line};
use crate::grammar::{ClockKind, Config, StoreKind};
use crate::plugins::FamilySetup;

pub(super) enum ClockMode {
    Manual(ManualClock),
    System,
}

pub(super) struct Setup {
    pub(super) clock_mode: ClockMode,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) _dir: Option<tempfile::TempDir>,
    pub(super) host: Arc<MemoryHarness>,
    pub(super) installed: Option<Families>,
    pub(super) families: FamilySetup,
}

pub(super) struct Runner {
    pub(super) lines: Arc<Mutex<Vec<String>>>,
    pub(super) setup: Option<Setup>,
    pub(super) steps_seen: usize,
    pub(super) calls: HashMap<String, JoinHandle<()>>,
    pub(super) jobs: HashMap<String, FakeJob>,
    /// The owner of every job a step started, for fenced lookups.
    pub(super) owners: HashMap<String, Option<turnkit_core::AgentId>>,
    /// Sessions with a live agent, in publication order (restart republishes these).
    pub(super) live: Vec<SessionId>,
    /// The terminals seen open, by id, until their process ended (see `note_terminals`).
    pub(super) terminals: HashMap<String, turnkit_terminal::Terminal>,
}

impl Runner {
    pub(super) fn new(lines: Arc<Mutex<Vec<String>>>) -> Self {
        Self {
            lines,
            setup: None,
            steps_seen: 0,
            calls: HashMap::new(),
            jobs: HashMap::new(),
            owners: HashMap::new(),
            live: Vec::new(),
            terminals: HashMap::new(),
        }
    }

    pub(super) fn recorder(&self) -> Recorder {
        let lines = self.lines.clone();
        Arc::new(move |record: HostRecord| push(&lines, record_line(&record)))
    }

    pub(super) fn configure(&mut self, config: Option<Config>) -> Result<(), String> {
        let mut families = FamiliesConfig::default();
        let mut clock_mode = ClockMode::Manual(ManualClock::at_default());
        let mut jsonl = false;
        let mut auto_turns = true;
        if let Some(Config {
            families: config,
            clock,
            store,
            auto_turns: turns,
        }) = config
        {
            families = config;
            if let Some(clock) = clock {
                clock_mode = match clock.mode {
                    Some(ClockKind::Manual) | None => ClockMode::Manual(match &clock.start {
                        None => ManualClock::at_default(),
                        Some(start) => ManualClock::new(parse_instant(start)?),
                    }),
                    Some(ClockKind::System) => ClockMode::System,
                };
            }
            jsonl = store == Some(StoreKind::Jsonl);
            auto_turns = turns.unwrap_or(true);
        }
        let clock: Arc<dyn Clock> = match &clock_mode {
            ClockMode::Manual(clock) => Arc::new(clock.clone()),
            ClockMode::System => Arc::new(RealTimeClock),
        };
        let (store, dir): (Arc<dyn SessionStore>, _) = if jsonl {
            let dir = tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?;
            let store = JsonlStore::new(dir.path(), clock.clone()).map_err(|e| e.to_string())?;
            (Arc::new(store), Some(dir))
        } else {
            (Arc::new(MemoryStore::new(clock.clone())), None)
        };
        let host = MemoryHarness::with_store(store.clone(), clock.clone());
        host.set_auto_turns(auto_turns);
        host.set_recorder(self.recorder());
        let families = FamilySetup::new(families);
        let installed = families.install(&host)?;
        self.setup = Some(Setup {
            clock_mode,
            clock,
            store,
            _dir: dir,
            host,
            installed: Some(installed),
            families,
        });
        Ok(())
    }

    pub(super) fn setup(&mut self) -> Result<&mut Setup, String> {
        if self.setup.is_none() {
            self.configure(None)?;
        }
        self.setup
            .as_mut()
            .ok_or_else(|| "the scenario host is not set up".to_owned())
    }

    pub(super) fn host(&mut self) -> Result<Arc<MemoryHarness>, String> {
        Ok(self.setup()?.host.clone())
    }
}
