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

/// The symbols of kallsyms given as values (a reader of the kernel's own
/// tables in memory has them so): `(address, type letter, name)` of the
/// kernel image, in kallsyms order; `source` names them. The same
/// [`Symbols`] as [`parse`] gives for their text, without writing and
/// scanning it; every address zero is handled as there.
pub fn from_values<'a>(
    source: &Path,
    syms: impl ExactSizeIterator<Item = (u64, u8, &'a str)> + Clone,
    hidden: Hidden,
) -> Result<Symbols> {
    let mut out = Symbols::new(source);
    out.reserve(syms.len(), syms.clone().map(|(_, _, n)| n.len()).sum());
    for (addr, type_char, name) in syms {
        out.push(addr, type_char, name);
    }
    check_hidden(out, source, hidden)
}

/// Parses kallsyms text; `path` names it in errors.
pub fn parse(buf: Vec<u8>, path: &Path, hidden: Hidden) -> Result<Symbols> {
    check_hidden(scan(buf, path, Format::Kallsyms)?, path, hidden)
}

/// Every address zero: the kernel hid them (see [`Hidden`]).
fn check_hidden(mut syms: Symbols, path: &Path, hidden: Hidden) -> Result<Symbols> {
    if !syms.raw.is_empty() && syms.raw.iter().all(|s| s.addr == 0) {
        if hidden == Hidden::Error {
            return Err(Error::hidden(path, syms.raw.len()));
        }
        syms.addresses_hidden = true;
    }
    Ok(syms)
}
