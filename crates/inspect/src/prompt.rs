//! The interactive prompt: one command or expression per line
//! ([`crate::command`]), with completion of command, variable, type and
//! member names (after `.` and `->`, from the type of what comes before;
//! after `struct`, `union` and `enum`, that kind's tags), listed in order
//! on a second Tab as bash does; long replies through a pager
//! ([`crate::pager`]); `q`, `quit` or `exit` (or Ctrl-D) end it. History
//! is kept across sessions in `$XDG_STATE_HOME/btfkit/inspect_history`
//! (`~/.local/state/...` without it), the last [`HISTORY_LINES`] lines.

use std::cell::RefCell;
use std::io::Write;
use std::path::PathBuf;

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{CompletionType, Config, Context, Editor, Helper};

use crate::error::{Error, Result};
use crate::program::Program;
use crate::types;

/// Lines of history kept.
pub const HISTORY_LINES: usize = 1000;

struct Complete<'a> {
    prog: &'a RefCell<&'a mut Program>,
    names: Vec<String>,
    /// Tags of structs, unions and enums, for after those keywords.
    structs: Vec<String>,
    unions: Vec<String>,
    enums: Vec<String>,
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl Complete<'_> {
    /// Members of the type of `base` (the expression before `.` or `->`).
    fn members(&self, base: &str, arrow: bool) -> Vec<String> {
        let mut prog = self.prog.borrow_mut();
        let Ok(v) = prog.eval_str(base) else {
            return Vec::new();
        };
        let crate::Evaluated::One(v) = v else {
            return Vec::new();
        };
        let mut ty = v.ty;
        if arrow {
            if let Some(btf::TypeData::Ptr { ty: t }) = prog.btf().resolved_data(ty) {
                ty = *t;
            }
        }
        let mut out = Vec::new();
        types::member_names(prog.btf(), ty, &mut out);
        out
    }
}

impl Completer for Complete<'_> {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let head = &line[..pos];
        let start = head.rfind(|c: char| !is_word(c)).map_or(0, |i| i + 1);
        let word = &head[start..];
        let before = &head[..start];
        let keyword = before
            .trim_end()
            .rsplit(|c: char| !is_word(c))
            .next()
            .filter(|_| before.ends_with(char::is_whitespace));
        let candidates: Vec<String> = if let Some(base) = before.strip_suffix("->") {
            self.members(expr_tail(base), true)
        } else if let Some(base) = before.strip_suffix('.') {
            self.members(expr_tail(base), false)
        } else {
            match keyword {
                Some("struct") => self.structs.clone(),
                Some("union") => self.unions.clone(),
                Some("enum") => self.enums.clone(),
                _ => self.names.clone(),
            }
        };
        let mut out: Vec<Pair> = candidates
            .into_iter()
            .filter(|c| c.starts_with(word))
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        out.sort_by(|a, b| a.display.cmp(&b.display));
        out.dedup_by(|a, b| a.display == b.display);
        Ok((start, out))
    }
}

/// The postfix expression that ends `s`: names, members, indexes.
fn expr_tail(s: &str) -> &str {
    let mut depth = 0i32;
    let b = s.as_bytes();
    let mut i = b.len();
    while i > 0 {
        let c = b[i - 1] as char;
        match c {
            ']' => depth += 1,
            '[' => depth -= 1,
            _ if depth > 0 => {}
            _ if is_word(c) || c == '.' => {}
            '>' if i >= 2 && b[i - 2] == b'-' => {
                i -= 1;
            }
            _ => break,
        }
        i -= 1;
    }
    &s[i..]
}

impl Hinter for Complete<'_> {
    type Hint = String;
}
impl Highlighter for Complete<'_> {}
impl Validator for Complete<'_> {}
impl Helper for Complete<'_> {}

/// Where history is kept: `${XDG_STATE_HOME:-~/.local/state}/btfkit/inspect_history`.
fn history_file() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("state"))
        })?;
    Some(state.join("btfkit").join("inspect_history"))
}

/// Past sessions' lines, the newest last.
fn load_history(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    let skip = lines.len().saturating_sub(HISTORY_LINES);
    lines[skip..].to_vec()
}

/// Keeps the history file to its last [`HISTORY_LINES`] lines, written
/// whole through a temporary file so that a crash cannot cut it.
fn trim_history(path: &std::path::Path, lines: &[String]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Appends a line to the history file (made with its folder when missing).
fn save_line(path: &std::path::Path, line: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(f, "{line}")
}

/// Reads lines until end of input or `q`, printing each reply (or its error).
pub fn run(prog: &mut Program, json: bool) -> Result<()> {
    let mut names: Vec<String> = prog.var_names().map(str::to_owned).collect();
    let (mut structs, mut unions, mut enums) = (Vec::new(), Vec::new(), Vec::new());
    for t in prog.type_names() {
        let (kind, name) = t.split_once(' ').unwrap_or(("", t));
        match kind {
            "struct" => structs.push(name.to_owned()),
            "union" => unions.push(name.to_owned()),
            "enum" => enums.push(name.to_owned()),
            _ => {}
        }
        names.push(t.rsplit(' ').next().unwrap_or(t).to_owned());
    }
    names.extend(
        [
            "container_of",
            "per_cpu",
            "per_cpu_ptr",
            "list_for_each_entry",
            "hlist_for_each_entry",
            "rbtree_inorder_for_each_entry",
            "sizeof",
            "struct",
            "union",
            "enum",
        ]
        .map(str::to_owned),
    );
    names.extend(crate::commands::COMMANDS.iter().map(|c| c.name.to_owned()));
    names.extend(crate::commands::QUIT.iter().map(|q| (*q).to_owned()));
    let cell = RefCell::new(prog);
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .max_history_size(HISTORY_LINES)
        .map_err(Error::Readline)?
        .build();
    let mut ed: Editor<Complete<'_>, rustyline::history::DefaultHistory> =
        Editor::with_config(config).map_err(Error::Readline)?;
    ed.set_helper(Some(Complete {
        prog: &cell,
        names,
        structs,
        unions,
        enums,
    }));
    let history = history_file();
    if let Some(h) = &history {
        let past = load_history(h);
        for l in &past {
            let _ = ed.add_history_entry(l.as_str());
        }
        // The file only grows while a session appends: cut it back here.
        if past.len() == HISTORY_LINES {
            let _ = trim_history(h, &past);
        }
    }
    let mut history_failed = false;
    loop {
        match ed.readline("btfkit> ") {
            Ok(line) => {
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                let _ = ed.add_history_entry(line);
                if let (Some(h), false) = (&history, history_failed) {
                    if let Err(e) = save_line(h, line) {
                        eprintln!("btfkit: history not kept: {}: {e}", h.display());
                        history_failed = true;
                    }
                }
                if crate::commands::is_quit(line) {
                    return Ok(());
                }
                let mut p = cell.borrow_mut();
                let shown = match crate::commands::run_line(&mut p, line) {
                    Ok(r) if json => crate::pager::print(&r.json.to_string()),
                    Ok(r) => crate::pager::print(&r.text),
                    Err(e) => {
                        eprintln!("error: {e}");
                        Ok(())
                    }
                };
                shown.map_err(Error::Stdout)?;
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => return Ok(()),
            Err(e) => return Err(Error::Readline(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn expression_tails() {
        assert_eq!(super::expr_tail("x + init_task.tasks"), "init_task.tasks");
        assert_eq!(super::expr_tail("f(a->b[3].c"), "a->b[3].c");
        assert_eq!(super::expr_tail("p->q"), "p->q");
    }
}
