//! The kernel's own data structures, read through BTF.

pub mod btf_check;
pub mod list;
pub mod module;
pub mod module_btf;
pub mod printk;
pub mod structs;
pub mod task;
