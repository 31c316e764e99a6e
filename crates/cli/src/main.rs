//! The `harness` command: run scenario files, print the tool catalog, inspect a session log.
#![expect(clippy::print_stderr, reason = "a command-line program reports errors")]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use harness_testkit::scenario::LogFileError;

/// Run harness scenario files and inspect session logs.
#[derive(Parser)]
#[command(name = "harness", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario file (or `-` for standard input) and print its transcript.
    /// Exits with status 2 on a scenario error.
    Run {
        /// The scenario file, or `-`.
        file: String,
    },
    /// Print every tool definition as JSON (one array), or as Markdown with `--markdown`.
    Tools {
        /// Print a Markdown catalog instead of JSON.
        #[arg(long)]
        markdown: bool,
    },
    /// Summarize a JSONL session log: header, event counts by type, current projections.
    Log {
        /// The session file.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("harness: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run { file } => {
            let source = if file == "-" {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .context("reading standard input")?;
                text
            } else {
                std::fs::read_to_string(&file).with_context(|| format!("reading {file}"))?
            };
            let transcript = harness_testkit::scenario::run_scenario(&source);
            emit(&transcript.to_text())?;
            Ok(if transcript.failed {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Tools { markdown } => {
            let definitions =
                harness_testkit::scenario::tool_catalog().map_err(anyhow::Error::msg)?;
            if markdown {
                emit(&harness_testkit::scenario::catalog_markdown(&definitions))?;
            } else {
                emit(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&definitions)?
                ))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Log { file } => {
            // Inspection never changes the file: a torn tail is reported, not truncated.
            let summary = match harness_testkit::scenario::summarize_log_file(&file) {
                Ok(summary) => summary,
                Err(LogFileError::Store(error)) => {
                    return Err(
                        anyhow::Error::new(error).context(format!("reading {}", file.display()))
                    );
                }
                Err(error) => return Err(anyhow::Error::msg(error.to_string())),
            };
            if let Some(torn) = &summary.torn {
                eprintln!(
                    "harness: {}:{}: torn last line ({}); opening the session would truncate it",
                    file.display(),
                    torn.line,
                    torn.reason
                );
            }
            emit(&summary.text)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Writes to standard output; a closed pipe (`harness tools | head`) is not an error.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
