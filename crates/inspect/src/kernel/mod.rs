//! The kernel's own data structures, read through BTF.

pub mod task;
