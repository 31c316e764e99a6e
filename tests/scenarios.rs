//! Runs every `tests/scenarios/**/*.jsonl` and compares its transcript with the expected
//! `NAME.out.jsonl` beside it, byte for byte.
#![allow(
    clippy::unwrap_used,
    reason = "test helpers fail loudly; clippy's test exemption covers only #[test] bodies"
)]

use std::path::{Path, PathBuf};

fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            scenario_files(&path, out);
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".jsonl") && !n.ends_with(".out.jsonl"))
        {
            out.push(path);
        }
    }
}

#[test]
fn every_scenario_matches_its_expected_transcript() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut files = Vec::new();
    scenario_files(&root, &mut files);
    assert!(
        !files.is_empty(),
        "no scenario files under {}",
        root.display()
    );
    let mut failures = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        let expected_path = file.with_extension("out.jsonl");
        let Ok(expected) = std::fs::read_to_string(&expected_path) else {
            failures.push(format!(
                "{}: missing {}",
                file.display(),
                expected_path.display()
            ));
            continue;
        };
        let actual = turnkit_scenario::run_scenario(&source).to_text();
        if actual != expected {
            failures.push(format!(
                "{}: transcript differs\n--- expected\n{expected}--- actual\n{actual}",
                file.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
