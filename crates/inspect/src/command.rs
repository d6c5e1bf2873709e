//! What a command is: a name (the first word of a line), a usage line
//! for `help`, and a function from the rest of the line to a [`Reply`].
//! The table of commands is [`crate::commands::COMMANDS`].
//!
//! A command answers with a [`Reply`] that has both forms, text for a
//! person and JSON for a tool; the caller picks one. A command that fails
//! as a whole returns an error; one that fails for a part (a frame, a
//! task) says so in that part of its reply and goes on.

use serde_json::Value as Json;

use crate::error::Result;
use crate::program::Program;

/// What a command printed, in both forms.
pub struct Reply {
    /// For a person: the lines `btfkit inspect` prints, joined by
    /// newlines, without a final one.
    pub text: String,
    /// For a tool: what `--json` prints for the command.
    pub json: Json,
}

/// One command: its name (the line's first word), a usage line for `help`,
/// and what it does with the rest of the line (trimmed; may be empty).
pub struct Command {
    /// The word that runs it (`bt`, `p/x`).
    pub name: &'static str,
    /// Its usage line (`bt [PID|TASK|-a|-c CPU]`), as `help` lists it.
    pub usage: &'static str,
    /// One line for `help`: what it does.
    pub about: &'static str,
    /// Runs it on the program with the rest of the line.
    pub run: fn(&mut Program, &str) -> Result<Reply>,
}
