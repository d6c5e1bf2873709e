//! Kernel variables by their BTF types: a C expression language over kernel
//! memory ([`kmem`]), symbols from kallsyms ([`ksyms`]) and types from BTF,
//! printed like drgn (or as JSON). No DWARF.

#![warn(missing_docs)]

pub mod command;
pub mod commands;
mod error;
pub mod eval;
pub mod format;
pub mod kernel;
pub mod message;
pub mod open;
pub mod pager;
pub mod parse;
pub mod program;
pub mod prompt;
pub mod types;
pub mod unwind;

pub use error::{Error, Result};
pub use eval::{Evaluated, Loc, Value};
pub use program::Program;
