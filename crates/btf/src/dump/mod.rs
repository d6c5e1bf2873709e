//! Printing BTF the way bpftool does: raw text, JSON, and a C header.

pub mod c;
pub(crate) mod fields;
pub mod json;
mod loc;
pub mod raw;
