pub mod log;
pub mod modules;
pub mod structure;
