//! The interactive prompt: one command or expression per line
//! ([`crate::command`]), with history and completion of command, variable,
//! type and member names (after `.` and `->`, from the type of what comes
//! before).

use std::cell::RefCell;

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};

use crate::error::{Error, Result};
use crate::program::Program;
use crate::types;

struct Complete<'a> {
    prog: &'a RefCell<&'a mut Program>,
    names: Vec<String>,
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
            if let Some(btf::TypeData::Ptr { ty: t }) = types::data(prog.btf(), ty) {
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
        let candidates: Vec<String> = if let Some(base) = before.strip_suffix("->") {
            self.members(expr_tail(base), true)
        } else if let Some(base) = before.strip_suffix('.') {
            self.members(expr_tail(base), false)
        } else {
            self.names.clone()
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

/// Reads lines until end of input, printing each reply (or its error).
pub fn run(prog: &mut Program, json: bool) -> Result<()> {
    let mut names: Vec<String> = prog.var_names().map(str::to_owned).collect();
    names.extend(
        prog.type_names()
            .map(|t| t.rsplit(' ').next().unwrap_or(t).to_owned()),
    );
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
    names.extend(crate::command::COMMANDS.iter().map(|c| c.name.to_owned()));
    let cell = RefCell::new(prog);
    let mut ed: Editor<Complete<'_>, rustyline::history::DefaultHistory> =
        Editor::new().map_err(|e| Error::Setup(e.to_string()))?;
    ed.set_helper(Some(Complete { prog: &cell, names }));
    loop {
        match ed.readline("btfkit> ") {
            Ok(line) => {
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                let _ = ed.add_history_entry(line);
                let mut p = cell.borrow_mut();
                match crate::command::run_line(&mut p, line) {
                    Ok(r) if json => println!("{}", r.json),
                    Ok(r) => println!("{}", r.text),
                    Err(e) => eprintln!("error: {e}"),
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => return Ok(()),
            Err(e) => return Err(Error::Setup(e.to_string())),
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
