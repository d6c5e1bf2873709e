//! Encode BTF from an ELF's DWARF, the way pahole does, while keeping what
//! pahole throws away: every function instance with its exact address and
//! true signature, and every global variable.

#![warn(missing_docs)]

pub mod altfile;
pub mod convert;
pub(crate) mod dies;
pub mod embed;
pub mod encode;
pub mod error;
pub mod func_policy;
pub mod funcs;
pub mod kfuncs;
pub mod load;
pub mod options;
pub mod partial_units;
pub mod strings;
pub mod subprograms;
pub mod vars;

pub use encode::{encode, Encoded, NoProgress, Progress};
pub use error::{Error, Result};
pub use options::{AddrTags, EncodeOptions, FuncMode, VarsMode};
