//! The scenario grammar: one [`Step`] per non-comment line, decoded by serde.
//!
//! Every step is a JSON object whose `do` key names the variant (`snake_case`) and whose other
//! keys are that variant's fields (`camelCase`). A key a step does not know, a missing field or
//! a wrong type is a scenario error, never a silent default. The table of steps in
//! `docs/scenarios.md` lists exactly these variants and fields; a test keeps the two equal.

use serde::{Deserialize, Deserializer, de};
use serde_json::{Map, Value};
use turnkit_families::FamiliesConfig;

/// One scenario step, as written on one line of a scenario file (`docs/scenarios.md`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(
    tag = "do",
    rename_all = "snake_case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Step {
    /// Sets up the host; only as the first step.
    Config(Box<Config>),
    /// Creates a session and publishes a live root agent for it.
    Session {
        /// The session id.
        id: String,
        /// The header's IANA time zone.
        time_zone: Option<String>,
    },
    /// Forks a session (copies its events, sets `seedLength`) and publishes an agent.
    Fork {
        /// The new session's id.
        id: String,
        /// The session forked from.
        from: String,
    },
    /// Disposes a session's live agent.
    Dispose {
        /// The session.
        session: String,
    },
    /// Publishes a new live agent for a stored session.
    Resume {
        /// The session.
        session: String,
    },
    /// Disposes every agent and plugin, reinstalls them and republishes the live sessions.
    Restart {},
    /// Opens or closes a turn by hand.
    Turn {
        /// The session.
        session: String,
        /// `start` or `end`.
        phase: Phase,
    },
    /// A user-authored message.
    User {
        /// The session.
        session: String,
        /// The message text.
        text: String,
        /// The client's IANA time zone.
        client_time_zone: Option<String>,
    },
    /// Runs a tool.
    Call {
        /// The tool name.
        tool: String,
        /// The arguments (any JSON value; the tool's schema judges it).
        args: Value,
        /// The calling session (absent: a caller without an agent).
        session: Option<String>,
        /// The call id (default `L<line>`).
        id: Option<String>,
        /// Whether the result may come after later steps (default false).
        #[serde(rename = "async")]
        is_async: Option<bool>,
    },
    /// Waits for an async call's result.
    Await {
        /// The call id.
        call: String,
    },
    /// Starts a controllable fake producer job.
    FakeJob {
        /// The owner session (absent: unowned).
        session: Option<String>,
        /// The job kind.
        kind: String,
        /// The job label.
        label: String,
        /// Whether output is read while running (default true).
        stream: Option<bool>,
        /// The job's output limit in bytes.
        output_limit_bytes: Option<u64>,
        /// What a cancel does (default `settle`).
        on_cancel: Option<CancelMode>,
    },
    /// Scripts the children started on a prompt by the `agent` tool.
    ChildScript {
        /// The exact prompt text.
        prompt: String,
        /// One object per model step (`call`, `answer`, `fail` or `hang`).
        steps: Vec<Value>,
    },
    /// Appends text to a fake stream job's unread output.
    Emit {
        /// The fake job's id.
        job: String,
        /// The text.
        text: String,
    },
    /// Settles a fake job.
    Settle {
        /// The fake job's id.
        job: String,
        /// The terminal status.
        status: SettleStatus,
        /// The outcome's detail.
        detail: Option<String>,
        /// The final output.
        output: Option<String>,
    },
    /// Starts a real background shell job.
    Bash {
        /// The owner session (absent: unowned).
        session: Option<String>,
        /// The `bash -c` command.
        command: String,
        /// The job's output limit in bytes.
        output_limit_bytes: Option<u64>,
    },
    /// Opens a real terminal (a PTY).
    Terminal {
        /// The owner session (absent: unowned).
        session: Option<String>,
        /// The program (default: the configured shell).
        command: Option<String>,
    },
    /// Waits, in real time, until a job is terminal and its notice was delivered.
    AwaitJob {
        /// The job id.
        job: String,
        /// The real-time limit in milliseconds (default 30000).
        timeout_ms: Option<u64>,
    },
    /// Moves wall and monotonic time together, firing due timers in order.
    Advance {
        /// Milliseconds.
        ms: u64,
    },
    /// Jumps the wall clock only.
    SetClock {
        /// An RFC 3339 instant.
        at: String,
    },
    /// Makes a session's barrier or appends fail, or succeed again.
    Fault {
        /// The session.
        session: String,
        /// The flush barrier's mode.
        flush: Option<FaultMode>,
        /// The appends' mode.
        append: Option<FaultMode>,
    },
    /// Prints a projection's view.
    Projection {
        /// The session.
        session: String,
        /// The projection key.
        key: String,
    },
    /// Prints the session's events.
    Log {
        /// The session.
        session: String,
        /// Only events of this type.
        #[serde(rename = "type")]
        event_type: Option<String>,
    },
}

impl Step {
    /// Decodes one step from a JSON value.
    ///
    /// # Errors
    /// The scenario error's message: `a step must be a JSON object`, `missing field "do"`,
    /// `field "do" must be a string`, `unknown step "NAME"`, or `NAME: <serde message>` for a
    /// missing, unknown or mistyped field of step `NAME` (serde's wording, such as
    /// ``session: missing field `id` ``).
    pub fn from_value(value: Value) -> Result<Self, String> {
        let name = match &value {
            Value::Object(step) => match step.get("do") {
                Some(Value::String(name)) => name.clone(),
                Some(_) => return Err("field \"do\" must be a string".to_owned()),
                None => return Err("missing field \"do\"".to_owned()),
            },
            _ => return Err("a step must be a JSON object".to_owned()),
        };
        if !Self::NAMES.contains(&name.as_str()) {
            return Err(format!("unknown step {name:?}"));
        }
        serde_json::from_value(value).map_err(|error| format!("{name}: {error}"))
    }

    /// Every step's `do` name, in declaration order.
    pub const NAMES: [&'static str; 22] = [
        "config",
        "session",
        "fork",
        "dispose",
        "resume",
        "restart",
        "turn",
        "user",
        "call",
        "await",
        "fake_job",
        "child_script",
        "emit",
        "settle",
        "bash",
        "terminal",
        "await_job",
        "advance",
        "set_clock",
        "fault",
        "projection",
        "log",
    ];

    /// The step's `do` name.
    pub fn name(&self) -> &'static str {
        match self {
            Step::Config(_) => "config",
            Step::Session { .. } => "session",
            Step::Fork { .. } => "fork",
            Step::Dispose { .. } => "dispose",
            Step::Resume { .. } => "resume",
            Step::Restart {} => "restart",
            Step::Turn { .. } => "turn",
            Step::User { .. } => "user",
            Step::Call { .. } => "call",
            Step::Await { .. } => "await",
            Step::FakeJob { .. } => "fake_job",
            Step::ChildScript { .. } => "child_script",
            Step::Emit { .. } => "emit",
            Step::Settle { .. } => "settle",
            Step::Bash { .. } => "bash",
            Step::Terminal { .. } => "terminal",
            Step::AwaitJob { .. } => "await_job",
            Step::Advance { .. } => "advance",
            Step::SetClock { .. } => "set_clock",
            Step::Fault { .. } => "fault",
            Step::Projection { .. } => "projection",
            Step::Log { .. } => "log",
        }
    }
}

/// The `config` step: how the scenario host is set up. Its keys are the families' (every key
/// of [`FamiliesConfig`]: `todo`, `jobs`, `toolJobs`, `schedule`, `bash`, `terminal`,
/// `subagent`; `todo.allowParallelInProgress` defaults to false here) and the host's own
/// (`clock`, `store`, `autoTurns`); any other key is refused.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// Every family's configuration; the terminal family is installed only with a `terminal`
    /// object.
    pub families: FamiliesConfig,
    /// The scenario clock (default: manual, at `2026-08-05T12:00:00.000Z`).
    pub clock: Option<ClockSpec>,
    /// The session store (default: `memory`).
    pub store: Option<StoreKind>,
    /// Whether an idle agent runs a turn for new input at once (default: true).
    pub auto_turns: Option<bool>,
}

/// The `config` step's own keys, after the families'.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HostKeys {
    #[serde(default, deserialize_with = "turnkit_families::present")]
    clock: Option<ClockSpec>,
    store: Option<StoreKind>,
    auto_turns: Option<bool>,
}

impl Config {
    /// Every key of the step, in order: the families' keys, then the host's.
    const KEYS: [&'static str; 11] = [
        "todo",
        "jobs",
        "toolJobs",
        "schedule",
        "bash",
        "terminal",
        "subagent",
        "watch",
        "clock",
        "store",
        "autoTurns",
    ];
    const HOST_KEYS: [&'static str; 3] = ["clock", "store", "autoTurns"];
}

impl<'de> Deserialize<'de> for Config {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut families = Map::<String, Value>::deserialize(deserializer)?;
        if let Some(key) = families.keys().find(|k| !Self::KEYS.contains(&k.as_str())) {
            return Err(de::Error::unknown_field(key, &Self::KEYS));
        }
        let host: Map<String, Value> = Self::HOST_KEYS
            .iter()
            .filter_map(|key| {
                families
                    .remove(*key)
                    .map(|value| ((*key).to_owned(), value))
            })
            .collect();
        let families =
            FamiliesConfig::deserialize(Value::Object(families)).map_err(de::Error::custom)?;
        let host = HostKeys::deserialize(Value::Object(host)).map_err(de::Error::custom)?;
        Ok(Self {
            families,
            clock: host.clock,
            store: host.store,
            auto_turns: host.auto_turns,
        })
    }
}

/// The `config` step's `clock` object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {
    /// `manual` (default) or `system`.
    pub mode: Option<ClockKind>,
    /// The manual clock's start, an RFC 3339 instant (default `2026-08-05T12:00:00.000Z`).
    pub start: Option<String>,
}

/// Which clock a scenario runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockKind {
    /// Time moves only with `advance` and `set_clock`; the transcript is deterministic.
    Manual,
    /// Real time.
    System,
}

/// Where the scenario host keeps its sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    /// In memory.
    Memory,
    /// JSONL files in a temporary folder.
    Jsonl,
}

/// A `turn` step's phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Opens a turn.
    Start,
    /// Closes the turn (claiming injected messages first).
    End,
}

/// What a fake job does when cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelMode {
    /// Settles `killed` with detail `cancelled`.
    Settle,
    /// Stays stopping until a `settle` step.
    Hang,
    /// The cancel fails (`cancel failed`).
    Throw,
}

/// A `settle` step's terminal status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettleStatus {
    /// `completed`.
    Completed,
    /// `killed`.
    Killed,
    /// `failed`.
    Failed,
}

/// A `fault` step's mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultMode {
    /// Every call fails.
    Fail,
    /// Calls succeed again.
    Ok,
}
