//! `docs/watch-tools.md` is the catalog of the watch family's tool, in the format of
//! `docs/tool-catalog.md`; this test fails when it is stale (and writes the current text to
//! `<temp dir>/watch-tools.md`).

use std::sync::Arc;

use turnkit_core::{SystemClock, Tool};
use turnkit_watch::{WatchConfig, WatchTool, Watches};

#[test]
fn watch_tools_doc_is_current() {
    let watches = Watches::new(WatchConfig::default(), Arc::new(SystemClock), None);
    let tool = WatchTool::new(watches);
    let generated = turnkit_families::catalog_markdown(&[tool.definition().clone()]);
    // The generated text starts with the default catalog's heading; this file names itself.
    let tools_part = &generated[generated.find("\n## ").unwrap_or(0)..];
    let expected = format!(
        "# Watch tools\n\nThe tool of turnkit-watch (opt-in: installed with a `watch` object), in \
         the format of `tool-catalog.md`, built from its definition; \
         `crates/watch/tests/catalog.rs` fails when this file is stale. Its behaviour: \
         `docs/spec/watch.md`.\n{tools_part}"
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/watch-tools.md");
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    if actual != expected {
        let fresh = std::env::temp_dir().join("watch-tools.md");
        std::fs::write(&fresh, &expected).unwrap();
        panic!(
            "docs/watch-tools.md is stale: the current text is in {}",
            fresh.display()
        );
    }
}
