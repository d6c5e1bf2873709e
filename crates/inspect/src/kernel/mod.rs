pub mod layout;
pub mod list;
pub mod module;
pub mod printk;
