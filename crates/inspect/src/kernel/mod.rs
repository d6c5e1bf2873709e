//! The kernel's own data structures, read through BTF.

pub mod btf_check;
pub mod layout;
pub mod list;
pub mod module;
pub mod module_btf;
pub mod printk;
pub mod task;
