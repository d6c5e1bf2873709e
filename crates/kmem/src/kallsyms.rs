//! The kernel's own symbol table, read from its memory (kernel/kallsyms.c,
//! scripts/kallsyms.c), so that a dump needs no System.map.
//!
//! `kallsyms_names` holds one entry per symbol: a length (one byte; from 6.1
//! two when the first has bit 7 set, low 7 bits first) and that many token
//! numbers. Token `t` is the NUL-terminated string at
//! `kallsyms_token_table + kallsyms_token_index[t]`; the expanded name's
//! first character is the `nm` type. Addresses are `kallsyms_addresses[i]`
//! (older kernels, some architectures) or `kallsyms_offsets[i]` (i32)
//! relative to `kallsyms_relative_base`: with absolute per-CPU symbols
//! (x86-64 SMP before 6.15) a non-negative offset is an absolute address and
//! a negative one means `base - 1 - offset`; otherwise `base + (u32)offset`.
//! The table locations come from VMCOREINFO (6.0+, and backports).

use crate::error::{Error, Result};
use crate::vmcoreinfo::VmcoreInfo;
use crate::Memory;

/// More than any kernel has; a corrupt count is refused before allocating.
const MAX_SYMS: u32 = 4 << 20;

/// Where the tables are.
#[derive(Clone, Copy, Debug)]
pub struct Tables {
    pub names: u64,
    pub num_syms: u64,
    pub token_table: u64,
    pub token_index: u64,
    pub addresses: Option<u64>,
    pub offsets: Option<u64>,
    pub relative_base: Option<u64>,
}

impl Tables {
    pub fn from_vmcoreinfo(info: &VmcoreInfo) -> Result<Tables> {
        let need = |n: &str| {
            info.symbol(n).ok_or_else(|| {
                Error::Kallsyms(format!(
                    "VMCOREINFO has no SYMBOL({n}) (kernel older than 6.0?): give --kallsyms or a System.map"
                ))
            })
        };
        let t = Tables {
            names: need("kallsyms_names")?,
            num_syms: need("kallsyms_num_syms")?,
            token_table: need("kallsyms_token_table")?,
            token_index: need("kallsyms_token_index")?,
            addresses: info.symbol("kallsyms_addresses"),
            offsets: info.symbol("kallsyms_offsets"),
            relative_base: info.symbol("kallsyms_relative_base"),
        };
        if t.addresses.is_none() && t.offsets.is_none() {
            return Err(Error::Kallsyms(
                "VMCOREINFO names neither kallsyms_addresses nor kallsyms_offsets".into(),
            ));
        }
        Ok(t)
    }
}

/// One symbol: address, `nm` type, name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KSym {
    pub addr: u64,
    pub type_char: u8,
    pub name: String,
}

/// Reads and expands every symbol of the kernel image.
pub fn read(mem: &dyn Memory, t: &Tables) -> Result<Vec<KSym>> {
    let at = |what: &'static str, addr: u64| {
        move |e| Error::At {
            what,
            addr,
            error: Box::new(e),
        }
    };
    let num = mem
        .read_u32(t.num_syms)
        .map_err(at("kallsyms_num_syms", t.num_syms))?;
    if num == 0 || num > MAX_SYMS {
        return Err(Error::Kallsyms(format!(
            "kallsyms_num_syms at {:#x} is {num}",
            t.num_syms
        )));
    }
    let index_raw = mem
        .read_vec(t.token_index, 512)
        .map_err(at("kallsyms_token_index", t.token_index))?;
    let token_index: Vec<u16> = index_raw
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let table_len = token_index.iter().copied().max().unwrap_or(0) as usize + 256;
    let token_table = mem
        .read_vec(t.token_table, table_len)
        .map_err(at("kallsyms_token_table", t.token_table))?;
    let tokens: Vec<&[u8]> = token_index
        .iter()
        .map(|&i| {
            let rest = token_table.get(i as usize..).unwrap_or(&[]);
            &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())]
        })
        .collect();
    let addrs = read_addresses(mem, t, num as usize)?;
    // Names: read in chunks as the walk needs them (the table is a few MB).
    let mut names = Chunked::new(mem, t.names);
    let mut out = Vec::with_capacity(num as usize);
    let mut name = Vec::with_capacity(64);
    for (i, &addr) in addrs.iter().enumerate() {
        let entry_at = names.pos();
        let mut len = usize::from(names.byte()?);
        if len & 0x80 != 0 {
            len = (len & 0x7f) | usize::from(names.byte()?) << 7;
        }
        name.clear();
        for _ in 0..len {
            let tok = names.byte()?;
            name.extend_from_slice(tokens.get(usize::from(tok)).copied().unwrap_or(&[]));
        }
        let Some((&type_char, rest)) = name.split_first() else {
            return Err(Error::Kallsyms(format!(
                "symbol {i} at {entry_at:#x} in kallsyms_names is empty"
            )));
        };
        out.push(KSym {
            addr,
            type_char,
            name: String::from_utf8_lossy(rest).into_owned(),
        });
    }
    Ok(out)
}

fn read_addresses(mem: &dyn Memory, t: &Tables, n: usize) -> Result<Vec<u64>> {
    if let Some(a) = t.addresses {
        let raw = mem.read_vec(a, n * 8).map_err(|e| Error::At {
            what: "kallsyms_addresses",
            addr: a,
            error: Box::new(e),
        })?;
        return Ok(raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect());
    }
    let (Some(off_at), Some(base_at)) = (t.offsets, t.relative_base) else {
        return Err(Error::Kallsyms(
            "kallsyms_offsets without kallsyms_relative_base".into(),
        ));
    };
    let base = mem.read_u64(base_at).map_err(|e| Error::At {
        what: "kallsyms_relative_base",
        addr: base_at,
        error: Box::new(e),
    })?;
    let raw = mem.read_vec(off_at, n * 4).map_err(|e| Error::At {
        what: "kallsyms_offsets",
        addr: off_at,
        error: Box::new(e),
    })?;
    let offsets: Vec<i32> = raw
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    // Plain relative offsets of a kernel image never reach 2 GiB, so a
    // negative one means the absolute-per-CPU encoding.
    let absolute_percpu = offsets.iter().any(|&o| o < 0);
    Ok(offsets
        .iter()
        .map(|&o| {
            if !absolute_percpu {
                base.wrapping_add(u64::from(o as u32))
            } else if o >= 0 {
                o as u64
            } else {
                base.wrapping_sub(1).wrapping_sub(o as i64 as u64)
            }
        })
        .collect())
}

/// Sequential reads of kernel memory in 64 KiB chunks.
struct Chunked<'a> {
    mem: &'a dyn Memory,
    start: u64,
    buf: Vec<u8>,
    pos: usize,
}

impl<'a> Chunked<'a> {
    fn new(mem: &'a dyn Memory, start: u64) -> Chunked<'a> {
        Chunked {
            mem,
            start,
            buf: Vec::new(),
            pos: 0,
        }
    }

    fn pos(&self) -> u64 {
        self.start + self.pos as u64
    }

    fn byte(&mut self) -> Result<u8> {
        if self.pos == self.buf.len() {
            self.start += self.buf.len() as u64;
            self.pos = 0;
            // To the end of a 64 KiB-aligned chunk: never across more pages than needed.
            let n = 0x10000 - (self.start & 0xffff) as usize;
            self.buf = self.mem.read_vec(self.start, n).map_err(|e| Error::At {
                what: "kallsyms_names",
                addr: self.start,
                error: Box::new(e),
            })?;
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(b)
    }
}

/// The symbols in /proc/kallsyms's text form, for `ksyms::kallsyms::parse`.
pub fn to_text(syms: &[KSym]) -> Vec<u8> {
    let mut out = Vec::with_capacity(syms.len() * 40);
    for s in syms {
        out.extend_from_slice(
            format!("{:016x} {} {}\n", s.addr, s.type_char as char, s.name).as_bytes(),
        );
    }
    out
}
