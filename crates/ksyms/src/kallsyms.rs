//! `/proc/kallsyms`: `%px %c %s` per line, then a TAB and `[module]` for
//! symbols of modules and of the pseudo-modules `[bpf]` (BPF programs,
//! trampolines, dispatchers), `[__builtin__ftrace]` and `[__builtin__kprobes]`
//! (see kernel/kallsyms.c, s_show).

use std::path::Path;

use crate::scan::{listing_some, read_whole, scan, Format};
use crate::{Error, Result, Symbols};

/// The running kernel's symbols.
pub const PROC_KALLSYMS: &str = "/proc/kallsyms";

/// What to do when every address reads as zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hidden {
    /// Fail with [`Error::AddressesHidden`], which explains why.
    Error,
    /// Keep the symbols (their names, types and modules are still right) and
    /// mark them with [`Symbols::addresses_hidden`].
    Allow,
}

/// Reads a kallsyms file (normally [`PROC_KALLSYMS`]) in one read;
/// [`Error::NoSymbols`] when it lists none.
pub fn read(path: &Path, hidden: Hidden) -> Result<Symbols> {
    listing_some(parse(read_whole(path)?, path, hidden)?)
}

/// Parses kallsyms text; `path` names it in errors.
pub fn parse(buf: Vec<u8>, path: &Path, hidden: Hidden) -> Result<Symbols> {
    let mut syms = scan(buf, path, Format::Kallsyms)?;
    if !syms.raw.is_empty() && syms.raw.iter().all(|s| s.addr == 0) {
        if hidden == Hidden::Error {
            return Err(Error::hidden(path, syms.raw.len()));
        }
        syms.addresses_hidden = true;
    }
    Ok(syms)
}
