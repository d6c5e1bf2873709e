//! No import cycles between the files of a library crate: a file that
//! names another file's module by `crate::` or `super::` (in a `use` or in
//! a path inside the code) depends on it, and these dependencies must form
//! no cycle, so that each file can be read, and moved, after the files it
//! uses. A parent's own `mod child;` and relative `child::` paths are not
//! counted: a module may re-export its children. Nor are unit tests
//! (`#[cfg(test)] mod`): a test may use any part of its crate.
//!
//! The sources are read as text: comments, strings and character literals
//! are dropped, then every path that starts with `crate::`, `$crate::` or
//! `super::` (with its `{...}` groups) is resolved to the file of the
//! longest module prefix it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LIBRARY_CRATES: &[&str] = &["btf", "dwarf2btf", "ksyms", "kmem", "perfdata", "inspect"];

#[test]
fn library_crates_have_no_import_cycles() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for name in LIBRARY_CRATES {
        let src = crates.join(name).join("src");
        let graph = import_graph(&src);
        for cycle in cycles(&graph) {
            let shown: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    let line = graph[&w[0]][&w[1]];
                    format!("{} (line {line})", w[0].display())
                })
                .chain(cycle.last().map(|f| f.display().to_string()))
                .collect();
            found.push(format!("{name}: {}", shown.join(" -> ")));
        }
    }
    assert!(
        found.is_empty(),
        "import cycles between files (each arrow: the line of the first import):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_cycle_is_found_and_named() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let src = dir.path();
    std::fs::create_dir(src.join("a")).expect("mkdir");
    let files = [
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a/mod.rs", "mod c;\n// use crate::b;\nfn f() { let s = \"crate::b\"; }\n"),
        ("a/c.rs", "use crate::{b::{self, X}, a};\n"),
        ("b.rs", "fn g() -> super::a::c::Y { todo!() }\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::a;\n}\n"),
    ];
    for (name, text) in files {
        std::fs::write(src.join(name), text).expect("write");
    }
    let graph = import_graph(src);
    let file = |f: &str| PathBuf::from(f);
    assert!(
        graph[&file("a/mod.rs")].is_empty(),
        "comments and strings are not imports"
    );
    assert_eq!(
        graph[&file("a/c.rs")].keys().collect::<Vec<_>>(),
        [&file("a/mod.rs"), &file("b.rs")]
    );
    assert_eq!(
        graph[&file("b.rs")].keys().collect::<Vec<_>>(),
        [&file("a/c.rs")]
    );
    assert_eq!(
        cycles(&graph),
        [vec![file("a/c.rs"), file("b.rs"), file("a/c.rs")]]
    );
}

/// Each file (relative to `src`) and the files it imports, with the line
/// of the first import of each.
fn import_graph(src: &Path) -> BTreeMap<PathBuf, BTreeMap<PathBuf, usize>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(src).expect("under src").to_owned();
            (module_path(&rel), rel)
        })
        .collect();
    let mut graph = BTreeMap::new();
    for (module, rel) in &modules {
        let text = std::fs::read_to_string(src.join(rel)).expect("read a source file");
        let mut deps = BTreeMap::new();
        for (path, line) in crate_paths(&tokens(&text), module) {
            let target = (0..=path.len())
                .rev()
                .find_map(|n| modules.get(&path[..n]))
                .expect("the crate root is a module");
            if target != rel {
                deps.entry(target.clone()).or_insert(line);
            }
        }
        graph.insert(rel.clone(), deps);
    }
    graph
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read a source folder")
        .map(|e| e.expect("a folder entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `lib.rs` is the crate, `a/mod.rs` and `a.rs` are `a`, `a/b.rs` is `a::b`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") || parts == ["lib"] {
        parts.pop();
    }
    parts
}

#[derive(Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// The identifiers and punctuation of Rust source, with their lines;
/// comments, string and character literals and lifetimes dropped.
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let skip_to = |i: &mut usize, line: &mut usize, end: usize| {
        *line += c[*i..end.min(c.len())]
            .iter()
            .filter(|&&x| x == '\n')
            .count();
        *i = end;
    };
    while i < c.len() {
        let rest = &c[i..];
        match rest {
            ['/', '/', ..] => {
                let end = rest
                    .iter()
                    .position(|&x| x == '\n')
                    .map_or(c.len(), |p| i + p);
                skip_to(&mut i, &mut line, end);
            }
            ['/', '*', ..] => {
                let (mut depth, mut j) = (0, i);
                while j < c.len() {
                    match &c[j..] {
                        ['/', '*', ..] => (depth, j) = (depth + 1, j + 2),
                        ['*', '/', ..] => (depth, j) = (depth - 1, j + 2),
                        _ => j += 1,
                    }
                    if depth == 0 {
                        break;
                    }
                }
                skip_to(&mut i, &mut line, j);
            }
            ['r', '#' | '"', ..] | ['b', 'r', '#' | '"', ..] => {
                let start = i + rest.iter().position(|&x| x == '#' || x == '"').unwrap_or(0);
                let hashes = c[start..].iter().take_while(|&&x| x == '#').count();
                if c.get(start + hashes) != Some(&'"') {
                    // `r#ident`: a raw identifier.
                    i = start + hashes;
                    continue;
                }
                let close: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let body = start + hashes + 1;
                let end = (body..c.len())
                    .find(|&j| c[j..].starts_with(&close))
                    .map_or(c.len(), |j| j + close.len());
                skip_to(&mut i, &mut line, end);
            }
            ['"', ..] | ['b', '"', ..] => {
                let mut j = i + rest.iter().position(|&x| x == '"').unwrap_or(0) + 1;
                while j < c.len() && c[j] != '"' {
                    j += if c[j] == '\\' { 2 } else { 1 };
                }
                skip_to(&mut i, &mut line, j + 1);
            }
            ['\'', '\\', ..] => {
                let end = (i + 2..c.len())
                    .find(|&j| c[j] == '\'')
                    .map_or(c.len(), |j| j + 1);
                skip_to(&mut i, &mut line, end);
            }
            ['\'', _, '\'', ..] => i += 3,
            // A lifetime: its name is no path.
            ['\'', ..] => {
                i += 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
            [':', ':', ..] => {
                out.push((Tok::Path, line));
                i += 2;
            }
            [x, ..] if x.is_alphabetic() || *x == '_' => {
                let n = rest
                    .iter()
                    .take_while(|x| x.is_alphanumeric() || **x == '_')
                    .count();
                out.push((Tok::Ident(rest[..n].iter().collect()), line));
                i += n;
            }
            ['\n', ..] => (i, line) = (i + 1, line + 1),
            [x, ..] if x.is_whitespace() => i += 1,
            [x, ..] => {
                out.push((Tok::Punct(*x), line));
                i += 1;
            }
            [] => unreachable!("i < c.len()"),
        }
    }
    out
}

/// Every path from the crate root that the tokens of the file of module
/// `module` name through `crate::` or `super::`, with its line.
fn crate_paths(toks: &[(Tok, usize)], module: &[String]) -> Vec<(Vec<String>, usize)> {
    let mut out = Vec::new();
    // Inline modules (`mod tests { ... }`) by the brace depth they close at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        let line = toks[i].1;
        match &toks[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            Tok::Punct('#') if is_cfg_test(&toks[i..]) => {
                i = after_item(toks, i);
                continue;
            }
            Tok::Ident(m) if m == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Punct('{'), _))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    inline.push((name.clone(), depth + 1));
                }
            }
            // Not the `super` of `super::super::`: read with the first.
            Tok::Ident(w)
                if (w == "crate" || w == "super")
                    && toks.get(i + 1).is_some_and(|t| t.0 == Tok::Path)
                    && (i == 0 || toks[i - 1].0 != Tok::Path) =>
            {
                let mut base = Vec::new();
                let mut j = i;
                if w == "super" {
                    base = module.to_vec();
                    base.extend(inline.iter().map(|(n, _)| n.clone()));
                    while matches!(&toks.get(j).map(|t| &t.0), Some(Tok::Ident(s)) if s == "super")
                        && toks.get(j + 1).is_some_and(|t| t.0 == Tok::Path)
                    {
                        base.pop();
                        j += 2;
                    }
                } else {
                    j += 2;
                }
                let mut paths = Vec::new();
                i = use_tree(toks, j, base, &mut paths);
                out.extend(paths.into_iter().map(|p| (p, line)));
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether the tokens start with `#[cfg(test)]`.
fn is_cfg_test(toks: &[(Tok, usize)]) -> bool {
    let want = [
        Tok::Punct('#'),
        Tok::Punct('['),
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
        Tok::Punct(']'),
    ];
    toks.len() >= want.len() && toks.iter().zip(&want).all(|(t, w)| t.0 == *w)
}

/// The index after the item that starts at `toks[i]`: its `;`, or the
/// brace that closes its first `{`.
fn after_item(toks: &[(Tok, usize)], mut i: usize) -> usize {
    let mut depth = 0;
    // Past the attribute: its brackets are no braces.
    i += 7;
    while i < toks.len() {
        match toks[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            Tok::Punct(';') if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Reads a path or use tree at `toks[i]` below `prefix` into `out`;
/// returns the index after it.
fn use_tree(
    toks: &[(Tok, usize)],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(s)) if s == "self" => i += 1,
            Some(Tok::Ident(s)) => {
                prefix.push(s.clone());
                i += 1;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match toks.get(i).map(|t| &t.0) {
                        Some(Tok::Punct('}')) | None => return i + 1,
                        Some(Tok::Punct(',')) => i += 1,
                        _ => i = use_tree(toks, i, prefix.clone(), out),
                    }
                }
            }
            _ => {
                out.push(prefix);
                return i;
            }
        }
        if toks.get(i).is_some_and(|t| t.0 == Tok::Path) {
            i += 1;
        } else {
            // `as NAME` renames; the path ends here either way.
            if matches!(toks.get(i).map(|t| &t.0), Some(Tok::Ident(s)) if s == "as") {
                i += 2;
            }
            out.push(prefix);
            return i;
        }
    }
}

/// The cycles of the graph, one per strongly connected component of more
/// than one file: a shortest way round it from its first file, which
/// ends where it starts.
fn cycles(graph: &BTreeMap<PathBuf, BTreeMap<PathBuf, usize>>) -> Vec<Vec<PathBuf>> {
    let reaches = |from: &PathBuf| -> BTreeSet<PathBuf> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(f) = todo.pop() {
            for d in graph.get(&f).into_iter().flat_map(|m| m.keys()) {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&PathBuf, BTreeSet<PathBuf>> =
        graph.keys().map(|f| (f, reaches(f))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for f in graph.keys() {
        if done.contains(f) || !reach[f].contains(f) {
            continue;
        }
        let component: BTreeSet<PathBuf> = reach[f]
            .iter()
            .filter(|g| reach[*g].contains(f))
            .cloned()
            .collect();
        done.extend(component.iter().cloned());
        out.push(shortest_cycle(graph, f, &component));
    }
    out
}

/// A shortest path from `start` back to itself inside `component`.
fn shortest_cycle(
    graph: &BTreeMap<PathBuf, BTreeMap<PathBuf, usize>>,
    start: &PathBuf,
    component: &BTreeSet<PathBuf>,
) -> Vec<PathBuf> {
    let mut came_from: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.clone()]);
    while let Some(f) = queue.pop_front() {
        for d in graph[&f].keys().filter(|d| component.contains(*d)) {
            if d == start {
                let mut path = vec![start.clone(), f.clone()];
                let mut at = f.clone();
                while let Some(p) = came_from.get(&at) {
                    path.push(p.clone());
                    at = p.clone();
                }
                path.reverse();
                return path;
            }
            if !came_from.contains_key(d) {
                came_from.insert(d.clone(), f.clone());
                queue.push_back(d.clone());
            }
        }
    }
    vec![start.clone()]
}
