//! The crash-style commands of [`crate::command::COMMANDS`], one file each.

pub mod bt;
pub mod log;
pub mod modules;
pub mod ps;
pub mod rd;
pub mod structure;
pub mod sym;
