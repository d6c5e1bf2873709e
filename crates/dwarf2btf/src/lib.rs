//! Encode BTF from an ELF's DWARF, the way pahole does, while keeping what
//! pahole throws away: every function instance with its exact address and
//! true signature, and every global variable.

pub mod error;
pub mod load;

pub use error::{Error, Result};
