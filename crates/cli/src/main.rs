//! The `harness` command: run scenario files, print the tool catalog, inspect a session log.
#![expect(clippy::print_stderr, reason = "a command-line program reports errors")]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use turnkit_families::{ChildrenMode, FamiliesConfig, LogFileError};

mod config;
mod cron;
mod http;
mod inspect;
mod mcp;
mod shutdown;
mod store_password;
mod telemetry;
mod walls;

/// Run harness scenario files and inspect session logs.
#[derive(Parser)]
#[command(name = "harness", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// A tool format of `harness tools --format`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    /// OpenAI Chat Completions function tools.
    Openai,
    /// OpenAI Responses API function tools.
    OpenaiResponses,
    /// Anthropic Messages API tools.
    Anthropic,
    /// MCP tool definitions.
    Mcp,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario file (or `-` for standard input) and print its transcript.
    /// Exits with status 2 on a scenario error. Needs a binary built with the `scenarios`
    /// feature (`cargo run -p turnkit-cli --features scenarios -- run FILE`): the runner's
    /// in-memory host and manual clock are test support the shipped binary leaves out.
    Run {
        /// The scenario file, or `-`.
        file: String,
    },
    /// Print every tool definition `harness mcp` serves as JSON (one array), in an LLM API's
    /// tool format with `--format`, or as Markdown with `--markdown` (which also lists the
    /// tools a host with its own model step adds: `agent`).
    Tools {
        /// The families' configuration file of `harness mcp --config` (the tools printed are
        /// the ones it serves, e.g. the terminal tools with a `terminal` object). Default:
        /// every family at its defaults.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print a Markdown catalog instead of JSON.
        #[arg(long, conflicts_with = "format")]
        markdown: bool,
        /// The tool shape of an LLM API: `openai` (Chat Completions), `openai-responses`,
        /// `anthropic` or `mcp`. Without it, the definitions as the crates hold them.
        #[arg(long, value_enum)]
        format: Option<Format>,
        /// OpenAI formats only: parameters in strict structured-outputs form.
        #[arg(long)]
        strict: bool,
        /// MCP format only: include each tool's output schema exactly as `harness mcp
        /// --structured` declares it (rooted at an object, `harnessMessages` declared).
        #[arg(long)]
        output_schema: bool,
    },
    /// Summarize a JSONL session log: header, event counts by type, current projections.
    Log {
        /// The session file.
        file: PathBuf,
    },
    /// Serve one session to an MCP client over stdio (todo, background jobs, reminders).
    /// Without `--session` a new session is created and its id printed to stderr.
    Mcp {
        /// The folder of session files (default: `$XDG_DATA_HOME/harness/sessions`, else
        /// `~/.local/share/harness/sessions`).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The session to serve, created if absent.
        #[arg(long)]
        session: Option<String>,
        /// A JSON file with the families' configuration (keys `todo`, `jobs`, `toolJobs`,
        /// `schedule`, `bash`, `terminal`); `todo.allowParallelInProgress` must be set, and the
        /// terminal tools are served when a `terminal` object is given.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Add output schemas and `structuredContent` to tool results.
        #[arg(long)]
        structured: bool,
        /// Where sessions are kept: a `postgres://` or `postgresql://` URL, or a libpq
        /// key-value connection string (`host=/run/postgresql dbname=harness user=harness`),
        /// serves the session from PostgreSQL (one host writes a session at a time; a second
        /// server on the same session is refused); an existing folder is the same as `--dir`.
        /// Anything else is refused. Default: JSONL files in `--dir`.
        #[arg(long, conflicts_with = "dir")]
        store: Option<String>,
        /// PostgreSQL only: a file whose first line is the store's password (keep the
        /// password out of `--store`, which every local user can read). Without it the
        /// password comes from `PGPASSWORD` or the password file (`PGPASSFILE`, default
        /// `~/.pgpass`, mode 0600) as for libpq.
        #[arg(long, value_name = "FILE", requires = "store")]
        store_password_file: Option<PathBuf>,
        #[command(flatten)]
        http: Box<http::HttpArgs>,
        /// `--http` only: run every job and terminal unconfined, as without a `sandbox`
        /// (by default each runs walled off from other sessions and from the server's files,
        /// secrets and processes; `docs/deployment.md`, "Walls around served jobs"). Says so
        /// at startup.
        #[arg(long, requires = "http")]
        no_walls: bool,
        /// Export the spans (tool calls, turns, MCP requests, jobs, reminders) over OTLP/HTTP
        /// in protobuf to the collector at this base URL (`http://localhost:4318`; spans go to
        /// its `/v1/traces`). Needs a binary built with the `otlp` feature.
        #[arg(long, value_name = "URL")]
        otlp_endpoint: Option<String>,
        /// Once SIGTERM or SIGINT arrived, how long stopping jobs, flushing sessions and
        /// releasing leases may take before the process exits anyway with status 1 (a store
        /// that stopped answering cannot hold it forever).
        #[arg(long, value_name = "SECONDS", default_value_t = shutdown::DEFAULT_GRACE_SECS,
              value_parser = clap::value_parser!(u64).range(1..))]
        shutdown_grace: u64,
        /// How long the task of a background job is kept (the `ttlMs` a tasks-capable client
        /// is told; past it the task is forgotten and `tasks/cancel` no longer stops its job).
        /// Default: a day.
        #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
        task_ttl: Option<u64>,
    },
    /// Start the configured agent when a reminder falls due in a session no client has open:
    /// watches a folder of session files (as `harness mcp --dir` keeps them) and, for each
    /// due reminder whose session no `harness mcp` holds, runs the `launch` command of the
    /// configuration (`{session}`, `{prompt}`, `{endpoint}` replaced) at most once per
    /// occurrence. Runs until interrupted.
    Cron {
        /// The folder of session files (default: as for `harness mcp`).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The configuration file of `harness mcp --config`, with a `launch` entry.
        #[arg(long)]
        config: PathBuf,
        /// How often the folder is looked at, in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 30,
              value_parser = clap::value_parser!(u64).range(1..))]
        interval: u64,
        /// How often the folder is looked at, in milliseconds (overrides `--interval`).
        #[arg(long, value_name = "MS", hide = true)]
        interval_ms: Option<u64>,
    },
    /// Serve a read-only live web view of a folder of session files or a PostgreSQL store
    /// (sessions, plans, jobs, reminders, timelines) and print its URL; runs until
    /// interrupted.
    Inspect {
        /// The folder of session files (default: as for `harness mcp`).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// A `postgres://` or `postgresql://` URL or a libpq key-value connection string
        /// (as for `harness mcp`): show that store's sessions (with each session's live
        /// owner) instead of a folder; an existing folder is the same as `--dir`.
        #[arg(long, conflicts_with = "dir")]
        store: Option<String>,
        /// PostgreSQL only: a file whose first line is the store's password (as for
        /// `harness mcp`).
        #[arg(long, value_name = "FILE", requires = "store")]
        store_password_file: Option<PathBuf>,
        /// The address to listen on (default: loopback, a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        addr: std::net::SocketAddr,
        #[command(flatten)]
        access: inspect::AccessArgs,
    },
}

/// The error and its causes joined with `: `, each cause left out when the message before it
/// already says it (an error whose text includes its source, such as a store's I/O error,
/// printed the operating system's message twice).
fn report(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let message = cause.to_string();
        if text.contains(&message) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&message);
    }
    text
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let otlp_endpoint = match &cli.command {
        Command::Mcp { otlp_endpoint, .. } => otlp_endpoint.as_deref(),
        _ => None,
    };
    let telemetry = match telemetry::Telemetry::install(otlp_endpoint) {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("harness: {}", report(&error));
            return ExitCode::FAILURE;
        }
    };
    let code = match run(cli.command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("harness: {}", report(&error));
            ExitCode::FAILURE
        }
    };
    telemetry.shutdown();
    code
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Mcp {
            dir,
            session,
            config,
            structured,
            store,
            store_password_file,
            http,
            no_walls,
            otlp_endpoint: _,
            shutdown_grace,
            task_ttl,
        } => mcp::run(
            mcp::Store::choose(dir, store.as_deref(), store_password_file.as_deref())?,
            session,
            config.as_ref(),
            structured,
            *http,
            if no_walls {
                walls::Switch::Off
            } else {
                walls::Switch::On
            },
            std::time::Duration::from_secs(shutdown_grace),
            task_ttl.map(std::time::Duration::from_secs),
        ),
        Command::Inspect {
            dir,
            store,
            store_password_file,
            addr,
            access,
        } => inspect::run(
            mcp::Store::choose(dir, store.as_deref(), store_password_file.as_deref())?,
            addr,
            &access,
        ),
        Command::Cron {
            dir,
            config,
            interval,
            interval_ms,
        } => cron::run(
            match dir {
                Some(dir) => dir,
                None => mcp::default_dir()?,
            },
            &config,
            interval_ms.map_or(
                std::time::Duration::from_secs(interval),
                std::time::Duration::from_millis,
            ),
        ),
        Command::Run { file } => run_file(&file),
        Command::Tools {
            config,
            markdown,
            format,
            strict,
            output_schema,
        } => {
            use turnkit_core::formats;
            let config = match &config {
                Some(path) => config::read_config(path)?,
                None => FamiliesConfig::defaults(),
            };
            let definitions = turnkit_families::catalog(&config, ChildrenMode::Without)?;
            if strict && !matches!(format, Some(Format::Openai | Format::OpenaiResponses)) {
                anyhow::bail!("--strict applies to --format openai and openai-responses only");
            }
            if output_schema && !matches!(format, Some(Format::Mcp)) {
                anyhow::bail!("--output-schema applies to --format mcp only");
            }
            if markdown {
                let definitions = turnkit_families::catalog(&config, ChildrenMode::With)?;
                emit(&turnkit_families::catalog_markdown(&definitions))?;
                return Ok(ExitCode::SUCCESS);
            }
            let shaped: Vec<serde_json::Value> = match format {
                None => vec![serde_json::to_value(&definitions)?],
                Some(Format::Openai) => definitions
                    .iter()
                    .map(|d| formats::openai_chat_tool(d, strict))
                    .collect(),
                Some(Format::OpenaiResponses) => definitions
                    .iter()
                    .map(|d| formats::openai_responses_tool(d, strict))
                    .collect(),
                Some(Format::Anthropic) => {
                    definitions.iter().map(formats::anthropic_tool).collect()
                }
                Some(Format::Mcp) => definitions
                    .iter()
                    .map(|d| {
                        let shape = if output_schema {
                            turnkit_mcp::ResultShape::Structured
                        } else {
                            turnkit_mcp::ResultShape::Text
                        };
                        turnkit_mcp::mcp_tool(d, shape)
                    })
                    .collect(),
            };
            match (format, shaped) {
                (None, mut one) => emit_json(&one.remove(0))?,
                (Some(_), shaped) => emit_json(&serde_json::Value::Array(shaped))?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Log { file } => {
            // Inspection never changes the file: a torn tail is reported, not truncated.
            let summary = match turnkit_families::summarize_log_file(&file) {
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

/// `harness run FILE`: runs the scenario and prints its transcript; status 2 on a scenario
/// error.
#[cfg(feature = "scenarios")]
fn run_file(file: &str) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    use std::io::Read;
    let source = if file == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading standard input")?;
        text
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?
    };
    let transcript = turnkit_scenario::run_scenario(&source);
    emit(&transcript.to_text())?;
    Ok(if transcript.failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// Without the scenario runner: says how to get it.
#[cfg(not(feature = "scenarios"))]
fn run_file(_file: &str) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this harness binary was built without the scenario runner; build it with \
         `--features scenarios` (cargo install turnkit-cli --features scenarios)"
    )
}

/// Writes `value` as pretty JSON and a newline to standard output.
fn emit_json(value: &serde_json::Value) -> anyhow::Result<()> {
    emit(&format!("{}\n", serde_json::to_string_pretty(value)?))
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
