//! No import cycle between the files of any crate of the workspace.
//!
//! Each file of a crate's `src/` is a node (`lib.rs`/`main.rs` the root
//! module, `a/mod.rs` and `a.rs` the module `a`, `a/b.rs` the module `a::b`,
//! a `#[path]` file the module its `mod` line declares). An edge goes from a
//! file to the file that DEFINES what its code names: a path through a
//! re-export (`pub use`, `pub(crate) use`, a glob `pub use x::*`, or a plain
//! `use` a child reaches through `super::`) is followed to the file where the
//! item is written, so a facade `mod.rs` hides no cycle between the files
//! behind it. A file's own re-export is no edge unless its code uses the name
//! itself. A parent's `mod child;` is containment, not an edge. Comments,
//! string literals and the inline `#[cfg(test)] mod tests { … }` are left
//! out.
//!
//! A cycle fails the test, named file by file with the path that makes each
//! edge. The test lives in `testkit` because it reads every crate's sources
//! as text and so depends on none of them: it builds in seconds, does not wait
//! for the engine to compile, and belongs to no one crate's layering.
//!
//! The reading is lexical (no macro expansion, no type inference): a name a
//! macro generates, or a method reached through a trait imported elsewhere,
//! is not seen. Those are not how modules depend on one another here.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// One `use` leaf: `use a::b::{c as d, e::*}` gives `a::b::c` named `d` and
/// the glob `a::b::e`.
#[derive(Debug, Clone)]
struct Import {
    /// The path as written, absolute in the crate (`crate::` dropped), or
    /// `None` for another crate's path.
    target: Option<Vec<String>>,
    /// The name it binds (`None` for a glob).
    name: Option<String>,
    /// `pub`, `pub(crate)`, `pub(super)`, …: a re-export.
    public: bool,
    /// The path as written, for the failure message.
    written: String,
}

/// What a file holds, as read from its text.
#[derive(Debug, Default)]
struct Unit {
    /// Its file, relative to `src/`.
    file: String,
    /// Items it writes itself (`fn`, `struct`, `enum`, `trait`, `type`,
    /// `const`, `static`, `mod`, `union`, `macro_rules!`).
    defined: BTreeSet<String>,
    imports: Vec<Import>,
    /// Its code without comments, strings, the test module and its `use`
    /// items.
    body: String,
}

/// The files of one crate and the edges between them.
struct Crate {
    /// Module path (`""` the root) → what its file holds.
    units: BTreeMap<String, Unit>,
}

/// File (relative to `src/`) → file → the path in the first file's code that
/// makes the edge.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `text` without comments and with string and character literals emptied
/// (lifetimes kept), so only code is read.
fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
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
        } else if c[i] == 'r'
            && (next == Some('"') || next == Some('#'))
            && !(i > 0 && is_ident(c[i - 1]))
        {
            // A raw string r"…" or r#"…"#.
            let mut j = i + 1;
            while j < c.len() && c[j] == '#' {
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            j += 1;
            while j < c.len() && !(c[j] == '"' && (1..=hashes).all(|h| c.get(j + h) == Some(&'#')))
            {
                j += 1;
            }
            i = j + 1 + hashes;
            out.push_str("\"\"");
        } else if c[i] == '"' {
            // Emptied, but a format string's inline arguments (`{LIMIT:.0}`)
            // are uses of those names: they are kept after it.
            let mut args = String::new();
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '{'
                    && c.get(i + 1)
                        .is_some_and(|&n| is_ident(n) && !n.is_ascii_digit())
                {
                    let end = (i + 1..c.len())
                        .find(|&j| !is_ident(c[j]))
                        .unwrap_or(c.len());
                    args.push(' ');
                    args.extend(&c[i + 1..end]);
                    i = end;
                    continue;
                }
                i += if c[i] == '\\' || (c[i] == '{' && c.get(i + 1) == Some(&'{')) {
                    2
                } else {
                    1
                };
            }
            i += 1;
            out.push_str("\"\"");
            out.push_str(&args);
        } else if c[i] == '\'' {
            // 'x', '\n', '\u{…}' are characters; 'a without a closing quote
            // two on is a lifetime.
            if next == Some('\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c[i]);
                i += 1;
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// `code` without its inline `#[cfg(test)] mod … { … }` (whose `use
/// super::*` names the file's own module) and without the paths of
/// `pub(in path)`, which limit who may name an item, not what it uses.
fn without_tests(code: &str) -> String {
    let mut code = code.to_string();
    while let Some(at) = code.find("#[cfg(test)]") {
        let mut rest = code[at + "#[cfg(test)]".len()..].trim_start();
        if let Some(vis) = rest.strip_prefix("pub") {
            rest = vis.trim_start();
            if rest.starts_with('(') {
                rest = rest.split_once(')').map_or("", |(_, r)| r).trim_start();
            }
        }
        let block = rest
            .strip_prefix("mod ")
            .map(|r| r.trim_start().trim_start_matches(is_ident));
        let Some(block) = block else {
            // Not an inline module (`#[cfg(test)] mod tests;`, a test-only
            // item): leave it, mark it read.
            code.replace_range(at..at + 1, " ");
            continue;
        };
        let block = block.trim_start();
        if !block.starts_with('{') {
            code.replace_range(at..at + 1, " ");
            continue;
        }
        let open = code.len() - block.len();
        let mut depth = 0;
        let mut end = code.len();
        for (i, ch) in code[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        code.replace_range(at..end, "");
    }
    while let Some(at) = code.find("pub(in ") {
        let end = code[at..].find(')').map_or(code.len(), |e| at + e + 1);
        code.replace_range(at..end, "pub(crate)");
    }
    code
}

/// The `use` leaves of one use tree starting at `c[i]`, each with the path
/// before it (`prefix`); returns where the tree ends.
fn use_tree(
    c: &[char],
    mut i: usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    let skip_ws = |i: &mut usize| {
        while *i < c.len() && c[*i].is_whitespace() {
            *i += 1;
        }
    };
    let mut path = prefix;
    loop {
        skip_ws(&mut i);
        if c.get(i) == Some(&'{') {
            i += 1;
            loop {
                skip_ws(&mut i);
                if c.get(i) == Some(&'}') {
                    return i + 1;
                }
                i = use_tree(c, i, path.clone(), out);
                skip_ws(&mut i);
                match c.get(i) {
                    Some(',') => i += 1,
                    Some('}') => return i + 1,
                    _ => return i,
                }
            }
        }
        if c.get(i) == Some(&'*') {
            out.push((path, None));
            return i + 1;
        }
        if c.get(i) == Some(&':') && c.get(i + 1) == Some(&':') {
            // A leading `::` names another crate.
            path.push("::".into());
            i += 2;
            continue;
        }
        let start = i;
        while i < c.len() && is_ident(c[i]) {
            i += 1;
        }
        path.push(c[start..i].iter().collect());
        skip_ws(&mut i);
        if c.get(i) == Some(&':') && c.get(i + 1) == Some(&':') {
            i += 2;
            continue;
        }
        let mut name = None;
        if c[i..].starts_with(&['a', 's']) && c.get(i + 2).is_some_and(|c| c.is_whitespace()) {
            i += 2;
            skip_ws(&mut i);
            let start = i;
            while i < c.len() && is_ident(c[i]) {
                i += 1;
            }
            name = Some(c[start..i].iter().collect());
        }
        if path.last().is_some_and(|s| s == "self") {
            path.pop();
        }
        let name = name.or_else(|| path.last().cloned());
        out.push((path, name));
        return i;
    }
}

/// The parent of module `m`.
fn parent(m: &[String]) -> Vec<String> {
    m[..m.len().saturating_sub(1)].to_vec()
}

fn split(module: &str) -> Vec<String> {
    module
        .split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl Crate {
    /// Reads the crate whose sources are under `src`.
    fn read(src: &Path) -> Crate {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        files.sort();
        let mut modules: BTreeMap<String, (PathBuf, String)> = BTreeMap::new();
        for file in &files {
            modules.insert(
                module_of(src, file),
                (file.clone(), std::fs::read_to_string(file).unwrap()),
            );
        }
        // A `#[path = "f.rs"] mod m;` puts f.rs at module `parent::m`.
        let mut moved = Vec::new();
        for (module, (file, text)) in &modules {
            let mut rest = text.as_str();
            while let Some(at) = rest.find("#[path = \"") {
                rest = &rest[at + 10..];
                let Some(end) = rest.find('"') else { break };
                let target = file.parent().unwrap().join(&rest[..end]);
                let decl = rest[end..].split_once("mod ").map(|(_, d)| d);
                if let Some(name) = decl.and_then(|d| d.split(|c: char| !is_ident(c)).next()) {
                    // The path is relative to the declaring file's directory;
                    // the module is the declaring module's child.
                    let m = if module.is_empty() {
                        name.to_string()
                    } else {
                        format!("{module}::{name}")
                    };
                    moved.push((module_of(src, &target), m));
                }
            }
        }
        for (from, to) in moved {
            if let Some(v) = modules.remove(&from) {
                modules.insert(to, v);
            }
        }
        let names: BTreeSet<String> = modules.keys().cloned().collect();
        let mut units = BTreeMap::new();
        for (module, (file, text)) in modules {
            let rel = file
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            units.insert(module.clone(), unit(&names, &module, rel, &text));
        }
        Crate { units }
    }

    /// The file module that path `p` (absolute) names, with the item it
    /// names in it if any: the longest prefix that is a file.
    fn file_prefix(&self, p: &[String]) -> (String, usize) {
        (0..=p.len())
            .rev()
            .map(|n| (p[..n].join("::"), n))
            .find(|(m, _)| self.units.contains_key(m))
            .unwrap()
    }

    /// The file (module) defining what absolute path `p` names, following
    /// re-exports; `None` when it leads out of the crate.
    fn defining(&self, p: &[String], depth: usize) -> Option<String> {
        let (module, n) = self.file_prefix(p);
        if n == p.len() || depth > 32 {
            return Some(module);
        }
        self.lookup(&module, &p[n], &p[n + 1..], depth)
            .unwrap_or(Some(module))
    }

    /// Where `name` (then `rest`) in `module` is defined, if `module` writes
    /// it (`Some(Some(module))`) or imports it (`Some(None)` from another
    /// crate).
    fn lookup(
        &self,
        module: &str,
        name: &str,
        rest: &[String],
        depth: usize,
    ) -> Option<Option<String>> {
        let unit = &self.units[module];
        // An import first: a name a module imports it cannot also write at
        // its top level, so a `defined` match would be a method's name.
        if let Some(imp) = unit
            .imports
            .iter()
            .find(|i| i.name.as_deref() == Some(name))
        {
            let Some(target) = &imp.target else {
                return Some(None);
            };
            let mut p = target.clone();
            p.extend_from_slice(rest);
            return Some(self.defining(&p, depth + 1));
        }
        if unit.defined.contains(name) {
            return Some(Some(module.to_string()));
        }
        unit.imports.iter().find_map(|imp| {
            let (None, Some(target)) = (&imp.name, &imp.target) else {
                return None;
            };
            let (m, n) = self.file_prefix(target);
            (n == target.len() && m != module && depth < 32)
                .then(|| self.lookup(&m, name, rest, depth + 1))
                .flatten()
        })
    }

    /// File → file edges, each with the path that makes it.
    fn graph(&self) -> Graph {
        let mut graph = Graph::new();
        for (module, unit) in &self.units {
            let edges = graph.entry(unit.file.clone()).or_default();
            let mut add = |to: Option<String>, why: String| {
                if let Some(to) = to {
                    if &to != module {
                        edges.entry(self.units[&to].file.clone()).or_insert(why);
                    }
                }
            };
            let used = idents(&unit.body);
            for imp in &unit.imports {
                let Some(target) = &imp.target else { continue };
                let shown = format!("use {}", imp.written);
                match &imp.name {
                    // A glob: an edge to its module when the file uses one
                    // of the names that module writes.
                    None => {
                        let (m, n) = self.file_prefix(target);
                        let glob = format!("{shown}::*");
                        if n < target.len() {
                            // An enum's variants (`use Kind::*`).
                            add(self.defining(target, 0), glob);
                        } else if !imp.public
                            || self.units[&m].defined.iter().any(|d| used.contains(d))
                        {
                            add(Some(m), glob);
                        }
                    }
                    Some(name) => {
                        // A module import is no edge by itself: the paths
                        // through it are (below). A re-export is an edge
                        // only when the file uses the name itself.
                        let (_, n) = self.file_prefix(target);
                        if n == target.len() || (imp.public && !used.contains(name)) {
                            continue;
                        }
                        add(self.defining(target, 0), shown);
                    }
                }
            }
            for (path, written) in self.inline_paths(module, unit) {
                add(self.defining(&path, 0), written);
            }
        }
        graph
    }

    /// The absolute paths `unit`'s code (outside its `use` items) writes
    /// through `crate::`, `super::`, `self::`, a child module or an imported
    /// name.
    fn inline_paths(&self, module: &str, unit: &Unit) -> Vec<(Vec<String>, String)> {
        let here = split(module);
        let c: Vec<char> = unit.body.chars().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < c.len() {
            if !is_ident(c[i])
                || (i > 0 && (is_ident(c[i - 1]) || c[i - 1] == '$' || c[i - 1] == ':'))
            {
                i += 1;
                continue;
            }
            // A path: identifiers joined by `::`.
            let mut segs = Vec::new();
            let mut j = i;
            loop {
                let start = j;
                while j < c.len() && is_ident(c[j]) {
                    j += 1;
                }
                if j == start {
                    break;
                }
                segs.push(c[start..j].iter().collect::<String>());
                if c.get(j) == Some(&':') && c.get(j + 1) == Some(&':') {
                    j += 2;
                } else {
                    break;
                }
            }
            i = j.max(i + 1);
            if segs.len() < 2 {
                continue;
            }
            if let Some(abs) = self.absolute(&here, unit, &segs) {
                out.push((abs, segs.join("::")));
            }
        }
        out
    }

    /// `segs` as written in module `here` made absolute, or `None` when it
    /// does not start in this crate.
    fn absolute(&self, here: &[String], unit: &Unit, segs: &[String]) -> Option<Vec<String>> {
        let (mut base, mut rest) = match segs[0].as_str() {
            "crate" => (Vec::new(), &segs[1..]),
            "self" => (here.to_vec(), &segs[1..]),
            "super" => (parent(here), &segs[1..]),
            first => {
                let mut child = here.to_vec();
                child.push(first.to_string());
                if self.units.contains_key(&child.join("::")) {
                    (here.to_vec(), segs)
                } else {
                    let imp = unit
                        .imports
                        .iter()
                        .find(|i| i.name.as_deref() == Some(first))?;
                    (imp.target.clone()?, &segs[1..])
                }
            }
        };
        while rest.first().is_some_and(|s| s == "super") {
            base = parent(&base);
            rest = &rest[1..];
        }
        base.extend_from_slice(rest);
        Some(base)
    }
}

/// The identifiers in `code`.
fn idents(code: &str) -> BTreeSet<String> {
    code.split(|c: char| !is_ident(c))
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// Reads one file: its items, its `use` leaves made absolute, its code
/// without them.
fn unit(modules: &BTreeSet<String>, module: &str, file: String, text: &str) -> Unit {
    let code = without_tests(&strip(text));
    let here = split(module);
    let c: Vec<char> = code.chars().collect();
    let mut body: Vec<char> = c.clone();
    let mut leaves = Vec::new();
    let mut i = 0;
    while i + 4 <= c.len() {
        let at_word = c[i..].starts_with(&['u', 's', 'e'])
            && !(i > 0 && is_ident(c[i - 1]))
            && c.get(i + 3)
                .is_some_and(|c| c.is_whitespace() || *c == ':' || *c == '{');
        if !at_word {
            i += 1;
            continue;
        }
        let vis_start = visibility_before(&c, i);
        let mut tree = Vec::new();
        let end = use_tree(&c, i + 3, Vec::new(), &mut tree);
        let end = c[end..]
            .iter()
            .position(|&ch| ch == ';')
            .map_or(c.len(), |p| end + p + 1);
        let from = vis_start.unwrap_or(i);
        for ch in &mut body[from..end] {
            *ch = ' ';
        }
        for (path, name) in tree {
            leaves.push((path, name, vis_start.is_some()));
        }
        i = end;
    }
    let body: String = body.into_iter().collect();
    let words: Vec<&str> = code
        .split(|c: char| !is_ident(c) && c != '!')
        .filter(|s| !s.is_empty())
        .collect();
    let mut defined = BTreeSet::new();
    for w in words.windows(3) {
        let item = match w[0] {
            "fn" | "struct" | "enum" | "trait" | "type" | "mod" | "union" => w[1],
            "const" | "static" if w[1] == "mut" => w[2],
            "const" | "static" => w[1],
            "macro_rules!" => w[1],
            _ => continue,
        };
        if !matches!(item, "fn" | "unsafe" | "async" | "extern" | "mut") {
            defined.insert(item.trim_end_matches('!').to_string());
        }
    }
    let own: BTreeSet<String> = leaves.iter().filter_map(|(_, n, _)| n.clone()).collect();
    let imports = leaves
        .into_iter()
        .map(|(path, name, public)| Import {
            target: absolute_use(modules, &here, &own, &path),
            written: path.join("::"),
            name,
            public,
        })
        .collect();
    Unit {
        file,
        defined,
        imports,
        body,
    }
}

/// Where a `pub`, `pub(crate)`, `pub(super)` or `pub(in …)` written just
/// before `c[at]` starts, if one is.
fn visibility_before(c: &[char], at: usize) -> Option<usize> {
    let mut i = at;
    while i > 0 && c[i - 1].is_whitespace() {
        i -= 1;
    }
    if i > 0 && c[i - 1] == ')' {
        while i > 0 && c[i - 1] != '(' {
            i -= 1;
        }
        i = i.checked_sub(1)?;
        while i > 0 && c[i - 1].is_whitespace() {
            i -= 1;
        }
    }
    let is_pub = i >= 3 && c[i - 3..i] == ['p', 'u', 'b'] && !(i > 3 && is_ident(c[i - 4]));
    is_pub.then(|| i - 3)
}

/// A `use` path written in module `here` made absolute in the crate, or
/// `None` for another crate's.
fn absolute_use(
    modules: &BTreeSet<String>,
    here: &[String],
    own: &BTreeSet<String>,
    path: &[String],
) -> Option<Vec<String>> {
    let first = path.first()?;
    let (mut base, mut rest) = match first.as_str() {
        "::" => return None,
        "crate" => (Vec::new(), &path[1..]),
        "self" => (here.to_vec(), &path[1..]),
        "super" => (parent(here), &path[1..]),
        name => {
            let mut child = here.to_vec();
            child.push(name.to_string());
            // A child module, or (2018 paths) a name this module itself
            // writes or imports; anything else is another crate.
            if modules.contains(&child.join("::")) || (own.contains(name) && path.len() > 1) {
                (here.to_vec(), path)
            } else {
                return None;
            }
        }
    };
    while rest.first().is_some_and(|s| s == "super") {
        base = parent(&base);
        rest = &rest[1..];
    }
    base.extend_from_slice(rest);
    Some(base)
}

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

/// The strongly connected sets of more than one file (Tarjan), each sorted.
fn strongly_connected(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        sets: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flat_map(|e| e.keys()) {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut set = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                set.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                s.sets.push(set);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        sets: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.sets.sort();
    s.sets
}

/// A shortest cycle through the first file of `set`, file by file.
fn shortest_cycle(graph: &Graph, set: &[String]) -> Vec<String> {
    let start = &set[0];
    let inside: BTreeSet<&String> = set.iter().collect();
    let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in graph[v].keys().filter(|w| inside.contains(w)) {
            if w == start {
                let mut cycle = vec![start.clone(), v.clone()];
                let mut at = v;
                while at != start {
                    at = came_from[at];
                    cycle.push(at.clone());
                }
                cycle.reverse();
                return cycle;
            }
            if !came_from.contains_key(w) && w != start {
                came_from.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    unreachable!("a strongly connected set has a cycle through each member")
}

/// Each cycle of a crate's files, named file by file with the path making
/// each edge.
fn cycles(graph: &Graph) -> Vec<String> {
    strongly_connected(graph)
        .iter()
        .map(|set| {
            let cycle = shortest_cycle(graph, set);
            let mut text = cycle[0].clone();
            for pair in cycle.windows(2) {
                text += &format!("\n    → {}  (`{}`)", pair[1], graph[&pair[0]][&pair[1]]);
            }
            let others: Vec<&String> = set.iter().filter(|f| !cycle.contains(f)).collect();
            if !others.is_empty() {
                text += &format!("\n    (its strongly connected set also holds {others:?})");
            }
            text
        })
        .collect()
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
    assert!(crates.len() >= 10, "{crates:?}");
    let mut all = Vec::new();
    for src in &crates {
        let name = src.parent().unwrap().file_name().unwrap().to_string_lossy();
        for cycle in cycles(&Crate::read(src).graph()) {
            all.push(format!("crates/{name}/src:\n    {cycle}"));
        }
    }
    assert!(
        all.is_empty(),
        "import cycles between files:\n{}",
        all.join("\n")
    );
}

#[test]
fn the_workspace_is_a_graph_with_edges() {
    // The reading finds the edges the crates are built from, so an empty
    // graph cannot pass the test above by accident: every crate of more than
    // three files has edges between them, and the engine's go through its
    // re-exports to the defining files.
    for src in workspace_crates() {
        let graph = Crate::read(&src).graph();
        let edges: usize = graph.values().map(BTreeMap::len).sum();
        if graph.len() > 3 {
            assert!(edges >= graph.len() / 2, "{src:?}: {graph:#?}");
        }
        if src.ends_with("engine/src") {
            let has = |from: &str, to: &str| graph.get(from).is_some_and(|e| e.contains_key(to));
            // `super::Dialer` is `transport/mod.rs`'s `pub use dialer::…`;
            // `super::lock` the responder's private `use crate::lock::lock`.
            assert!(
                has("transport/tls_row.rs", "transport/dialer.rs"),
                "{graph:#?}"
            );
            assert!(has("responder/own.rs", "lock.rs"), "{graph:#?}");
        }
    }
}

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A scratch source tree under the temporary directory, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(name: &str) -> Tree {
        let dir = std::env::temp_dir().join(format!("module-graph-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Tree(dir)
    }

    fn graph(&self) -> Graph {
        Crate::read(&self.0).graph()
    }

    fn edges(&self, file: &str) -> Vec<String> {
        self.graph()[file].keys().cloned().collect()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_cycle_is_found_and_named() {
    let tree = Tree::new("plain");
    let dir = &tree.0;
    write(dir, "lib.rs", "mod a;\nmod b;\nmod c;\n");
    // a → b through a group, a → c/d.rs through the module it imports and
    // that module's re-export, b → c/mod.rs inline.
    write(
        dir,
        "a.rs",
        "use crate::{b::Thing, c};\npub struct X;\nfn f() { c::h(); }\n",
    );
    write(dir, "b.rs", "// use crate::a; is a comment\nconst S: &str = \"crate::a::S\";\nfn f() { crate::c::g() }\n");
    write(dir, "c/mod.rs", "mod d;\npub use d::h;\npub fn g() {}\n");
    write(
        dir,
        "c/d.rs",
        "pub fn h() {}\n#[cfg(test)]\nmod tests {\n    use crate::a::X;\n}\n",
    );
    assert_eq!(
        tree.edges("b.rs"),
        ["c/mod.rs"],
        "comments and strings are no edges"
    );
    assert_eq!(
        tree.edges("a.rs"),
        ["b.rs", "c/d.rs"],
        "a module import is followed to what it names"
    );
    assert_eq!(
        tree.edges("c/d.rs"),
        Vec::<String>::new(),
        "the inline test module is no edge"
    );
    assert_eq!(cycles(&tree.graph()), Vec::<String>::new());
    // c/d.rs → a through `super` of a child; c/mod.rs contains c/d.rs, which
    // is no edge.
    write(dir, "c/d.rs", "use super::super::a::X;\npub fn h() {}\n");
    let found = cycles(&tree.graph());
    assert_eq!(
        found,
        ["a.rs\n    → c/d.rs  (`c::h`)\n    → a.rs  (`use super::super::a::X`)"],
        "{found:?}"
    );
}

#[test]
fn a_cycle_through_re_exports_is_found_file_by_file() {
    // The engine's old shape: a facade `transport/mod.rs` re-exports its
    // rows; `sockopt.rs` uses a row through the facade, the row uses
    // `mptcp.rs` through another re-export, and `mptcp.rs` uses `sockopt`.
    // Module by module there is no cycle (sockopt → transport, and transport
    // only re-exports); file by file there is one.
    let tree = Tree::new("reexport");
    let dir = &tree.0;
    write(
        dir,
        "lib.rs",
        "pub mod sockopt;\npub mod transport;\npub use transport::Row as TopRow;\n",
    );
    write(
        dir,
        "transport/mod.rs",
        "mod rows;\nmod mptcp;\npub use rows::Row;\npub(crate) use mptcp::*;\npub struct Transport;\n",
    );
    write(
        dir,
        "transport/rows.rs",
        "use super::{Transport, Fallback};\npub struct Row;\n",
    );
    write(
        dir,
        "transport/mptcp.rs",
        "pub struct Fallback;\nfn f() { crate::sockopt::set() }\n",
    );
    write(dir, "sockopt.rs", "pub fn set() {}\n");
    assert_eq!(
        tree.edges("transport/rows.rs"),
        ["transport/mod.rs", "transport/mptcp.rs"],
        "a glob re-export is followed to the file that writes the name"
    );
    assert_eq!(
        tree.edges("transport/mod.rs"),
        Vec::<String>::new(),
        "a re-export alone is no edge"
    );
    assert!(cycles(&tree.graph()).is_empty());

    // Through the crate root's re-export of the facade's re-export.
    write(dir, "sockopt.rs", "use crate::TopRow;\npub fn set() {}\n");
    let found = cycles(&tree.graph());
    assert_eq!(
        found,
        ["sockopt.rs\n    → transport/rows.rs  (`use crate::TopRow`)\n    → transport/mptcp.rs  (`use super::Fallback`)\n    → sockopt.rs  (`crate::sockopt::set`)"],
        "{found:?}"
    );

    // Through a path written inline (`crate::transport::Row`) and a
    // `pub(crate) use` of an item written elsewhere.
    write(
        dir,
        "sockopt.rs",
        "pub fn set() { let _ = crate::transport::Row; }\n",
    );
    assert_eq!(tree.edges("sockopt.rs"), ["transport/rows.rs"]);
    assert_eq!(cycles(&tree.graph()).len(), 1);
}
