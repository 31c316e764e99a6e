//! `docs/architecture.md`'s crate graph is the workspace's: the block under "## Crate graph"
//! lists every workspace crate with the workspace crates it depends on (normal and build
//! dependencies, as `cargo metadata --no-deps` reports them; dev-dependencies left out), one line per crate. This test fails when
//! the two differ and prints the block to paste. A second test keeps the MCP transport and the
//! PostgreSQL store free of family names (tools and event types).
#![allow(
    clippy::unwrap_used,
    reason = "test helpers fail loudly; clippy's test exemption covers only #[test] bodies"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Every workspace crate with its normal dependencies among the workspace crates (an optional
/// one marked ` (optional)`).
fn metadata_graph() -> BTreeMap<String, BTreeSet<String>> {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let names: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    packages
        .iter()
        .map(|package| {
            let deps = package["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .filter(|d| d["name"].as_str().is_some_and(|name| names.contains(name)))
                .map(|d| {
                    let name = d["name"].as_str().unwrap_or_default();
                    if d["optional"].as_bool() == Some(true) {
                        format!("{name} (optional)")
                    } else {
                        name.to_owned()
                    }
                })
                .collect();
            (package["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

/// The block as it should read.
fn render(graph: &BTreeMap<String, BTreeSet<String>>) -> String {
    let width = graph.keys().map(String::len).max().unwrap_or(0);
    let mut out = String::new();
    for (name, deps) in graph {
        let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
        let deps = if deps.is_empty() {
            "(no workspace crate)".to_owned()
        } else {
            deps.join(", ")
        };
        out.push_str(&format!("{name:width$} ──► {deps}\n"));
    }
    out
}

#[test]
fn the_architecture_doc_draws_the_crate_graph_of_cargo_metadata() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/architecture.md");
    let page = std::fs::read_to_string(path).unwrap();
    let block = page
        .split_once("## Crate graph\n")
        .and_then(|(_, rest)| rest.split_once("```text\n"))
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .map(|(block, _)| block)
        .expect("docs/architecture.md has a \"## Crate graph\" section with a ```text block");
    let expected = render(&metadata_graph());
    assert!(
        block == expected,
        "docs/architecture.md's crate graph differs from cargo metadata; the block should \
         read:\n{expected}"
    );
}

/// Every `.rs` file under `dir` (relative to the workspace root), with its text.
fn sources(dir: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path.display().to_string(), text));
            }
        }
    }
    out
}

/// The MCP transport and the PostgreSQL store know no family by name: each family declares
/// its resources and index rows, and a tool that waits reports progress through its call.
#[test]
fn the_transport_and_the_store_name_no_family_tool_or_event() {
    let names = [
        "\"schedule/change\"",
        "\"todo/write\"",
        "\"schedule_list\"",
        "\"job_output\"",
    ];
    let mut found = Vec::new();
    for dir in ["crates/mcp/src", "crates/store-pg/src"] {
        for (path, text) in sources(dir) {
            for (n, line) in text.lines().enumerate() {
                if names.iter().any(|name| line.contains(name)) {
                    found.push(format!("{path}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert_eq!(found, Vec::<String>::new());
}

/// The names of the tools the families serve: the headings of the tool catalogs
/// (`docs/tool-catalog.md`, `docs/terminal-tools.md`, `docs/watch-tools.md`, each kept equal to
/// the served catalog by its own test).
fn family_tools() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut names = Vec::new();
    for doc in [
        "docs/tool-catalog.md",
        "docs/terminal-tools.md",
        "docs/watch-tools.md",
    ] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for line in text.lines() {
            if let Some(name) = line
                .strip_prefix("## `")
                .and_then(|rest| rest.strip_suffix('`'))
            {
                names.push(name.to_owned());
            }
        }
    }
    names
}

/// Whether `word` occurs in `text` with no identifier character on either side.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The MCP server's code (`crates/mcp/src`, its unit-test files aside; comments aside) names
/// no family: no tool name in a string, no family event type, no family crate or constant,
/// no family's configuration field. Which result opens a task, which wait may move to one, a
/// job's final output and its cancellation are the families' (`turnkit_families::task_target`
/// and its neighbours), so a new job kind needs no line here.
#[test]
fn the_mcp_server_names_no_family_tool_event_crate_or_constant() {
    let tools = family_tools();
    assert!(
        [
            "bash",
            "job_output",
            "job_kill",
            "schedule_create",
            "terminal_send"
        ]
        .iter()
        .all(|tool| tools.iter().any(|t| t == tool)),
        "{tools:?}"
    );
    let events = [
        "\"job/",
        "\"schedule/",
        "\"todo/",
        "\"terminal/",
        "\"subagent/",
    ];
    let crates = [
        "turnkit_tool_jobs",
        "turnkit_bash",
        "turnkit_terminal",
        "turnkit_subagent",
        "turnkit_schedule",
        "turnkit_todo",
        "turnkit_jobs_local",
    ];
    let mut found = Vec::new();
    for (path, text) in sources("crates/mcp/src") {
        if path.ends_with("_tests.rs") {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            // The string literals of the line: every other piece between quotes.
            let strings: Vec<&str> = code.split('"').skip(1).step_by(2).collect();
            // `agent` (the subagent tool) is also the word for every session's agent.
            let named_tool = tools
                .iter()
                .filter(|tool| *tool != "agent")
                .any(|tool| strings.iter().any(|s| has_word(s, tool)));
            let family_constant = code.match_indices("turnkit_families::").any(|(at, m)| {
                let name: String = code[at + m.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                name.len() > 1
                    && name
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            });
            if named_tool
                || family_constant
                || events.iter().any(|e| code.contains(e))
                || crates.iter().any(|c| has_word(code, c))
                || has_word(code, "bash")
            {
                found.push(format!("{path}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert_eq!(found, Vec::<String>::new());
}
