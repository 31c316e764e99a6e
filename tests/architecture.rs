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
