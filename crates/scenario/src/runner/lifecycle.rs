//! Restarting the host and tearing it down at the end of the run.

use std::sync::Arc;

use turnkit_families::Families;
use turnkit_testkit::MemoryHarness;

use super::state::Runner;
use super::waiting::{TEARDOWN_HINT, blocked};

impl Runner {
    pub(super) async fn restart(&mut self) -> Result<(), String> {
        let recorder = self.recorder();
        let registry = self.registry().ok();
        let setup = self.setup()?;
        let teardown = teardown(setup.host.clone(), setup.installed.take());
        let what = "the restart";
        let stuck = blocked(what, &format!("{TEARDOWN_HINT} first"));
        self.until_done(registry, what, stuck, teardown).await?;
        let setup = self.setup()?;
        let host = MemoryHarness::restarted_from(&setup.host);
        host.set_recorder(recorder);
        setup.installed = Some(setup.families.install(&host)?);
        setup.host = host.clone();
        let _ = (&setup.clock, &setup.store);
        for id in &self.live {
            host.resume(id).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Disposes every agent and plugin. On the manual clock a disposal that only time or a
    /// step could finish (a job that hangs on cancel) is abandoned with an error instead of
    /// waiting forever.
    pub(super) async fn finish(&mut self) -> Result<(), String> {
        for (_, handle) in self.calls.drain() {
            handle.abort();
        }
        let Some(setup) = self.setup.as_mut() else {
            return Ok(());
        };
        let registry = setup.installed.as_ref().map(Families::registry);
        let teardown = teardown(setup.host.clone(), setup.installed.take());
        let what = "the end of the run (disposing every agent and plugin)";
        let stuck = format!(
            "{what} cannot finish until the manual clock moves; {TEARDOWN_HINT} before the \
             scenario ends"
        );
        let result = self.until_done(registry, what, stuck, teardown).await;
        self.setup = None;
        result
    }
}

/// Disposes every agent of `host`, then the plugins.
pub(super) async fn teardown(host: Arc<MemoryHarness>, installed: Option<Families>) {
    host.dispose_all().await;
    if let Some(installed) = installed {
        installed.dispose().await;
    }
}
