//! Kernel structures read by member name, with offsets from the BTF: no
//! offsets are hard-coded, so one reader follows the layouts of several
//! kernel versions (a member that moved or was renamed is asked for by
//! its names in each version).

use btf::{TypeData, TypeId};
use kmem::Memory;

use crate::error::{Error, Result};
use crate::program::Program;
use crate::types;

/// A struct type of the kernel's BTF, by its C name (`struct module`).
#[derive(Clone, Copy)]
pub struct Struct<'p> {
    prog: &'p Program,
    /// Its type id in the program's BTF.
    pub id: TypeId,
    /// Its C name, as looked up.
    pub name: &'static str,
}

impl<'p> Struct<'p> {
    /// The struct or union named `name` (`struct module`); [`Error::NoType`]
    /// when the BTF has none of that name.
    pub fn find(prog: &'p Program, name: &'static str) -> Result<Struct<'p>> {
        let id = prog
            .types
            .get(name)
            .copied()
            .filter(|&id| {
                matches!(
                    prog.btf.resolved_data(id),
                    Some(TypeData::Struct { .. } | TypeData::Union { .. })
                )
            })
            .ok_or_else(|| Error::NoType(name.to_owned()))?;
        Ok(Struct { prog, id, name })
    }

    /// Its size in bytes (0 if the BTF gives none).
    pub fn size(&self) -> u64 {
        self.prog.btf.resolve_size(self.id).unwrap_or(0)
    }

    /// Whether it has the member path `path` (`core_layout.base`): how a
    /// reader tells one kernel version's layout from another's.
    pub fn has(&self, path: &str) -> bool {
        types::member_path(&self.prog.btf, self.id, path).is_some()
    }

    fn found(&self, path: &str) -> Result<btf::query::FoundMember> {
        types::member_path(&self.prog.btf, self.id, path).ok_or_else(|| Error::NoMember {
            ty: self.name.to_owned(),
            member: path.to_owned(),
        })
    }

    /// The byte offset of a member path (`core_layout.base`, `mem[0].size`).
    pub fn offset(&self, path: &str) -> Result<u64> {
        Ok(self.found(path)?.bit_offset / 8)
    }

    /// Where a bitfield (or any scalar member) sits: bit offset and width.
    pub fn bits(&self, path: &str) -> Result<(u64, u32)> {
        let f = self.found(path)?;
        let width = match f.bits {
            0 => (self.prog.btf.resolve_size(f.ty).unwrap_or(8) * 8) as u32,
            b => b,
        };
        Ok((f.bit_offset, width))
    }
}

/// Reads `len` bytes for `what`, naming the address when it fails.
pub fn read(mem: &dyn Memory, what: &str, addr: u64, len: usize) -> Result<Vec<u8>> {
    mem.read_vec(addr, len).map_err(|error| Error::Read {
        what: what.to_owned(),
        addr,
        error,
    })
}

/// Reads the little-endian u64 at `addr` for `what`, naming the address
/// when it fails.
pub fn read_u64(mem: &dyn Memory, what: &str, addr: u64) -> Result<u64> {
    mem.read_u64(addr).map_err(|error| Error::Read {
        what: what.to_owned(),
        addr,
        error,
    })
}

/// A little-endian field of `len` (1..=8) bytes at `off` in `bytes`; 0 past the end.
pub fn field(bytes: &[u8], off: u64, len: usize) -> u64 {
    bitfield(bytes, (off.saturating_mul(8), (len.min(8) * 8) as u32))
}

/// A bitfield of `bytes` by bit offset and width (at most 64 bits); the
/// bits past the end of `bytes` read as 0.
pub fn bitfield(bytes: &[u8], (bit, width): (u64, u32)) -> u64 {
    let byte = bit / 8;
    let span = ((bit % 8) + u64::from(width)).div_ceil(8) as usize;
    let mut b = [0u8; 16];
    let start = usize::try_from(byte).unwrap_or(usize::MAX);
    if let Some(src) = start
        .checked_add(span.min(16))
        .and_then(|end| bytes.get(start..end))
    {
        b[..src.len()].copy_from_slice(src);
    }
    let raw = u128::from_le_bytes(b) >> (bit % 8);
    let mask = if width >= 64 {
        u128::from(u64::MAX)
    } else {
        (1u128 << width) - 1
    };
    (raw & mask) as u64
}

/// A NUL-terminated string inside `bytes` from `off`, at most `max` bytes.
pub fn cstr(bytes: &[u8], off: u64, max: usize) -> String {
    let start = usize::try_from(off).unwrap_or(usize::MAX);
    let s = bytes.get(start..).unwrap_or(&[]);
    let s = &s[..s.len().min(max)];
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    String::from_utf8_lossy(&s[..end]).into_owned()
}
