//! `System.map`: `nm -n vmlinux` as the kernel build writes it. Link-time
//! addresses (before KASLR), data symbols included, no modules.

use std::path::Path;

use crate::scan::{listing_some, read_whole, scan, Format};
use crate::{Result, Symbols};

/// Reads a System.map file in one read; [`Error::NoSymbols`](crate::Error::NoSymbols) when it
/// lists none.
pub fn read(path: &Path) -> Result<Symbols> {
    listing_some(parse(read_whole(path)?, path)?)
}

/// Parses System.map text; `path` names it in errors.
pub fn parse(buf: Vec<u8>, path: &Path) -> Result<Symbols> {
    scan(buf, path, Format::SystemMap)
}
