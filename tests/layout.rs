//! The workspace's room rules, checked over the source text of every package's library and
//! binary (`src/`, followed from `lib.rs` / `main.rs` through `mod` declarations; modules
//! declared under `#[cfg(test)]` are test code and are left out):
//!
//! 1. no non-test source file is longer than [`MAX_LINES`] lines;
//! 2. modules import downwards only: no module reaches, through `crate::…` paths (in `use`
//!    declarations or written inline), a module that reaches it back. Each `crate::a::b::Item`
//!    path is an edge to the deepest module it names (`a::b`); a path to an item of the crate
//!    root (`crate::Item`, a re-export) is an edge to the root. Every strongly connected set
//!    of two or more modules is reported with one cycle through it.
//!
//! Comments, string literals and `#[cfg(test)]` items are removed before paths are read, so
//! a doc link such as ``[`crate::Registered`]`` is not an import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a non-test source file may be, in lines.
const MAX_LINES: usize = 700;

/// Files other work is still carving, each over [`MAX_LINES`] today (path from the workspace
/// root). This list must shrink to empty: the test fails when a listed file is back within the
/// limit (remove it then) and for every unlisted file over it.
const OVER_LIMIT_ALLOWED: &[&str] = &[];

/// Module cycles still being broken, each written as the sorted modules of its strongly
/// connected set, `crate-dir: a, b, c`. Like [`OVER_LIMIT_ALLOWED`], it must shrink to empty and
/// fails for an entry that no longer is a cycle.
const CYCLES_ALLOWED: &[&str] = &[];

#[test]
fn no_non_test_source_file_is_over_the_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut over = Vec::new();
    for package in packages(root) {
        for module in package.modules.values() {
            let lines = module.text.lines().count();
            if lines > MAX_LINES {
                over.push((relative(root, &module.file), lines));
            }
        }
    }
    over.sort();
    let unlisted: Vec<String> = over
        .iter()
        .filter(|(file, _)| !OVER_LIMIT_ALLOWED.contains(&file.as_str()))
        .map(|(file, lines)| format!("{file}: {lines} lines"))
        .collect();
    let fixed: Vec<&str> = OVER_LIMIT_ALLOWED
        .iter()
        .copied()
        .filter(|listed| !over.iter().any(|(file, _)| file == listed))
        .collect();
    assert_eq!(
        (unlisted, fixed),
        (Vec::<String>::new(), Vec::<&str>::new()),
        "(files over {MAX_LINES} lines, allow-listed files no longer over it)"
    );
}

#[test]
fn no_module_imports_a_module_that_imports_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cycles = BTreeMap::new();
    for package in packages(root) {
        let graph = package.edges();
        for set in strongly_connected(&graph) {
            let key = format!("{}: {}", package.name, set.join(", "));
            cycles.insert(
                key,
                format!("{} ({})", package.name, cycle_through(&graph, &set)),
            );
        }
    }
    let unlisted: Vec<&String> = cycles
        .iter()
        .filter(|(key, _)| !CYCLES_ALLOWED.contains(&key.as_str()))
        .map(|(_, cycle)| cycle)
        .collect();
    let fixed: Vec<&str> = CYCLES_ALLOWED
        .iter()
        .copied()
        .filter(|listed| !cycles.contains_key(*listed))
        .collect();
    assert_eq!(
        (unlisted, fixed),
        (Vec::<&String>::new(), Vec::<&str>::new()),
        "(module cycles, allow-listed cycles that are gone)"
    );
}

/// The checker itself, on sources written for it: a cycle of three, a downward import, a
/// cycle hidden in a comment, a string and a test module, and nested `use` groups.
#[test]
fn the_checker_finds_exactly_the_cycles_in_its_own_example() {
    let sources = [
        ("", "mod a; mod b; mod c; mod d; pub use a::X;"),
        ("a", "use crate::{b::{self, Y}, X as _};\n// crate::d::Z\n"),
        ("b", "pub fn f() { crate::c::g(); let _ = \"crate::d\"; }"),
        (
            "c",
            "use crate::a::inner::W;\n#[cfg(test)]\nmod t { use crate::d::Z; }",
        ),
        ("d", "use crate::X;\n"),
        ("a::inner", "pub struct W(crate::a::V);"),
    ];
    let modules: BTreeMap<String, Module> = sources
        .iter()
        .map(|(path, text)| {
            let module = Module {
                file: PathBuf::from(path),
                text: (*text).to_owned(),
            };
            ((*path).to_owned(), module)
        })
        .collect();
    let package = Package {
        name: "example".to_owned(),
        modules,
    };
    let graph = package.edges();
    assert_eq!(
        graph["a"].iter().collect::<Vec<_>>(),
        ["", "b"],
        "a's edges"
    );
    assert_eq!(graph["c"].iter().collect::<Vec<_>>(), ["a::inner"]);
    let sets = strongly_connected(&graph);
    assert_eq!(
        sets,
        [vec![
            "a".to_owned(),
            "a::inner".to_owned(),
            "b".to_owned(),
            "c".to_owned()
        ]]
    );
    assert_eq!(
        cycle_through(&graph, &sets[0]),
        "a -> b -> c -> a::inner -> a"
    );
}

/// One package: its module tree, keyed by module path (`""` for the root, `a::b`).
struct Package {
    name: String,
    modules: BTreeMap<String, Module>,
}

struct Module {
    file: PathBuf,
    /// The file's text as written (its lines are counted).
    text: String,
}

/// Every package of the workspace with a `src/` directory: the root package and
/// `crates/*`. A package with both `lib.rs` and `main.rs` gives two trees (`name` and
/// `name (bin)`).
fn packages(root: &Path) -> Vec<Package> {
    let mut dirs = vec![root.to_path_buf()];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap_or_else(|e| panic!("the workspace has no readable crates/ directory: {e}"))
        .map(|entry| match entry {
            Ok(entry) => entry.path(),
            Err(e) => panic!("unreadable crates/ entry: {e}"),
        })
        .filter(|path| path.join("src").is_dir())
        .collect();
    crates.sort();
    dirs.extend(crates);
    let mut packages = Vec::new();
    for dir in dirs {
        let name = if dir == root {
            ".".to_owned()
        } else {
            relative(root, &dir)
        };
        for (entry, label) in [
            ("lib.rs", name.clone()),
            ("main.rs", format!("{name} (bin)")),
        ] {
            let file = dir.join("src").join(entry);
            if file.is_file() {
                let mut modules = BTreeMap::new();
                collect(&file, "", true, &mut modules);
                packages.push(Package {
                    name: label,
                    modules,
                });
            }
        }
    }
    assert!(
        packages.len() > 10,
        "expected every package of the workspace, found {}",
        packages.len()
    );
    packages
}

/// Reads the module in `file` (path `path`) and, recursively, its non-test `mod x;` children.
/// `owns_dir` is true for `lib.rs`, `main.rs` and `mod.rs`, whose children live beside them.
fn collect(file: &Path, path: &str, owns_dir: bool, into: &mut BTreeMap<String, Module>) {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let children = declared_modules(&strip(&text));
    let paths = path_attributes(&text);
    let dir = if owns_dir {
        file.parent()
            .unwrap_or_else(|| panic!("{} has no directory", file.display()))
            .to_path_buf()
    } else {
        file.with_extension("")
    };
    into.insert(
        path.to_owned(),
        Module {
            file: file.to_path_buf(),
            text,
        },
    );
    for child in children {
        let child_path = if path.is_empty() {
            child.clone()
        } else {
            format!("{path}::{child}")
        };
        // `#[path = "x.rs"]` is relative to the declaring file's directory, and the file it
        // names holds its children beside it (as a `mod.rs` does).
        if let Some(attribute) = paths.get(&child) {
            let beside = file.parent().map_or_else(PathBuf::new, Path::to_path_buf);
            collect(&beside.join(attribute), &child_path, true, into);
            continue;
        }
        let flat = dir.join(format!("{child}.rs"));
        let nested = dir.join(&child).join("mod.rs");
        if flat.is_file() {
            collect(&flat, &child_path, false, into);
        } else if nested.is_file() {
            collect(&nested, &child_path, true, into);
        } else {
            panic!(
                "module {child_path} declared in {} has no file",
                file.display()
            );
        }
    }
}

/// `mod name;` → the file of its `#[path = "…"]` attribute, read from the raw text.
fn path_attributes(text: &str) -> BTreeMap<String, String> {
    const MARK: &str = "#[path = \"";
    let mut found = BTreeMap::new();
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        rest = &rest[at + MARK.len()..];
        let Some(close) = rest.find('"') else { break };
        let file = rest[..close].to_owned();
        let after = rest[close..].trim_start_matches(['"', ']']);
        let tokens = tokens(after);
        let mut i = 0;
        while i < tokens.len() && tokens[i] != "mod" {
            i += 1;
        }
        if let Some(name) = tokens.get(i + 1) {
            found.insert(name.clone(), file);
        }
    }
    found
}

/// The names of `mod x;` declarations (file modules) in stripped text.
fn declared_modules(stripped: &str) -> Vec<String> {
    let tokens = tokens(stripped);
    let mut found = Vec::new();
    for window in tokens.windows(3) {
        if window[0] == "mod" && window[2] == ";" && is_ident(&window[1]) {
            found.push(window[1].clone());
        }
    }
    found
}

impl Package {
    /// Module → the modules its `crate::` paths reach (never itself).
    fn edges(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut graph = BTreeMap::new();
        for (path, module) in &self.modules {
            let mut targets = BTreeSet::new();
            for used in crate_paths(&strip(&module.text)) {
                let target = self.deepest_module(&used);
                if target != *path {
                    targets.insert(target);
                }
            }
            graph.insert(path.clone(), targets);
        }
        graph
    }

    /// The longest prefix of `segments` that names a module (the root when none does).
    fn deepest_module(&self, segments: &[String]) -> String {
        let mut best = String::new();
        for end in 1..=segments.len() {
            let candidate = segments[..end].join("::");
            if self.modules.contains_key(&candidate) {
                best = candidate;
            }
        }
        best
    }
}

/// Every path that starts with `crate::` in stripped text, as segments after `crate`, with
/// `use` groups (`crate::{a::{b, C}, d}`) expanded.
fn crate_paths(stripped: &str) -> Vec<Vec<String>> {
    let tokens = tokens(stripped);
    let mut paths = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let after_colons = tokens.get(i + 1).is_some_and(|t| t == "::");
        let preceded_by_path = i > 0 && tokens[i - 1] == "::";
        if tokens[i] == "crate" && after_colons && !preceded_by_path {
            let (tree, next) = use_tree(&tokens, i + 2);
            for mut path in tree {
                path.retain(|segment| segment != "self");
                paths.push(path);
            }
            i = next;
        } else {
            i += 1;
        }
    }
    paths
}

/// Parses a path tail or a `{…}` group at `at`; returns the expanded paths and the index
/// after them.
fn use_tree(tokens: &[String], mut at: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        match tokens.get(at).map(String::as_str) {
            Some("{") => {
                let mut paths = Vec::new();
                at += 1;
                loop {
                    match tokens.get(at).map(String::as_str) {
                        Some("}") => {
                            at += 1;
                            break;
                        }
                        Some(",") => at += 1,
                        None => break,
                        Some(_) => {
                            let (inner, next) = use_tree(tokens, at);
                            paths.extend(inner.into_iter().map(|tail| {
                                let mut path = prefix.clone();
                                path.extend(tail);
                                path
                            }));
                            at = next;
                        }
                    }
                }
                return (paths, at);
            }
            Some(token) if is_ident(token) => {
                prefix.push(token.to_owned());
                at += 1;
                if tokens.get(at).is_some_and(|t| t == "::") {
                    at += 1;
                } else {
                    // `as name` renames the last segment; the path itself is complete.
                    if tokens.get(at).is_some_and(|t| t == "as") {
                        at += 2;
                    }
                    return (vec![prefix], at);
                }
            }
            // `*` (a glob) or any other token ends the path.
            Some("*") => return (vec![prefix], at + 1),
            _ => return (vec![prefix], at),
        }
    }
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && token.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Splits stripped text into identifiers, `::` and single punctuation characters.
fn tokens(stripped: &str) -> Vec<String> {
    let chars: Vec<char> = stripped.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".to_owned());
            i += 2;
        } else {
            tokens.push(c.to_string());
            i += 1;
        }
    }
    tokens
}

/// `text` without comments, string and character literals, and without items marked
/// `#[cfg(test)]` (the attribute and the item after it, to its `;` or matching `}`).
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && raw_string_at(&chars, i) {
            i += 1;
            let mut hashes = 0;
            while chars.get(i) == Some(&'#') {
                hashes += 1;
                i += 1;
            }
            i += 1; // the opening quote
            while i < chars.len() {
                if chars[i] == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && char_literal_len(&chars, i).is_some() {
            i += char_literal_len(&chars, i).unwrap_or(1);
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    remove_test_items(&out)
}

/// Whether a raw string (`r"…"`, `r#"…"#`) starts at `i` (and not an identifier ending in r).
fn raw_string_at(chars: &[char], i: usize) -> bool {
    let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    starts_word && chars.get(j) == Some(&'"')
}

/// The length of a character literal at `i` (`'a'`, `'\n'`, `'\u{1F600}'`), or `None` for a
/// lifetime.
fn char_literal_len(chars: &[char], i: usize) -> Option<usize> {
    if chars.get(i + 1) == Some(&'\\') {
        let mut j = i + 2;
        while j < chars.len() && chars[j] != '\'' {
            j += 1;
        }
        return Some(j + 1 - i);
    }
    (chars.get(i + 2) == Some(&'\'')).then_some(3)
}

/// Removes `#[cfg(test)]` and the item it marks from comment-free text.
fn remove_test_items(text: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (offset, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = offset + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = offset + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The strongly connected sets of two or more modules (Tarjan), each sorted, in order.
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        sets: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, node: &'g str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            let graph = self.graph;
            for next in graph.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut set = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    set.push(top.to_owned());
                    if top == node {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.sets.push(set);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        sets: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.sets.sort();
    walk.sets
}

/// One cycle through the set, from its first module back to it (shortest, by breadth-first
/// search inside the set), written `a -> b -> a` (the root module is written `crate`).
fn cycle_through(graph: &BTreeMap<String, BTreeSet<String>>, set: &[String]) -> String {
    let start = &set[0];
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.as_str()]);
    let mut closing = None;
    while let Some(node) = queue.pop_front() {
        for next in &graph[node] {
            if !set.contains(next) {
                continue;
            }
            if next == start {
                closing = Some(node);
                break;
            }
            if !parent.contains_key(next.as_str()) {
                parent.insert(next, node);
                queue.push_back(next);
            }
        }
        if closing.is_some() {
            break;
        }
    }
    let mut path = vec![start.as_str()];
    let Some(mut node) = closing else {
        panic!("no cycle through {start} inside {set:?}: not a strongly connected set");
    };
    let mut back = Vec::new();
    while node != start {
        back.push(node);
        node = parent[node];
    }
    path.extend(back.into_iter().rev());
    path.push(start);
    path.iter()
        .map(|m| if m.is_empty() { "crate" } else { m })
        .collect::<Vec<_>>()
        .join(" -> ")
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}
