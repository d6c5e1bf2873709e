//! Kernel variables by their BTF types: a C expression language over kernel
//! memory ([`kmem`]), symbols from kallsyms ([`ksyms`]) and types from BTF,
//! printed like drgn (or as JSON). No DWARF.

#![warn(clippy::unwrap_used)]

pub mod command;
mod error;
pub mod eval;
pub mod format;
pub mod open;
pub mod parse;
pub mod program;
pub mod prompt;
pub mod types;

pub use error::{Error, Result};
pub use eval::{Evaluated, Loc, Value};
pub use program::Program;
