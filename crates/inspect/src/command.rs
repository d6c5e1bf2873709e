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
