//! The prose names only what exists. This test reads `README.md`, `docs/*.md`, `docs/spec/*.md`
//! and every `crates/*/README.md`, and fails for each of these that does not resolve:
//!
//! 1. a path into the workspace: every `crates/…` path anywhere in the text (from the
//!    workspace root), every code span starting with `src/`, `tests/`, `benches/` or
//!    `examples/` (in a crate README from its crate or else the root, elsewhere from the root)
//!    or with `docs/` or `.ci/` (from the root), every relative Markdown link target outside
//!    code spans (from the file's folder), every code span that is a bare document name
//!    (`observability.md`: in the file's folder, `docs/`, `docs/spec/` or the root) and every
//!    one that is a bare Rust file name (`inbox.rs`, `process/spill.rs`: the end of some `.rs`
//!    file's path in the workspace, its folder left to the prose's context).
//!    A path ending in `/`, or cut short by a glob or `{a,b}` list, names a folder;
//! 2. a Rust item named in a code span as a path into our crates: `turnkit_x::a::B` (the crate
//!    `turnkit-x`, or the facade for `turnkit::…`), where every segment after the crate must be
//!    defined somewhere in that crate's `src/` (`mod a`, `struct B`, `fn b`, `enum`, `trait`,
//!    `type`, `const`, `static`, `macro_rules!`, a re-export `as b`, an enum variant or field
//!    line `B,` / `B {` / `B(` / `b: T`, or `default` / `clone` where a type derives them);
//!    and `Type::member` where `Type` is a type defined in one of our crates: `member` must be
//!    defined in a crate that defines `Type`.
//!
//! No Rust parser: definitions are found line by line in the source text, so a name defined
//! under `#[cfg(test)]` counts too. The rule is strict about spelling, not about visibility.
#![allow(
    clippy::unwrap_used,
    reason = "test helpers fail loudly; clippy's test exemption covers only #[test] bodies"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A workspace crate: its package name (`turnkit-core`), folder and every name its `src/`
/// defines.
struct Crate {
    package: String,
    dir: PathBuf,
    defined: BTreeSet<String>,
    types: BTreeSet<String>,
}

/// The Markdown files this test reads, from the workspace root.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "docs/spec"] {
        files.extend(markdown_in(&root.join(dir)));
    }
    for dir in sorted_dir(&root.join("crates")) {
        let readme = dir.join("README.md");
        if readme.is_file() {
            files.push(readme);
        }
    }
    files
}

fn sorted_dir(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    entries
}

fn markdown_in(dir: &Path) -> Vec<PathBuf> {
    sorted_dir(dir)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if !dir.is_dir() {
        return;
    }
    for path in sorted_dir(dir) {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// What a source line defines: the name after a defining keyword, or an enum variant.
fn definitions(line: &str, defined: &mut BTreeSet<String>, types: &mut BTreeSet<String>) {
    let trimmed = line.trim_start();
    if trimmed.starts_with("//") {
        return;
    }
    let words: Vec<&str> = trimmed
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '!'))
        .filter(|w| !w.is_empty())
        .collect();
    if trimmed.starts_with("#[derive(") {
        for (derived, method) in [("Default", "default"), ("Clone", "clone")] {
            if words.contains(&derived) {
                defined.insert(method.to_owned());
            }
        }
    }
    for pair in words.windows(2) {
        let name = pair[1].trim_end_matches('!').to_owned();
        match pair[0] {
            "struct" | "enum" | "trait" | "type" | "union" => {
                types.insert(name.clone());
                defined.insert(name);
            }
            // `as` renames a re-export: `pub use turnkit_families as families;`.
            "fn" | "mod" | "const" | "static" | "macro_rules!" | "as" => {
                defined.insert(name);
            }
            _ => {}
        }
    }
    // An enum variant or a struct field: `Name,`, `Name {`, `Name(`, `name: Type`.
    let head: String = trimmed
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if !head.is_empty() {
        let rest = trimmed[head.len()..].trim_start();
        if rest.is_empty()
            || rest.starts_with(',')
            || rest.starts_with('{')
            || rest.starts_with('(')
            || rest.starts_with('=')
            || (rest.starts_with(':') && !rest.starts_with("::"))
        {
            defined.insert(head);
        }
    }
}

fn workspace_crates(root: &Path) -> Vec<Crate> {
    let mut dirs = vec![root.to_path_buf()];
    dirs.extend(
        sorted_dir(&root.join("crates"))
            .into_iter()
            .filter(|dir| dir.join("Cargo.toml").is_file()),
    );
    dirs.into_iter()
        .map(|dir| {
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
            let package = manifest
                .lines()
                .skip_while(|line| line.trim() != "[package]")
                .find_map(|line| line.trim().strip_prefix("name = "))
                .unwrap()
                .trim_matches('"')
                .to_owned();
            let mut files = Vec::new();
            rust_files(&dir.join("src"), &mut files);
            let mut defined = BTreeSet::new();
            let mut types = BTreeSet::new();
            for file in files {
                for line in std::fs::read_to_string(&file).unwrap().lines() {
                    definitions(line, &mut defined, &mut types);
                }
            }
            Crate {
                package,
                dir,
                defined,
                types,
            }
        })
        .collect()
}

/// The code spans of a Markdown text (single backticks; fenced blocks left out), each with
/// its 1-based line.
fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut spans = Vec::new();
    let mut fenced = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
            spans.push((index + 1, inside.to_owned()));
        }
    }
    spans
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// Every `crates/…` path in a text, with its line; a path is cut at the first character that
/// cannot be in one, and loses trailing sentence punctuation.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut paths = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut from = 0;
        while let Some(at) = line[from..].find("crates/") {
            let start = from + at;
            from = start + "crates/".len();
            let before = line[..start].chars().next_back();
            if before.is_some_and(is_path_char) {
                continue;
            }
            let path: String = line[start..]
                .chars()
                .take_while(|c| is_path_char(*c))
                .collect();
            paths.push((index + 1, path.trim_end_matches(['.', ',']).to_owned()));
        }
    }
    paths
}

/// The relative targets of Markdown links `[text](target)` in a text, with their lines.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    for (index, line) in text.lines().enumerate() {
        // A code span is never a link: keep only the text outside backticks.
        let line: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut from = 0;
        while let Some(at) = line[from..].find("](") {
            let start = from + at + 2;
            from = start;
            let Some(end) = line[start..].find(')') else {
                continue;
            };
            let target = line[start..start + end].split('#').next().unwrap_or("");
            let target = target.split_whitespace().next().unwrap_or("");
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            targets.push((index + 1, target.to_owned()));
        }
    }
    targets
}

/// Whether a named path exists: a file, or (for a path ending in `/` or cut short) a folder.
fn exists(base: &Path, path: &str) -> bool {
    let path = path.trim_end_matches('/');
    base.join(path).exists()
}

/// The item segments of a code span that names a Rust path, with generics, call parentheses
/// and a leading `&` removed: `turnkit_core::Session::append(…)` → `[turnkit_core, Session,
/// append]`. `None` when the span is not a bare path.
fn rust_path(span: &str) -> Option<Vec<String>> {
    let span = span.trim().trim_start_matches('&');
    let head = span.split(['(', '<', ' ', '{', '[']).next().unwrap_or("");
    if !head.contains("::") {
        return None;
    }
    let segments: Vec<String> = head.split("::").map(str::to_owned).collect();
    let ident = |s: &String| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    segments.iter().all(ident).then_some(segments)
}

/// Why an item path does not resolve, if it does not.
fn unresolved_item(crates: &[Crate], segments: &[String]) -> Option<String> {
    let first = &segments[0];
    if let Some(name) = first.strip_prefix("turnkit") {
        let package = format!("turnkit{}", name.replace('_', "-"));
        let Some(krate) = crates.iter().find(|c| c.package == package) else {
            return Some(format!("no crate {package}"));
        };
        let missing: Vec<&String> = segments[1..]
            .iter()
            .filter(|s| !krate.defined.contains(*s))
            .collect();
        return (!missing.is_empty()).then(|| {
            format!(
                "{} defines no {}",
                krate.package,
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
    }
    if segments.len() != 2 || !first.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    let owners: Vec<&Crate> = crates.iter().filter(|c| c.types.contains(first)).collect();
    if owners.is_empty() || owners.iter().any(|c| c.defined.contains(&segments[1])) {
        return None;
    }
    Some(format!(
        "{} (the type of {}) defines no {}",
        first,
        owners
            .iter()
            .map(|c| c.package.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        segments[1]
    ))
}

/// Why a code span that is a bare file name does not resolve, if it does not: a Markdown
/// name (`observability.md`, `spec/README.md`) must be in the document's folder, `docs/`,
/// `docs/spec/` or the root; a Rust file (`inbox.rs`, `process/spill.rs`) must end the path of
/// some `.rs` file of the workspace (its folder is the prose's context, not checked).
fn unknown_file_name(root: &Path, folder: &Path, span: &str) -> Option<String> {
    let plain = !span.is_empty()
        && span.chars().all(is_path_char)
        && !span.starts_with('.')
        && !span.starts_with('/');
    if !plain {
        return None;
    }
    if span.ends_with(".md") {
        let found = [folder, &root.join("docs"), &root.join("docs/spec"), root]
            .iter()
            .any(|base| base.join(span).is_file());
        return (!found).then(|| "no such document".to_owned());
    }
    if span.ends_with(".rs") {
        let mut files = Vec::new();
        for dir in ["crates", "tests", "benches", "examples", "src"] {
            rust_files(&root.join(dir), &mut files);
        }
        let suffix = format!("/{span}");
        let found = files
            .iter()
            .any(|file| file.to_string_lossy().ends_with(&suffix));
        return (!found).then(|| "no Rust file of that name".to_owned());
    }
    None
}

/// Every false reference of one document, as `file:line: what: why`.
fn check(root: &Path, crates: &[Crate], file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let name = file
        .strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string();
    let folder = file.parent().unwrap();
    let crate_dir = crates
        .iter()
        .find(|c| c.dir != root && folder == c.dir)
        .map(|c| c.dir.clone());
    let mut problems = Vec::new();
    for (line, path) in crate_paths(&text) {
        if !exists(root, &path) {
            problems.push(format!("{name}:{line}: `{path}`: no such file or folder"));
        }
    }
    for (line, target) in link_targets(&text) {
        if !exists(folder, &target) {
            problems.push(format!(
                "{name}:{line}: link `{target}`: no such file or folder"
            ));
        }
    }
    for (line, span) in code_spans(&text) {
        let span = span.trim();
        let relative = ["src/", "tests/", "benches/", "examples/"]
            .iter()
            .any(|p| span.starts_with(p));
        let rooted = span.starts_with("docs/") || span.starts_with(".ci/");
        if (relative || rooted) && !span.contains(' ') {
            let path: String = span.chars().take_while(|c| is_path_char(*c)).collect();
            // In a crate's README a relative path is the crate's, else the workspace's.
            let in_crate = match (&crate_dir, relative) {
                (Some(dir), true) => exists(dir, &path),
                _ => false,
            };
            if !in_crate && !exists(root, &path) {
                problems.push(format!("{name}:{line}: `{span}`: no such file or folder"));
            }
        } else if let Some(why) = unknown_file_name(root, folder, span) {
            problems.push(format!("{name}:{line}: `{span}`: {why}"));
        }
        if let Some(segments) = rust_path(span)
            && let Some(why) = unresolved_item(crates, &segments)
        {
            problems.push(format!("{name}:{line}: `{span}`: {why}"));
        }
    }
    problems
}

#[test]
fn every_path_and_item_the_docs_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crates = workspace_crates(root);
    let mut problems = Vec::new();
    let mut read = BTreeMap::new();
    for file in documents(root) {
        let found = check(root, &crates, &file);
        read.insert(file.clone(), found.len());
        problems.extend(found);
    }
    assert!(read.len() > 20, "read only {} documents", read.len());
    assert_eq!(
        problems,
        Vec::<String>::new(),
        "false references in the docs"
    );
}

/// The rules themselves, on made-up text: each kind of reference is caught.
#[test]
fn the_rules_catch_each_kind_of_false_reference() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crates = workspace_crates(root);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("probe.md");
    std::fs::write(
        &file,
        "See crates/core/src/lib.rs and crates/core/src/no_such.rs.\n\
         `turnkit_core::ToolRegistry::execute_call` and `turnkit_core::NoSuchThing`,\n\
         `ToolRegistry::execute` and `ToolRegistry::no_such_method`, `Arc::clone`.\n\
         [ok](probe.md), [gone](gone.md), [web](https://example.invalid/x.md).\n\
         `docs/testing.md`, `docs/no-such.md`.\n\
         `observability.md`, `nope.md`, `jsonl/tests.rs`, `jsonl_tests.rs`.\n\
         ```\ncrates/inside/a/fence.rs is prose too\n`turnkit_core::Fenced`\n```\n",
    )
    .unwrap();
    let problems: Vec<String> = check(root, &crates, &file)
        .into_iter()
        .map(|p| p.split_once(": ").unwrap().1.to_owned())
        .collect();
    assert_eq!(
        problems,
        [
            "`crates/core/src/no_such.rs`: no such file or folder",
            "`crates/inside/a/fence.rs`: no such file or folder",
            "link `gone.md`: no such file or folder",
            "`turnkit_core::NoSuchThing`: turnkit-core defines no NoSuchThing",
            "`ToolRegistry::no_such_method`: ToolRegistry (the type of turnkit-core) defines no no_such_method",
            "`docs/no-such.md`: no such file or folder",
            "`nope.md`: no such document",
            "`jsonl_tests.rs`: no Rust file of that name",
        ]
    );
}
