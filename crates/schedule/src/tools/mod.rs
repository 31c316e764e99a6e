//! The schedule tools (schedule.md §9–§11): `schedule_create`, `schedule_list`,
//! `schedule_delete`.
//!
//! The three tools of one agent share that agent's ledger: its FIFO (one transaction at a
//! time, in arrival order, shared with the delivery runtime) and its incrementally folded
//! state. Every domain failure is a *successful* tool value `{"code","message",…}` (§9.3);
//! only a cancelled call is a tool error ([`ToolError::Aborted`], rendered by the registry as
//! the canonical aborted result).

mod schema;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::MutexGuard;
use tokio_util::sync::CancellationToken;
use turnkit_core::{
    Agent, Clock, Harness, RegisterError, Registration, RegistrationScope, ScopeKey, Tool,
    ToolCall, ToolDefinition, ToolError, ToolOutput, epoch_millis, same_agent,
};

use crate::ScheduleConfig;
use crate::domain::{
    Calendar, CreateRequest, ERR_UNCERTAIN, ErrorCode, SCHEDULE_CHANGE, ScheduleChange,
    ZoneContext, validate_delete_id,
};
use crate::ledger::{FoldCache, Ledger};

pub use schema::{
    BASIC_ERROR_CODES, CREATE_DESCRIPTION, CREATE_DESCRIPTION_CRON, CREATE_NAME,
    DELETE_DESCRIPTION, DELETE_NAME, LIST_DESCRIPTION, LIST_NAME, calendar_definitions,
    create_input_schema, create_input_schema_cron, create_output_schema, create_output_schema_cron,
    definitions, delete_input_schema, delete_output_schema, list_input_schema, list_output_schema,
    list_output_schema_cron,
};

/// The UI card for a call of one of the three tools (§9.8), pure: `schedule_create` →
/// `{"card":"generic","title":"Create reminder","kind":"other","rawInput":<prompt>}`,
/// `schedule_list` → `{"card":"generic","title":"List reminders","kind":"read"}`,
/// `schedule_delete` → `{"card":"generic","title":"Delete reminder","kind":"other","rawInput":<id>}`.
/// `rawInput` is omitted when the argument is not a string; other tool names give `None`.
pub fn present_call(tool: &str, arguments: &Value) -> Option<Value> {
    let (title, kind, raw) = match tool {
        CREATE_NAME => ("Create reminder", "other", Some("prompt")),
        LIST_NAME => ("List reminders", "read", None),
        DELETE_NAME => ("Delete reminder", "other", Some("id")),
        _ => return None,
    };
    let mut card = json!({"card": "generic", "title": title, "kind": kind});
    if let (Some(key), Value::Object(map)) = (raw, &mut card)
        && let Some(text) = arguments.get(key).and_then(Value::as_str)
    {
        map.insert("rawInput".into(), Value::from(text));
    }
    Some(card)
}

/// The owner-notify callback: asks the owner's delivery runtime to recompute (§12.1). Called
/// after every successful preflight and post-append barrier. It must not block.
pub type Notify = Arc<dyn Fn() + Send + Sync>;

/// Which tool a `persistence_uncertain` value reports (§9.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operation {
    Create,
    List,
    Delete,
}

impl Operation {
    const fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::List => "list",
            Operation::Delete => "delete",
        }
    }
}

/// `{"code":"persistence_uncertain","message":…,"operation":…}` plus `"id"` when known.
fn uncertain(operation: Operation, id: Option<&str>) -> Value {
    let mut value = json!({
        "code": ErrorCode::PersistenceUncertain.as_str(),
        "message": ERR_UNCERTAIN,
        "operation": operation.as_str(),
    });
    if let (Some(id), Value::Object(map)) = (id, &mut value) {
        map.insert("id".into(), Value::from(id));
    }
    value
}

fn internal() -> ToolOutput {
    ToolOutput::json(ErrorCode::InternalError.value())
}

struct Core {
    owner: Arc<dyn Agent>,
    clock: Arc<dyn Clock>,
    ledger: Arc<Ledger>,
    notify: Notify,
    calendar: Calendar,
}

impl Core {
    fn is_owner(&self, call: &ToolCall) -> bool {
        call.caller
            .as_ref()
            .is_some_and(|caller| same_agent(caller, &self.owner))
    }

    /// Waits for the FIFO slot; a call cancelled while queued (or already cancelled when its
    /// turn comes) is aborted without doing anything.
    async fn enter(
        &self,
        cancel: &CancellationToken,
    ) -> Result<MutexGuard<'_, FoldCache>, ToolError> {
        let guard = tokio::select! {
            biased;
            guard = self.ledger.enter() => guard,
            () = cancel.cancelled() => return Err(ToolError::Aborted),
        };
        if cancel.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        Ok(guard)
    }

    fn notify(&self) {
        (self.notify)();
    }

    /// §9.5.
    async fn create(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        if !self.is_owner(&call) {
            return Ok(internal());
        }
        let request = match CreateRequest::from_args(call.arguments_as()?, self.calendar) {
            Ok(request) => request,
            Err(error) => return Ok(ToolOutput::json(error.to_value())),
        };
        let mut cache = self.enter(&call.cancel).await?;
        if self.ledger.barrier().await.is_err() {
            return Ok(ToolOutput::json(uncertain(Operation::Create, None)));
        }
        self.notify();
        let session = self.ledger.session();
        let fold = match cache.refresh(session.as_ref()) {
            Ok(fold) => fold,
            Err(error) => return Ok(ToolOutput::json(error.to_value())),
        };
        let id = fold.allocate_id();
        let Ok(now) = self.clock.try_now() else {
            return Ok(internal());
        };
        let zones = ZoneContext {
            session_time_zone: session.header().time_zone.clone(),
            client_time_zone: self.owner.client_time_zone(),
        };
        let record = match request.build(&id, epoch_millis(now), Some(&zones)) {
            Ok(record) => record,
            Err(error) => return Ok(ToolOutput::json(error.to_value())),
        };
        if call.cancel.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let change = ScheduleChange::Create(record.clone());
        if let Err(error) = session.append(SCHEDULE_CHANGE, change.to_value()) {
            tracing::warn!(agent = %self.owner.id(), "schedule_create: append failed: {error}");
            return Ok(internal());
        }
        if self.ledger.barrier().await.is_err() {
            return Ok(ToolOutput::json(uncertain(Operation::Create, Some(&id))));
        }
        drop(cache);
        self.notify();
        Ok(ToolOutput::json(
            record.view(epoch_millis(self.clock.now())),
        ))
    }

    /// §9.6.
    async fn list(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        if !self.is_owner(&call) {
            return Ok(internal());
        }
        let mut cache = self.enter(&call.cancel).await?;
        if self.ledger.barrier().await.is_err() {
            return Ok(ToolOutput::json(uncertain(Operation::List, None)));
        }
        self.notify();
        let fold = match cache.refresh(self.ledger.session().as_ref()) {
            Ok(fold) => fold,
            Err(error) => return Ok(ToolOutput::json(error.to_value())),
        };
        let Ok(now) = self.clock.try_now() else {
            return Ok(internal());
        };
        let now_ms = epoch_millis(now);
        let views: Vec<Value> = fold.active().map(|record| record.view(now_ms)).collect();
        Ok(ToolOutput::json(Value::Array(views)))
    }

    /// §9.7.
    async fn delete(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let DeleteArgs { id } = call.arguments_as()?;
        if let Err(error) = validate_delete_id(&id) {
            return Ok(ToolOutput::json(error.to_value()));
        }
        if !self.is_owner(&call) {
            return Ok(internal());
        }
        let mut cache = self.enter(&call.cancel).await?;
        if self.ledger.barrier().await.is_err() {
            return Ok(ToolOutput::json(uncertain(Operation::Delete, Some(&id))));
        }
        self.notify();
        let session = self.ledger.session();
        let active = match cache.refresh(session.as_ref()) {
            Ok(fold) => fold.is_active(&id),
            Err(error) => return Ok(ToolOutput::json(error.to_value())),
        };
        if !active {
            return Ok(ToolOutput::json(json!({
                "id": id,
                "deleted": false,
                "code": "schedule_not_found",
            })));
        }
        if call.cancel.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let change = ScheduleChange::Delete {
            id: Arc::from(id.as_str()),
        };
        if let Err(error) = session.append(SCHEDULE_CHANGE, change.to_value()) {
            tracing::warn!(agent = %self.owner.id(), "schedule_delete: append failed: {error}");
            return Ok(internal());
        }
        if self.ledger.barrier().await.is_err() {
            return Ok(ToolOutput::json(uncertain(Operation::Delete, Some(&id))));
        }
        drop(cache);
        self.notify();
        Ok(ToolOutput::json(json!({"id": id, "deleted": true})))
    }
}

/// The arguments of `schedule_delete` (§9.2): the root is open, `id` a string.
#[derive(serde::Deserialize)]
struct DeleteArgs {
    id: String,
}

#[derive(Clone, Copy)]
enum Which {
    Create,
    List,
    Delete,
}

struct ScheduleTool {
    core: Arc<Core>,
    which: Which,
    definition: ToolDefinition,
}

#[async_trait]
impl Tool for ScheduleTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn present_call(&self, arguments: &Value) -> Option<Value> {
        present_call(&self.definition.name, arguments)
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        match self.which {
            Which::Create => self.core.create(call).await,
            Which::List => self.core.list(call).await,
            Which::Delete => self.core.delete(call).await,
        }
    }
}

/// The three schedule tools of one owner agent (schedule.md §9).
///
/// The plugin builds one per adopted agent with the owner's delivery runtime as the notify
/// callback. Hosts and tests can build one directly with [`ScheduleTools::new`] (the tools
/// then run without a delivery runtime; `notify` observes the recompute requests).
pub struct ScheduleTools {
    core: Arc<Core>,
}

impl std::fmt::Debug for ScheduleTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduleTools")
            .field("owner", self.core.owner.id())
            .finish()
    }
}

impl ScheduleTools {
    /// Tools owned by `owner`, working on `owner.session()`, sampling `clock`, and calling
    /// `notify` after every successful barrier (§12.1).
    /// The tools take the default configuration (no `cron` selector).
    pub fn new(owner: Arc<dyn Agent>, clock: Arc<dyn Clock>, notify: Notify) -> Self {
        Self::with_config(owner, clock, notify, ScheduleConfig::default())
    }

    /// [`ScheduleTools::new`] with a configuration: `config.cron` adds the `cron` selector
    /// (and its schema, description and output branches) to `schedule_create`.
    pub fn with_config(
        owner: Arc<dyn Agent>,
        clock: Arc<dyn Clock>,
        notify: Notify,
        config: ScheduleConfig,
    ) -> Self {
        let ledger = Arc::new(Ledger::new(owner.session()));
        Self::with_ledger(owner, clock, ledger, notify, config)
    }

    /// Tools sharing `ledger` (the FIFO and fold) with the owner's runtime.
    pub(crate) fn with_ledger(
        owner: Arc<dyn Agent>,
        clock: Arc<dyn Clock>,
        ledger: Arc<Ledger>,
        notify: Notify,
        config: ScheduleConfig,
    ) -> Self {
        Self {
            core: Arc::new(Core {
                owner,
                clock,
                ledger,
                notify,
                calendar: config.calendar(),
            }),
        }
    }

    /// The three tools in registration order: `schedule_create`, `schedule_list`,
    /// `schedule_delete`.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let [create, list, delete] = match self.core.calendar {
            Calendar::Refused => definitions(),
            Calendar::Accepted => calendar_definitions(),
        };
        [
            (Which::Create, create),
            (Which::List, list),
            (Which::Delete, delete),
        ]
        .into_iter()
        .map(|(which, definition)| {
            Arc::new(ScheduleTool {
                core: self.core.clone(),
                which,
                definition,
            }) as Arc<dyn Tool>
        })
        .collect()
    }

    /// Registers the three tools for the owner alone ([`RegistrationScope::Agent`]: not for
    /// the children that report it as their ancestor), all or nothing (§9): if any name
    /// conflicts, the ones already registered are rolled back and the error is returned. The
    /// returned registration removes all three (idempotently).
    ///
    /// # Errors
    /// [`RegisterError`] from the host.
    pub fn register(&self, harness: &dyn Harness) -> Result<Registration, RegisterError> {
        let scope = RegistrationScope::Agent(ScopeKey::from(self.core.owner.id()));
        let mut done: Vec<Registration> = Vec::with_capacity(3);
        for tool in self.tools() {
            match harness.register_tool(tool, scope.clone()) {
                Ok(registration) => done.push(registration),
                Err(error) => {
                    for registration in &done {
                        registration.unregister();
                    }
                    return Err(error);
                }
            }
        }
        Ok(Registration::new(move || {
            for registration in &done {
                registration.unregister();
            }
        }))
    }
}
