//! Starting path watches: from a `watch_create` call, and again at a session's reopening for
//! each path watch its log says was still armed.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use futures::channel::oneshot;
use turnkit_core::Agent;
use turnkit_jobs::{JobId, JobKind, JobOutcome, JobRegistry, JobStart, StartGate, start_saved};

use crate::check::CheckWatch;
use crate::durable::{
    self, Armed, CHECK_EVENT, CheckDef, OUTPUT_EVENT, On, OutputDef, PATH_EVENT, PathDef,
};
use crate::output::{Bounds, Channel};
use crate::path::{Continues, PathWatch, remaining};
use crate::snapshot::{self, ChangeKind, Scope, Snapshot};
use crate::tool::{
    CHECKS_UNAVAILABLE, CheckArgs, JOBS_UNAVAILABLE, PathArgs, WATCH_KIND, Watches, hooks,
};

/// What a new path watch is, before it has an id.
struct Plan {
    scope: Scope,
    kinds: Vec<ChangeKind>,
    label: String,
    baseline: Snapshot,
    seen: u64,
    max_events: u64,
    expires_at: i64,
    bounds: Bounds,
    continues: Option<Continues>,
}

/// `changes` as given (default: all three), in their fixed order.
fn kinds(changes: Option<&[String]>) -> Result<Vec<ChangeKind>, String> {
    let all = [
        ChangeKind::Created,
        ChangeKind::Modified,
        ChangeKind::Removed,
    ];
    let Some(changes) = changes else {
        return Ok(all.to_vec());
    };
    let mut kinds = Vec::new();
    for name in changes {
        let kind = ChangeKind::parse(name).ok_or_else(|| {
            format!(
                "invalid changes: unknown change {name:?} (expected created, modified or removed)"
            )
        })?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    if kinds.is_empty() {
        return Err(
            "invalid changes: expected one or more of created, modified, removed".to_owned(),
        );
    }
    kinds.sort();
    Ok(kinds)
}

/// The watched path, absolute and without `.`/`..`/trailing separators.
fn absolute(path: &str) -> Result<PathBuf, String> {
    let given = Path::new(path);
    if !given.is_absolute() {
        return Err(format!(
            "invalid path: expected an absolute path, got {path:?}"
        ));
    }
    let mut clean = PathBuf::new();
    for part in given.components() {
        match part {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    Ok(clean)
}

/// What the watch watches, in the words of its answer and `job_list`.
fn watching(scope: &Scope, kinds: &[ChangeKind]) -> String {
    let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
    let names = names.join(", ");
    let root = scope.root.display();
    match (scope.folder, scope.recursive) {
        (false, _) => format!("changes to {root} ({names})"),
        (true, false) => format!("changes under {root} ({names})"),
        (true, true) => format!("changes at any depth under {root} ({names})"),
    }
}

impl Watches {
    /// Starts a path watch for `owner`; its id and what it watches.
    pub(crate) async fn start_path(
        &self,
        owner: Option<Arc<dyn Agent>>,
        args: &PathArgs,
        description: Option<&str>,
        bounds: Bounds,
    ) -> Result<(JobId, String), String> {
        if self.jobs.is_none() {
            return Err(JOBS_UNAVAILABLE.to_owned());
        }
        let kinds = kinds(args.changes.as_deref())?;
        let root = absolute(&args.path)?;
        let folder = root.is_dir();
        if !folder && !root.parent().is_some_and(Path::is_dir) {
            return Err(format!(
                "invalid path: neither {} nor its folder exists",
                root.display()
            ));
        }
        if args.recursive && !folder {
            return Err(format!(
                "invalid path: recursive needs a folder, and {} is not one",
                root.display()
            ));
        }
        let root = self.confine(root)?;
        self.check_room(owner.as_ref().map(|o| o.id()))?;
        let scope = Scope {
            root,
            folder,
            recursive: args.recursive,
            max_files: usize::try_from(self.config.max_files).unwrap_or(usize::MAX),
        };
        let watching = watching(&scope, &kinds);
        let label = match description.map(str::trim).filter(|d| !d.is_empty()) {
            Some(description) => description.to_owned(),
            None => watching.clone(),
        };
        let scanned = scope.clone();
        let baseline = tokio::task::spawn_blocking(move || snapshot::scan(&scanned))
            .await
            .map_err(|e| format!("cannot read {}: {e}", scope.root.display()))?;
        let plan = Plan {
            scope,
            kinds,
            label,
            baseline,
            seen: 0,
            max_events: bounds.max_events,
            expires_at: self
                .clock
                .now_millis()
                .saturating_add(i64::try_from(bounds.expires_in.as_millis()).unwrap_or(i64::MAX)),
            bounds,
            continues: None,
        };
        let id = self.launch(owner, plan, None).await?;
        Ok((id, watching))
    }

    /// Under bash's sandbox a path watch sees only what the session's commands may write:
    /// `root` with its symbolic links resolved (the folder's, for a file that does not exist
    /// yet) must lie under one of the sandbox's writable roots. Without a sandbox, `root` as
    /// given.
    fn confine(&self, root: PathBuf) -> Result<PathBuf, String> {
        let Some(sandbox) = self
            .runner
            .as_ref()
            .and_then(|r| r.config().sandbox.as_ref())
        else {
            return Ok(root);
        };
        let real = match std::fs::canonicalize(&root) {
            Ok(real) => real,
            Err(_) => match (root.parent().map(std::fs::canonicalize), root.file_name()) {
                (Some(Ok(parent)), Some(name)) => parent.join(name),
                _ => root.clone(),
            },
        };
        let inside = sandbox.writable_roots.iter().any(|allowed| {
            std::fs::canonicalize(allowed).is_ok_and(|allowed| real.starts_with(allowed))
        });
        if inside {
            Ok(real)
        } else {
            Err(format!(
                "invalid path: {} is outside the folders this session's commands may write",
                root.display()
            ))
        }
    }

    /// Re-arms the path watches `owner`'s log says were still armed when its host stopped
    /// (each a new watch continuing the old one, which first reports what changed meanwhile).
    pub(crate) async fn rearm(&self, owner: Arc<dyn Agent>) {
        let Some(jobs) = self.jobs.clone() else {
            return;
        };
        let session = owner.session();
        for armed in durable::armed(&*session) {
            // Still running in this host (the agent was published again): nothing to do.
            if jobs
                .get(armed.id(), Some(owner.id()))
                .is_ok_and(|job| job.status.is_live())
            {
                continue;
            }
            let old = armed.id().clone();
            let rearmed = match armed {
                Armed::Path(def) => self.rearm_one(owner.clone(), def).await,
                Armed::Output(def) => self.end_output(owner.clone(), def).await,
                Armed::Check(def) => self.rearm_check(owner.clone(), def).await,
            };
            if let Err(error) = rearmed {
                tracing::warn!("watch: could not re-arm {old}: {error}");
            }
        }
    }

    async fn rearm_one(&self, owner: Arc<dyn Agent>, def: PathDef) -> Result<JobId, String> {
        let scope = Scope {
            root: self.confine(PathBuf::from(&def.path))?,
            folder: def.folder,
            recursive: def.recursive,
            max_files: usize::try_from(self.config.max_files).unwrap_or(usize::MAX),
        };
        let defaults = self.config.as_ref();
        let bounds = Bounds {
            max_events: def.max_events,
            expires_in: remaining(def.expires_at, self.clock.now_millis()),
            coalesce: std::time::Duration::from_millis(def.coalesce_ms),
            line_max_chars: usize::try_from(defaults.line_max_chars).unwrap_or(usize::MAX),
            wake_max_bytes: usize::try_from(defaults.wake_max_bytes).unwrap_or(usize::MAX),
            poll: std::time::Duration::from_millis(defaults.poll_ms),
        };
        let plan = Plan {
            scope,
            kinds: def.changes.clone(),
            label: def.label.clone(),
            baseline: def.files.clone(),
            seen: def.seen,
            max_events: def.max_events,
            expires_at: def.expires_at,
            bounds,
            continues: Some(Continues {
                id: def.id.clone(),
                label: def.label.clone(),
            }),
        };
        self.launch(Some(owner), plan, Some(def.id)).await
    }

    /// Starts a check watch for `owner`; its id and what it watches.
    pub(crate) async fn start_check(
        &self,
        owner: Option<Arc<dyn Agent>>,
        args: &CheckArgs,
        description: Option<&str>,
        bounds: Bounds,
    ) -> Result<(JobId, String), String> {
        if self.jobs.is_none() {
            return Err(JOBS_UNAVAILABLE.to_owned());
        }
        if self.runner.is_none() {
            return Err(CHECKS_UNAVAILABLE.to_owned());
        }
        let min = self.config.min_check_interval_ms;
        let interval = args.interval_ms;
        if !(interval.is_finite() && interval >= min as f64) {
            return Err(format!(
                "invalid interval_ms: expected at least {min} milliseconds, got {}",
                turnkit_jobs::format_js_number(interval)
            ));
        }
        self.check_room(owner.as_ref().map(|o| o.id()))?;
        let on = args.on.unwrap_or(On::Success);
        let every = turnkit_jobs::format_js_number(interval / 1000.0);
        let watching = match on {
            On::Success => format!("`{}` every {every} s until it succeeds", args.command),
            On::Change => format!(
                "changes in the result of `{}` (every {every} s)",
                args.command
            ),
        };
        let label = match description.map(str::trim).filter(|d| !d.is_empty()) {
            Some(description) => description.to_owned(),
            None => watching.clone(),
        };
        let def = CheckDef {
            version: 1,
            id: JobId::from(""),
            command: args.command.clone(),
            interval_ms: interval as u64,
            on,
            label,
            max_events: bounds.max_events,
            expires_at: self
                .clock
                .now_millis()
                .saturating_add(i64::try_from(bounds.expires_in.as_millis()).unwrap_or(i64::MAX)),
            seen: 0,
            last: None,
            rearms: None,
        };
        let id = self.launch_check(owner, def, bounds, None).await?;
        Ok((id, watching))
    }

    async fn rearm_check(&self, owner: Arc<dyn Agent>, def: CheckDef) -> Result<JobId, String> {
        let defaults = self.config.as_ref();
        let bounds = Bounds {
            max_events: def.max_events,
            expires_in: remaining(def.expires_at, self.clock.now_millis()),
            coalesce: std::time::Duration::ZERO,
            line_max_chars: usize::try_from(defaults.line_max_chars).unwrap_or(usize::MAX),
            wake_max_bytes: usize::try_from(defaults.wake_max_bytes).unwrap_or(usize::MAX),
            poll: std::time::Duration::from_millis(defaults.poll_ms),
        };
        let old = def.id.clone();
        let mut def = def;
        def.rearms = Some(old.clone());
        self.launch_check(Some(owner), def, bounds, Some(old)).await
    }

    async fn launch_check(
        &self,
        owner: Option<Arc<dyn Agent>>,
        mut def: CheckDef,
        bounds: Bounds,
        continues: Option<JobId>,
    ) -> Result<JobId, String> {
        let jobs = self.jobs.as_ref().ok_or(JOBS_UNAVAILABLE)?;
        let runner = self.runner.clone().ok_or(CHECKS_UNAVAILABLE)?;
        let (defined_tx, defined) = oneshot::channel();
        let channel = Channel::new();
        let watch = CheckWatch {
            command: def.command.clone(),
            interval: std::time::Duration::from_millis(def.interval_ms.max(1)),
            on: def.on,
            bounds,
            runner,
            clock: self.clock.clone(),
            channel: channel.clone(),
            owner: owner.clone(),
            seen: def.seen,
            last: def.last.clone(),
            continues,
            defined,
        };
        let label = def.label.clone();
        let work = move |gate| watch.run(gate);
        let def = move |id: &JobId| {
            def.id = id.clone();
            def
        };
        start_recorded(
            jobs,
            owner,
            label,
            channel,
            work,
            CHECK_EVENT,
            def,
            defined_tx,
        )
        .await
    }

    /// An output watch that was armed when its host stopped: the job it watched did not
    /// survive the restart (a job's processes never outlive their host), so a watch
    /// continuing it starts, records that it continues it, and ends at once with a
    /// completion notice saying why.
    async fn end_output(&self, owner: Arc<dyn Agent>, def: OutputDef) -> Result<JobId, String> {
        let jobs = self.jobs.as_ref().ok_or(JOBS_UNAVAILABLE)?;
        let (defined_tx, defined) = oneshot::channel::<JobId>();
        let detail = format!(
            "{} did not survive the host's restart, so {} (lines of it) ended",
            def.job, def.id
        );
        let channel = Channel::new();
        let label = def.label.clone();
        let work = move |gate: StartGate| async move {
            if !gate.opened().await || defined.await.is_err() {
                return JobOutcome::failed().with_detail("its definition could not be saved");
            }
            JobOutcome::completed().with_detail(detail)
        };
        let record = move |id: &JobId| OutputDef::new(id.clone(), def.job, def.label, Some(def.id));
        let owner = Some(owner);
        start_recorded(
            jobs,
            owner,
            label,
            channel,
            work,
            OUTPUT_EVENT,
            record,
            defined_tx,
        )
        .await
    }

    /// Starts the job of `plan` through the saved start, records its definition in the
    /// owner's log, and only then lets it arm.
    async fn launch(
        &self,
        owner: Option<Arc<dyn Agent>>,
        plan: Plan,
        rearms: Option<JobId>,
    ) -> Result<JobId, String> {
        let jobs = self.jobs.as_ref().ok_or(JOBS_UNAVAILABLE)?;
        let (defined_tx, defined) = oneshot::channel();
        let mut def = PathDef::new(
            JobId::from(""),
            plan.scope.root.display().to_string(),
            plan.scope.folder,
            plan.scope.recursive,
            plan.kinds.clone(),
            plan.label.clone(),
            plan.max_events,
            plan.expires_at,
            plan.bounds.coalesce.as_millis() as u64,
        );
        def.seen = plan.seen;
        def.files = plan.baseline.clone();
        def.rearms = rearms;
        let channel = Channel::new();
        let watch = PathWatch {
            scope: plan.scope,
            kinds: plan.kinds,
            bounds: plan.bounds,
            hub: self.hub.clone(),
            clock: self.clock.clone(),
            channel: channel.clone(),
            owner: owner.clone(),
            baseline: plan.baseline,
            seen: plan.seen,
            continues: plan.continues,
            defined,
        };
        let label = plan.label;
        let work = move |gate| watch.run(gate);
        let def = move |id: &JobId| {
            def.id = id.clone();
            def
        };
        start_recorded(
            jobs, owner, label, channel, work, PATH_EVENT, def, defined_tx,
        )
        .await
    }
}

/// Starts a watch job labelled `label`, whose work is `work(gate)`, through the saved start;
/// records `def(id)` as `event` in the owner's log (nothing without an owner) and only then
/// sends the job its id on `defined`, so it arms only once its definition is durable. A
/// definition that cannot be saved stops the job: `watch <id> was stopped: its definition could
/// not be saved: <error>`.
#[allow(clippy::too_many_arguments)]
async fn start_recorded<W, D>(
    jobs: &Arc<dyn JobRegistry>,
    owner: Option<Arc<dyn Agent>>,
    label: String,
    channel: Channel,
    work: impl FnOnce(StartGate) -> W + Send + 'static,
    event: &str,
    def: impl FnOnce(&JobId) -> D,
    defined: oneshot::Sender<JobId>,
) -> Result<JobId, String>
where
    W: std::future::Future<Output = JobOutcome> + Send + 'static,
    D: serde::Serialize,
{
    let id = start_saved(&**jobs, owner.clone(), move |gate| {
        JobStart::new(JobKind::new(WATCH_KIND), label, move || {
            hooks(channel, work(gate))
        })
    })
    .await
    .map_err(|e| e.to_string())?;
    if let Some(agent) = &owner
        && let Err(error) = durable::record(agent, event, &def(&id)).await
    {
        let _ = jobs.kill(&id, Some(agent.id()), None);
        return Err(format!(
            "watch {id} was stopped: its definition could not be saved: {error}"
        ));
    }
    let _ = defined.send(id.clone());
    Ok(id)
}
