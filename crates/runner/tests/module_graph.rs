//! No import cycle inside any crate of the workspace: for every crate's
//! `src/`, each file is a module (`lib.rs`/`main.rs` the root, `a/mod.rs`
//! and `a.rs` the module `a`, `a/b.rs` the module `a::b`), and each
//! `crate::…` or `super::…` path in its code (its `use` lines and inline
//! paths alike, comments and the inline test module left out) is an edge to
//! the longest module that path names. A cycle among those edges fails the
//! test, named module by module. A parent's `mod child;` is containment,
//! not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The module path of `file` under `src` (`""` for the crate root).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its inline test module
/// (whose `use super::*` names the file's own module).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths (as segment lists, `{a, b::c}` groups expanded) starting at
/// `at` in `code`, which follows `crate::` or `super::`.
fn paths_at(code: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    let mut path = prefix;
    loop {
        while i < bytes.len() && bytes[i].is_whitespace() {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == '{' {
            i += 1;
            loop {
                let rest: String = bytes[i..].iter().collect();
                i += paths_at(&rest, path.clone(), out);
                while i < bytes.len() && (bytes[i].is_whitespace() || bytes[i] == ',') {
                    i += 1;
                }
                if i >= bytes.len() || bytes[i] == '}' {
                    return i + 1;
                }
            }
        }
        let start = i;
        while i < bytes.len() && is_ident(bytes[i]) {
            i += 1;
        }
        if i > start {
            path.push(bytes[start..i].iter().collect());
        }
        if i + 1 < bytes.len() && bytes[i] == ':' && bytes[i + 1] == ':' {
            i += 2;
            continue;
        }
        out.push(path);
        return i;
    }
}

/// The crate-relative paths a module's code names through `crate::` and
/// `super::` (the latter resolved against `module`).
fn referenced(module: &str, code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (key, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        // Not the tail of another path or identifier (`$crate::`, `x_crate::`).
        let before = code[..key].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == '$' || c == ':') {
            continue;
        }
        let after = &code[key..];
        let (prefix, rest) = if let Some(rest) = after.strip_prefix("crate::") {
            (Vec::new(), rest)
        } else {
            // `super` of module `a::b` (file a/b.rs or a/b/mod.rs) is `a`.
            let mut base: Vec<String> = module
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            let mut rest = after;
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            (base, rest)
        };
        paths_at(rest, prefix, &mut out);
    }
    out
}

/// The module graph of one crate's `src/`.
fn graph_of(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    let mut graph = Graph::new();
    for file in &files {
        let module = module_of(src, file);
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let edges = graph.entry(module.clone()).or_default();
        for path in referenced(&module, &code) {
            // The longest prefix that is a module (a file) of this crate.
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find(|p| modules.contains(p));
            if let Some(t) = target {
                if t != module {
                    edges.insert(t);
                }
            }
        }
    }
    graph
}

/// Each cycle found, as `a → b → a` (one per strongly connected set).
fn cycles(graph: &Graph) -> Vec<String> {
    // Depth-first search with the path on a stack; a back edge is a cycle.
    fn visit(
        node: &str,
        graph: &Graph,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<String>,
    ) {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.to_string());
            let named: Vec<String> = cycle
                .iter()
                .map(|m| {
                    if m.is_empty() {
                        "(root)".into()
                    } else {
                        m.clone()
                    }
                })
                .collect();
            found.push(named.join(" → "));
            return;
        }
        if done.contains(node) {
            return;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, stack, done, found);
        }
        stack.pop();
        done.insert(node.to_string());
    }
    let (mut done, mut found) = (BTreeSet::new(), Vec::new());
    for node in graph.keys() {
        visit(node, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

fn workspace_crates() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    crates
}

#[test]
fn no_crate_has_an_import_cycle() {
    let crates = workspace_crates();
    assert!(crates.len() >= 9, "{crates:?}");
    let mut all = Vec::new();
    for src in &crates {
        let name = src.parent().unwrap().file_name().unwrap().to_string_lossy();
        for cycle in cycles(&graph_of(src)) {
            all.push(format!("crates/{name}: {cycle}"));
        }
    }
    assert!(all.is_empty(), "import cycles:\n{}", all.join("\n"));
}

#[test]
fn the_runner_modules_are_a_graph_with_edges() {
    // The parser finds the edges the runner is built from (so an empty graph
    // cannot pass the test above by accident).
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph_of(&src);
    let has = |from: &str, to: &str| graph.get(from).is_some_and(|e| e.contains(to));
    assert!(
        has("session", "resolve") && has("session", "repeat"),
        "{graph:?}"
    );
    assert!(
        has("guest_side", "session") && has("guest_step", "resolve"),
        "{graph:?}"
    );
    assert!(
        has("repeat", "repeat_mean") && has("find_rate", "session"),
        "{graph:?}"
    );
}

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_cycle_is_found_and_named() {
    let dir = std::env::temp_dir().join(format!("module-graph-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write(&dir, "lib.rs", "mod a;\nmod b;\nmod c;\n");
    // a → b through a group, b → c inline, c → a through `super` of a child.
    write(&dir, "a.rs", "use crate::{b::Thing, c};\n");
    write(
        &dir,
        "b.rs",
        "// use crate::a; is a comment\nfn f() { crate::c::g() }\n",
    );
    write(&dir, "c/mod.rs", "mod d;\n");
    write(
        &dir,
        "c/d.rs",
        "use super::super::a::X;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    );
    let graph = graph_of(&dir);
    assert_eq!(
        graph["b"],
        BTreeSet::from(["c".to_string()]),
        "comments are not edges"
    );
    assert_eq!(graph["c::d"], BTreeSet::from(["a".to_string()]));
    assert!(
        cycles(&graph).is_empty(),
        "c contains c::d: containment is no edge"
    );
    write(&dir, "c/mod.rs", "mod d;\nuse crate::c::d::Y;\n");
    let found = cycles(&graph_of(&dir));
    assert_eq!(found, ["a → b → c → c::d → a"], "{found:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
