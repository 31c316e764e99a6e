//! `docs/terminal-tools.md` is the catalog of the three terminal tools, in the format of
//! `docs/tool-catalog.md`; this test fails when it is stale (and writes the current text to
//! `<temp dir>/terminal-tools.md`).

use std::sync::Arc;

use harness_core::{SystemClock, Tool};
use harness_terminal::{KillTool, SendTool, StartTool, TerminalConfig, Terminals};

#[test]
fn terminal_tools_doc_is_current() {
    let terminals = Terminals::new(TerminalConfig::default(), Arc::new(SystemClock), None);
    let tools: [Arc<dyn Tool>; 3] = [
        Arc::new(StartTool::new(terminals.clone())),
        Arc::new(SendTool::new(terminals.clone())),
        Arc::new(KillTool::new(terminals)),
    ];
    let definitions: Vec<_> = tools.iter().map(|t| t.definition().clone()).collect();
    let expected = format!(
        "<!-- The terminal tools (harness-terminal, Unix only), in the format of tool-catalog.md; \
         checked by crates/terminal/tests/suite/catalog.rs. -->\n\n{}",
        harness_testkit::scenario::catalog_markdown(&definitions)
    );
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/terminal-tools.md");
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    if actual != expected {
        let fresh = std::env::temp_dir().join("terminal-tools.md");
        std::fs::write(&fresh, &expected).unwrap();
        panic!(
            "docs/terminal-tools.md is stale: the current text is in {}",
            fresh.display()
        );
    }
}
