//! Commands in the style of crash: a line whose first word names a command
//! runs that command (`p EXPR`, `help`, and the commands of the table
//! below); any other line is an expression, as with `p`. The same lines are
//! the arguments of `btfkit inspect`, the lines of its stdin and of its
//! prompt, so a script and a person use one language.
//!
//! A command answers with a [`Reply`] that has both forms, text for a
//! person and JSON for a tool; the caller picks one. A command that fails
//! as a whole returns an error; one that fails for a part (a frame, a
//! task) says so in that part of its reply and goes on.

use serde_json::{json, Value as Json};

use crate::error::Result;
use crate::program::Program;

/// What a command printed, in both forms.
pub struct Reply {
    pub text: String,
    pub json: Json,
}

/// One command: its name (the line's first word), a usage line for `help`,
/// and what it does with the rest of the line (trimmed; may be empty).
pub struct Command {
    pub name: &'static str,
    pub usage: &'static str,
    pub about: &'static str,
    pub run: fn(&mut Program, &str) -> Result<Reply>,
}

/// Every command, in the order `help` lists them.
pub const COMMANDS: &[Command] = &[
    Command {
        name: "p",
        usage: "p EXPR",
        about: "print the value of a C expression (a line that is no command is one too)",
        run: print,
    },
    Command {
        name: "help",
        usage: "help",
        about: "list the commands",
        run: help,
    },
];

/// A line's command and where the rest of the line starts, or None for an
/// expression.
pub fn find(line: &str) -> Option<(&'static Command, usize)> {
    let start = line.len() - line.trim_start().len();
    let word_len = line[start..]
        .find(char::is_whitespace)
        .unwrap_or(line.len() - start);
    let cmd = COMMANDS
        .iter()
        .find(|c| c.name == &line[start..start + word_len])?;
    let after = start + word_len;
    let rest = after + (line[after..].len() - line[after..].trim_start().len());
    Some((cmd, rest))
}

/// Runs one line: a command, or an expression printed as by `p`. Columns
/// of errors count from the start of the line.
pub fn run_line(prog: &mut Program, line: &str) -> Result<Reply> {
    match find(line) {
        Some((cmd, rest)) => (cmd.run)(prog, line[rest..].trim_end()).map_err(|e| e.shifted(rest)),
        None => print(prog, line),
    }
}

fn print(prog: &mut Program, expr: &str) -> Result<Reply> {
    let v = prog.eval_str(expr)?;
    Ok(Reply {
        text: prog.evaluated_text(&v),
        json: prog.evaluated_json(&v),
    })
}

fn help(_: &mut Program, _: &str) -> Result<Reply> {
    let width = COMMANDS.iter().map(|c| c.usage.len()).max().unwrap_or(0);
    let text = COMMANDS
        .iter()
        .map(|c| format!("{:width$}  {}", c.usage, c.about))
        .collect::<Vec<_>>()
        .join("\n");
    let list: Vec<Json> = COMMANDS
        .iter()
        .map(|c| json!({ "name": c.name, "usage": c.usage, "about": c.about }))
        .collect();
    Ok(Reply {
        text,
        json: Json::Array(list),
    })
}

#[cfg(test)]
mod tests {
    use super::find;

    #[test]
    fn commands_and_expressions() {
        let (c, rest) = find("  p  init_task.pid ").expect("p is a command");
        assert_eq!((c.name, rest), ("p", 5));
        assert!(
            find("pid_max").is_none(),
            "a name that starts like a command"
        );
        assert!(find("init_task.comm").is_none());
        let (c, rest) = find("help").expect("help");
        assert_eq!((c.name, rest), ("help", 4));
    }
}
