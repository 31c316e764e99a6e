//! [`catalog`]: the tools a host with the families installed offers its root agent, computed
//! on turnkit-host's [`HostKit`] with the system clock (what `harness tools` prints and
//! `harness mcp` serves).

use std::sync::Arc;

use turnkit_core::{
    Harness, MemoryStore, Projection, SessionHeader, SessionStore, SystemClock, ToolDefinition,
};
use turnkit_host::HostKit;

use crate::config::FamiliesConfig;
use crate::entry::Children;
use crate::install::Families;
use crate::runtime::block_on_fresh;

/// The host behind [`catalog`] could not be set up; the text says why (a family's
/// configuration message, `cannot start a runtime: …`, or `internal error: …`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

/// Whether [`catalog`]'s host runs children (turnkit-subagent's `agent` tool).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildrenMode {
    /// No children: the tools of `harness mcp`, whose client has no model step to lend.
    Without,
    /// A host with its own model step: the subagent family is installed too (its `agent`
    /// tool comes last), as in `docs/tool-catalog.md`.
    With,
}

/// The tool definitions a root agent of a host with the families installed by `config` is
/// offered, in registration order (global tools, then the agent's own: schedule's), exactly
/// as `harness mcp --config` lists them in `tools/list` when `children` is
/// [`ChildrenMode::Without`].
///
/// `config` is used as given; for a user-less default choose the todo rule first
/// ([`FamiliesConfig::with_parallel_default`]).
///
/// # Errors
/// [`SetupError`]: a family refused its configuration, or no runtime could be started.
pub fn catalog(
    config: &FamiliesConfig,
    children: ChildrenMode,
) -> Result<Vec<ToolDefinition>, SetupError> {
    with_host(config, children, async |kit| {
        let store = MemoryStore::new(Harness::clock(kit.as_ref()));
        let session = store
            .create(SessionHeader::new("catalog"))
            .map_err(|e| e.to_string())?;
        let agent = kit.start_agent(session);
        let definitions = kit.tool_definitions(agent.as_ref());
        agent.dispose().await;
        Ok(definitions)
    })
}

/// The projections the families register with `config` (the `todos` projection and any
/// other), for folding a log outside a host ([`crate::summarize_log`]).
///
/// # Errors
/// As [`catalog`].
pub fn projections(config: &FamiliesConfig) -> Result<Vec<Arc<dyn Projection>>, SetupError> {
    with_host(config, ChildrenMode::Without, async |kit| {
        Ok(kit.projections().projections())
    })
}

/// Runs `body` against a [`HostKit`] on the system clock with the families installed, on a
/// fresh runtime (from synchronous code or inside any tokio runtime), then disposes them.
fn with_host<T: Send>(
    config: &FamiliesConfig,
    children: ChildrenMode,
    body: impl AsyncFnOnce(&Arc<HostKit>) -> Result<T, String> + Send,
) -> Result<T, SetupError> {
    let outcome = block_on_fresh(
        |_| {},
        async move || {
            let kit = Arc::new(HostKit::new(Arc::new(SystemClock)));
            let harness: Arc<dyn Harness> = kit.clone();
            let children = match children {
                ChildrenMode::Without => None,
                ChildrenMode::With => Some(Children {
                    kit: kit.clone(),
                    store: Arc::new(MemoryStore::new(Arc::new(SystemClock))),
                    model: turnkit_subagent::ScriptedChild::new(),
                }),
            };
            let families = Families::install(&harness, config, children.as_ref())
                .map_err(|e| e.to_string())?;
            let result = body(&kit).await;
            families.dispose().await;
            result
        },
    );
    match outcome {
        Ok(result) => result.map_err(SetupError),
        Err(failure) => Err(SetupError(failure.to_string())),
    }
}
