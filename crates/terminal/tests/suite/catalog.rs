//! `docs/terminal-tools.md` is the catalog of the three terminal tools, in the format of
//! `docs/tool-catalog.md`; this test fails when it is stale (and writes the current text to
//! `<temp dir>/terminal-tools.md`).

use std::sync::Arc;

use turnkit_core::{SystemClock, Tool};
use turnkit_terminal::{KillTool, SendTool, StartTool, TerminalConfig, Terminals};

#[test]
fn terminal_tools_doc_is_current() {
    let terminals = Terminals::new(TerminalConfig::default(), Arc::new(SystemClock), None);
    let tools: [Arc<dyn Tool>; 3] = [
        Arc::new(StartTool::new(terminals.clone())),
        Arc::new(SendTool::new(terminals.clone())),
        Arc::new(KillTool::new(terminals)),
    ];
    let definitions: Vec<_> = tools.iter().map(|t| t.definition().clone()).collect();
    let generated = turnkit_families::catalog_markdown(&definitions);
    // The generated text starts with the default catalog's heading; this file names itself.
    let tools_part = &generated[generated.find("\n## ").unwrap_or(0)..];
    let expected = format!(
        "# Terminal tools\n\nThe three tools of turnkit-terminal (Unix only), in the format of \
         `tool-catalog.md`, built from their definitions; \
         `crates/terminal/tests/suite/catalog.rs` fails when this file is stale.\n{tools_part}"
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
