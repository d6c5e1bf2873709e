//! Commands in the style of crash: a line whose first word names a command
//! runs that command (`p EXPR`, `help`, and the commands of the table
//! below, one file each); any other line is an expression, as with `p`.
//! The same lines are the arguments of `btfkit inspect`, the lines of its
//! stdin and of its prompt, so a script and a person use one language.

pub mod bt;
pub mod log;
pub mod modules;
pub mod print;
pub mod ps;
pub mod rd;
pub mod structure;
pub mod sym;

use serde_json::{json, Value as Json};

use crate::command::{Command, Reply};
use crate::error::{Error, Result};
use crate::program::Program;

/// Every command, in the order `help` lists them.
pub const COMMANDS: &[Command] = &[
    Command {
        name: "p",
        usage: "p EXPR",
        about: "print the value of a C expression (a line that is no command is one too)",
        run: print::natural,
    },
    Command {
        name: "p/x",
        usage: "p/x EXPR",
        about: "print it with integers, enums and pointers in hex",
        run: print::hex,
    },
    Command {
        name: "p/d",
        usage: "p/d EXPR",
        about: "print it with integers, enums and pointers in decimal",
        run: print::decimal,
    },
    Command {
        name: "rd",
        usage: "rd ADDR|SYMBOL [COUNT]",
        about: "COUNT (1) 64-bit words of memory in hex and ASCII (crash's rd)",
        run: rd::run,
    },
    Command {
        name: "mod",
        usage: "mod",
        about: "the loaded modules: struct module, name, base, size, BTF (crash's mod)",
        run: modules::run,
    },
    Command {
        name: "log",
        usage: "log [-m]",
        about: "the kernel log (printk ring buffer) like dmesg; -m shows levels",
        run: log::run,
    },
    Command {
        name: "struct",
        usage: "struct [-o] TYPE[.MEMBER,...] [ADDR]",
        about: "the struct at ADDR (as p *(struct TYPE *)ADDR), or those members; -o or no ADDR: member offsets",
        run: structure::run,
    },
    Command {
        name: "bt",
        usage: "bt [PID|TASK|-a|-c CPU]",
        about: "backtrace of a task (default: CPU 0's), by pid (0: CPU 0's idle task) or address; -a: every CPU's active task; -c: CPU's",
        run: bt::run,
    },
    Command {
        name: "foreach",
        usage: "foreach bt",
        about: "the backtrace of every task, idle tasks first (crash's foreach)",
        run: bt::foreach,
    },
    Command {
        name: "ps",
        usage: "ps",
        about: "every task, each CPU's idle task first: pid, parent, CPU, state, name (> a CPU's active task)",
        run: ps::run,
    },
    Command {
        name: "sym",
        usage: "sym ADDRESS|NAME",
        about: "the symbol at an address, or a symbol's address, with the function's prototype",
        run: sym::run,
    },
    Command {
        name: "help",
        usage: "help",
        about: "list the commands",
        run: help,
    },
];

/// The words that end a session, as in crash.
pub const QUIT: &[&str] = &["q", "quit", "exit"];

/// Whether the line ends the session.
pub fn is_quit(line: &str) -> bool {
    QUIT.contains(&line.trim())
}

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
        None => match unknown_command(prog, line) {
            Some(word) => Err(Error::UnknownCommand(word.to_owned())),
            None => print::natural(prog, line),
        },
    }
}

/// The first word of a line that reads as a command this program does not
/// have (`vm 1`, `kmem -s`, `dis schedule`): a word that names nothing
/// (no variable, function, enumerator, type or symbol) followed by a
/// space and then a word, a number or a flag, which no C expression has.
fn unknown_command<'a>(prog: &Program, line: &'a str) -> Option<&'a str> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace)?;
    let rest = rest.trim_start();
    let mut chars = rest.chars();
    let argument = match chars.next()? {
        '-' => chars.next().is_some_and(|c| c.is_ascii_alphabetic()),
        c => c.is_ascii_alphanumeric() || c == '_' || c == '"',
    };
    let is_word = word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (argument && is_word && !prog.knows_name(word)).then_some(word)
}

fn help(_: &mut Program, _: &str) -> Result<Reply> {
    let quit = QUIT.join("|");
    let rows: Vec<(&str, &str, &str)> = COMMANDS
        .iter()
        .map(|c| (c.name, c.usage, c.about))
        .chain([("q", quit.as_str(), "end the session")])
        .collect();
    let width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    let text = rows
        .iter()
        .map(|(_, usage, about)| format!("{usage:width$}  {about}"))
        .collect::<Vec<_>>()
        .join("\n");
    let list: Vec<Json> = rows
        .iter()
        .map(|(name, usage, about)| json!({ "name": name, "usage": usage, "about": about }))
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
        let (c, rest) = find("p/x jiffies").expect("p/x");
        assert_eq!((c.name, rest), ("p/x", 4));
    }

    #[test]
    fn quit_words() {
        for w in ["q", " quit ", "exit"] {
            assert!(super::is_quit(w), "{w}");
        }
        assert!(!super::is_quit("q + 1"));
    }
}
