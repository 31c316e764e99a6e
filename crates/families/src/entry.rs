//! [`Entry`] and [`Member`]: one family as [`Families`](crate::Families) installs and
//! disposes it. The built-in families are entries of one ordered list
//! ([`crate::FamiliesConfig::KEYS`] names them); a host adds a family of its own (a new job
//! kind, say) with one more entry ([`crate::FamiliesConfig::from_json_with`]).

use std::any::Any;
use std::sync::Arc;

use serde_json::{Map, Value};
use turnkit_core::{ConfigError, Harness, SessionStore, async_trait};
use turnkit_host::HostKit;
use turnkit_subagent::ChildModel;

/// What a host that runs children (turnkit-subagent's `agent` tool) gives
/// [`Families::install`](crate::Families::install): the kit children are published in, the store their sessions are
/// created in, and the model that drives them.
#[derive(Clone)]
pub struct Children {
    /// The host kit the children are published in (the host's own, or the one under it).
    pub kit: Arc<HostKit>,
    /// The store child sessions are created in.
    pub store: Arc<dyn SessionStore>,
    /// The children's model step.
    pub model: Arc<dyn ChildModel>,
}

impl std::fmt::Debug for Children {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Children").finish_non_exhaustive()
    }
}

/// What an [`Entry`]'s install function is given.
pub struct Setup<'a> {
    /// The host the family is installed into (its tools, prompt sections, projections and
    /// service slots: the job registry is `Arc<dyn turnkit_jobs::JobRegistry>` there once
    /// the `jobs` entry, which comes before every producer, is installed).
    pub harness: &'a Arc<dyn Harness>,
    /// The family's object of the configuration; `None` when the configuration has none.
    pub object: Option<&'a Map<String, Value>>,
    /// What the host lends children, when it runs them (the subagent family needs it).
    pub children: Option<&'a Children>,
    /// The families the entries before this one installed, in order, each with its key.
    pub installed: &'a [(&'static str, Arc<dyn Member>)],
}

impl Setup<'_> {
    /// The family's object as a JSON value (`{}` when the configuration has none), ready for
    /// the family's own `from_json`.
    pub fn config(&self) -> Value {
        Value::Object(self.object.cloned().unwrap_or_default())
    }

    /// The family of type `T` an earlier entry installed (watch runs its checks through
    /// bash's launcher); `None` when none did.
    pub fn installed<T: Member>(&self) -> Option<&T> {
        self.installed.iter().find_map(|(_, member)| {
            let member: &dyn Any = member.as_ref();
            member.downcast_ref::<T>()
        })
    }
}

/// Installs one family into [`Setup::harness`]; `Ok(None)` when it is not installed with
/// this configuration (the terminal family without a `terminal` object).
///
/// # Errors
/// The family's own [`ConfigError`] (it refused its object, or a tool name was taken).
pub type Install = fn(&Setup<'_>) -> Result<Option<Arc<dyn Member>>, ConfigError>;

/// One family: its top-level configuration key and how it is installed. Entries are
/// installed in list order and disposed in the reverse order, so a family may rely on what
/// the entries before it installed (every job producer comes after `jobs`, the registry)
/// and is disposed while those are still there.
///
/// ```
/// use std::sync::Arc;
/// use turnkit_families::{Entry, FamiliesConfig, Member, Setup};
///
/// struct Quiet;
/// #[turnkit_core::async_trait]
/// impl Member for Quiet {
///     async fn dispose(&self) {}
/// }
/// fn install(setup: &Setup<'_>) -> Result<Option<Arc<dyn Member>>, turnkit_core::ConfigError> {
///     Ok(setup.object.map(|_| Arc::new(Quiet) as Arc<dyn Member>))
/// }
/// const QUIET: Entry = Entry::new("quiet", install);
/// let config = FamiliesConfig::from_json_with(
///     &serde_json::json!({"todo": {"allowParallelInProgress": false}, "quiet": {}}),
///     &[QUIET],
/// )
/// .unwrap();
/// assert_eq!(config.family("quiet"), serde_json::json!({}));
/// ```
#[derive(Clone, Copy)]
pub struct Entry {
    /// The family's key in the configuration object (camelCase, unique).
    pub key: &'static str,
    /// Installs the family.
    pub install: Install,
}

impl Entry {
    /// The entry of the family under configuration key `key`, installed by `install`.
    pub const fn new(key: &'static str, install: Install) -> Self {
        Self { key, install }
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Entry").field(&self.key).finish()
    }
}

/// Two entries are equal when their keys are (a configuration holds one entry per key).
impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

/// One installed family as [`Families`](crate::Families) keeps and disposes it: every
/// family has this shape, so the disposal is one loop over the ordered list. A host finds
/// its installed family again with [`Families::get`](crate::Families::get).
#[async_trait]
pub trait Member: Any + Send + Sync {
    /// Undoes the installation: its tools, prompt sections and projections leave the host,
    /// and its running jobs are stopped (a registry awaits their settlements).
    async fn dispose(&self);

    /// Joins what the family's work left running once every family was disposed (the process
    /// tasks of bash and terminal: what their stopped processes left is killed at once).
    /// Nothing by default.
    async fn shutdown(&self) {}
}
