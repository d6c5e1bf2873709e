//! The kernel's BTF, read from its memory: the bytes between `__start_BTF`
//! and `__stop_BTF` (the `.BTF` section, which the kernel keeps mapped for
//! /sys/kernel/btf/vmlinux).

use crate::error::{Error, Result};
use crate::Memory;

/// Far more than vmlinux BTF ever is; a wrong pair of symbols is refused.
const MAX_BTF: u64 = 64 << 20;

/// Reads and parses the BTF between the virtual addresses `start`
/// (`__start_BTF`) and `stop` (`__stop_BTF`, exclusive).
pub fn read(mem: &dyn Memory, start: u64, stop: u64) -> Result<btf::Btf> {
    let len = stop
        .checked_sub(start)
        .filter(|&l| l > 0 && l <= MAX_BTF)
        .ok_or(Error::BtfBounds { start, stop })?;
    let data = mem.read_vec(start, len as usize).map_err(|e| Error::At {
        what: "__start_BTF",
        addr: start,
        error: Box::new(e),
    })?;
    btf::Btf::parse(&data).map_err(|error| Error::Btf { addr: start, error })
}
