#![doc = include_str!("../README.md")]

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::{Value, json};
use tokio::sync::oneshot;
use turnkit_core::{
    ConfigError, Registration, RegistrationScope, Tool, ToolCall, ToolDefinition, ToolError,
    ToolOutput, async_trait, lock,
};
use turnkit_families::{Entry, Member, Setup};
use turnkit_jobs::{
    CancellationToken, JobHooks, JobKind, JobOutcome, JobRegistry, JobStart, JobVoice, start_saved,
};

/// The job kind (`beacon-<N>`).
pub const KIND: &str = "beacon";

/// The families entry: configuration key `beacon`, installed when the configuration has it.
pub const BEACON: Entry = Entry::new(KIND, install);

/// The release of every waiting beacon, by label.
static RELEASES: LazyLock<Mutex<HashMap<String, oneshot::Sender<()>>>> =
    LazyLock::new(Mutex::default);

/// Settles the running beacon labelled `label` `completed`; `false` when none waits.
pub fn release(label: &str) -> bool {
    lock(&RELEASES)
        .remove(label)
        .is_some_and(|release| release.send(()).is_ok())
}

struct Installed(Registration);

#[async_trait]
impl Member for Installed {
    async fn dispose(&self) {
        self.0.unregister();
    }
}

fn install(setup: &Setup<'_>) -> Result<Option<Arc<dyn Member>>, ConfigError> {
    let Some(object) = setup.object else {
        return Ok(None);
    };
    let reply = match object.get("reply") {
        None => "pong".to_owned(),
        Some(Value::String(reply)) => reply.clone(),
        Some(_) => {
            return Err(ConfigError::Invalid(
                "beacon: $.reply: expected a string".into(),
            ));
        }
    };
    let jobs = setup.harness.services().get::<Arc<dyn JobRegistry>>();
    let tool = BeaconTool { reply, jobs };
    let registration = setup
        .harness
        .register_tool(Arc::new(tool), RegistrationScope::Global)?;
    Ok(Some(Arc::new(Installed(registration))))
}

static DEFINITION: LazyLock<ToolDefinition> = LazyLock::new(|| ToolDefinition {
    name: "beacon_start".to_owned(),
    description: "Starts a beacon in the background, labelled `label`.".to_owned(),
    input_schema: json!({
        "type": "object",
        "properties": {"label": {"type": "string"}},
        "required": ["label"]
    }),
    output_schema: None,
    annotations: None,
});

struct BeaconTool {
    reply: String,
    jobs: Option<Arc<dyn JobRegistry>>,
}

#[async_trait]
impl Tool for BeaconTool {
    fn definition(&self) -> &ToolDefinition {
        &DEFINITION
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let jobs = self
            .jobs
            .as_ref()
            .ok_or(ToolError::msg("no job registry"))?;
        let label = call.arguments["label"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let (reply, voice, stop) = (
            self.reply.clone(),
            JobVoice::new(),
            CancellationToken::new(),
        );
        let (released, waiting) = oneshot::channel();
        lock(&RELEASES).insert(label.clone(), released);
        let id = start_saved(jobs.as_ref(), call.caller.clone(), |gate| {
            let output = format!("{reply} {label}");
            JobStart::new(JobKind::new(KIND), label.clone(), move || {
                let (says, stopped) = (voice.clone(), stop.clone());
                let done = async move {
                    if !gate.opened().await {
                        return Ok(JobOutcome::killed());
                    }
                    says.say("status", format!("{reply} is listening"));
                    tokio::select! {
                        _ = waiting => Ok(JobOutcome::completed().with_output(output)),
                        () = stopped.cancelled() => Ok(JobOutcome::killed()),
                    }
                };
                let cancel = move |_: Option<&str>| {
                    stop.cancel();
                    Ok(())
                };
                let hooks = JobHooks::new(cancel, done);
                Ok(hooks.with_voice(voice))
            })
        })
        .await
        .map_err(|e| ToolError::msg(e.to_string()))?;
        Ok(ToolOutput::success(
            json!({"kind": "background", "jobId": id.as_str()}),
            format!("started background job {id}"),
        ))
    }
}
