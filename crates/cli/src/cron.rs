//! `harness cron`: for people whose clients start `harness mcp` over stdio, a long-running
//! command that starts the configured agent when a reminder falls due in a session no client
//! has open (`turnkit_launch`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use turnkit_launch::{CronOptions, run_cron};

/// Runs `harness cron` until SIGTERM or SIGINT.
pub(crate) fn run(dir: PathBuf, config: &Path, interval: Duration) -> anyhow::Result<ExitCode> {
    let configs = crate::config::read_config(config)?;
    let Some(launch) = crate::config::read_launch(config)? else {
        anyhow::bail!(
            "{}: harness cron needs a \"launch\" entry, e.g. {{\"launch\":{{\"argv\":[\"claude\",\"-p\",\"{{prompt}}\"]}}}}",
            config.display()
        );
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let tasks = TaskTracker::new();
        let stop = CancellationToken::new();
        let ended = CancellationToken::new();
        crate::shutdown::on_signal(
            &tasks,
            stop.clone(),
            ended.clone(),
            Duration::from_millis(launch.timeout_ms.saturating_add(30_000)),
        )?;
        eprintln!(
            "harness cron: watching {} every {} ms; launching {:?}",
            dir.display(),
            interval.as_millis(),
            launch.argv
        );
        let outcome = run_cron(
            CronOptions {
                dir,
                configs,
                launch,
                interval,
            },
            stop,
        )
        .await;
        ended.cancel();
        tasks.close();
        tasks.wait().await;
        outcome?;
        anyhow::Ok(ExitCode::SUCCESS)
    })
}
