//! One module per subcommand; each owns its clap arguments and its `run`.

pub mod check;
pub mod completions;
pub mod count;
pub mod dedup;
pub mod diff;
pub mod dump;
pub mod encode;
pub mod funcs;
pub mod inspect;
pub mod layout;
pub mod list;
pub mod man;
pub mod pahole;
pub mod perf;
pub mod report;
pub mod resolve;
pub mod watch;
