//! The crash-style commands of [`crate::command::COMMANDS`], one file each.

pub mod bt;
pub mod ps;
pub mod sym;
