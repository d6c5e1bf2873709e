//! Encode BTF from an ELF's DWARF, the way pahole does, while keeping what
//! pahole throws away: every function instance with its exact address and
//! true signature, and every global variable.

// Library code handles bytes from files: a panic there is a bug.
#![warn(clippy::unwrap_used)]

pub mod error;
pub mod funcs;
pub mod load;

pub use error::{Error, Result};
