//! Printing BTF the way bpftool does: raw text, JSON, and a C header.

pub mod c;
pub mod json;
mod loc;
pub mod raw;
