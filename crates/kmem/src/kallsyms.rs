//! The kernel's own symbol table, read from its memory (kernel/kallsyms.c,
//! scripts/kallsyms.c), so that a dump needs no System.map.
//!
//! `kallsyms_names` holds one entry per symbol: a length (one byte; from 6.1
//! two when the first has bit 7 set, low 7 bits first) and that many token
//! numbers. Token `t` is the NUL-terminated string at
//! `kallsyms_token_table + kallsyms_token_index[t]`; the expanded name's
//! first character is the `nm` type. The table locations come from
//! VMCOREINFO (6.0+, and backports).
//!
//! Addresses have had four encodings ([`Encoding`]), told apart by which
//! tables VMCOREINFO names and, for one pair, by the offsets themselves:
//! - `kallsyms_addresses[i]`, absolute u64 (CONFIG_KALLSYMS_BASE_RELATIVE=n;
//!   gone by 6.12, whose VMCOREINFO names only the offsets and base);
//! - `kallsyms_offsets[i]` (i32) with `kallsyms_relative_base` and absolute
//!   per-CPU symbols (x86-64 SMP up to 6.14): a non-negative offset is an
//!   absolute address, a negative one means `base - 1 - offset`;
//! - the same tables without absolute per-CPU symbols (6.15 to 6.19, and
//!   other architectures): `base + (u32)offset`;
//! - `kallsyms_offsets[i]` alone (7.0+, "kallsyms: Get rid of kallsyms
//!   relative base"): each entry is place-relative, the address is the
//!   entry's own address plus the signed offset.

use crate::error::{Error, Result};
use crate::vmcoreinfo::VmcoreInfo;
use crate::Memory;

/// More than any kernel has; a corrupt count is refused before allocating.
const MAX_SYMS: u32 = 4 << 20;

/// Where the tables are: kernel virtual addresses, as VMCOREINFO's
/// `SYMBOL(kallsyms_*)` lines give them.
#[derive(Clone, Copy, Debug)]
pub struct Tables {
    /// `kallsyms_names`: the token-compressed names.
    pub names: u64,
    /// `kallsyms_num_syms`: the number of symbols (a `u32` there).
    pub num_syms: u64,
    /// `kallsyms_token_table`: the NUL-terminated token strings.
    pub token_table: u64,
    /// `kallsyms_token_index`: each token's `u16` offset in the token table.
    pub token_index: u64,
    /// `kallsyms_addresses`: absolute addresses, in kernels built that way.
    pub addresses: Option<u64>,
    /// `kallsyms_offsets`: 32-bit offsets, in every other kernel.
    pub offsets: Option<u64>,
    /// `kallsyms_relative_base`: what the offsets are relative to, before 7.0.
    pub relative_base: Option<u64>,
}

impl Tables {
    /// The table addresses from VMCOREINFO. [`Error::Kallsyms`] when a table
    /// is not named there (kernels before 6.0 name none).
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
    /// The run-time virtual address.
    pub addr: u64,
    /// The `nm` type letter (`T`, `t`, `D`...).
    pub type_char: u8,
    /// The expanded name.
    pub name: String,
}

/// Reads and expands every symbol of the kernel image.
pub fn read(mem: &dyn Memory, t: &Tables) -> Result<Vec<KSym>> {
    Ok(read_encoded(mem, t)?.1)
}

/// Like [`read`], and says how the addresses were encoded.
pub fn read_encoded(mem: &dyn Memory, t: &Tables) -> Result<(Encoding, Vec<KSym>)> {
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
    let (encoding, addrs) = addresses(mem, t, num as usize)?;
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
    Ok((encoding, out))
}

/// How `kallsyms_addresses` / `kallsyms_offsets` hold the addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `kallsyms_addresses`: absolute addresses.
    Absolute,
    /// `kallsyms_relative_base + (u32)offset`.
    Relative,
    /// Relative with absolute per-CPU symbols (x86-64 SMP before 6.15).
    RelativeAbsolutePercpu,
    /// Each offset relative to its own address in `kallsyms_offsets` (7.0+).
    PlaceRelative,
}

fn addresses(mem: &dyn Memory, t: &Tables, n: usize) -> Result<(Encoding, Vec<u64>)> {
    if let Some(a) = t.addresses {
        let raw = mem.read_vec(a, n * 8).map_err(|e| Error::At {
            what: "kallsyms_addresses",
            addr: a,
            error: Box::new(e),
        })?;
        let addrs = raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect();
        return Ok((Encoding::Absolute, addrs));
    }
    let Some(off_at) = t.offsets else {
        return Err(Error::Kallsyms(
            "neither kallsyms_addresses nor kallsyms_offsets".into(),
        ));
    };
    let raw = mem.read_vec(off_at, n * 4).map_err(|e| Error::At {
        what: "kallsyms_offsets",
        addr: off_at,
        error: Box::new(e),
    })?;
    let offsets = raw
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap_or_default()));
    let Some(base_at) = t.relative_base else {
        let addrs = offsets
            .enumerate()
            .map(|(i, o)| {
                off_at
                    .wrapping_add(4 * i as u64)
                    .wrapping_add(i64::from(o) as u64)
            })
            .collect();
        return Ok((Encoding::PlaceRelative, addrs));
    };
    let base = mem.read_u64(base_at).map_err(|e| Error::At {
        what: "kallsyms_relative_base",
        addr: base_at,
        error: Box::new(e),
    })?;
    let offsets: Vec<i32> = offsets.collect();
    // Plain relative offsets of a kernel image never reach 2 GiB, so a
    // negative one means the absolute-per-CPU encoding.
    if offsets.iter().any(|&o| o < 0) {
        let addrs = offsets
            .iter()
            .map(|&o| {
                if o >= 0 {
                    o as u64
                } else {
                    base.wrapping_sub(1).wrapping_sub(i64::from(o) as u64)
                }
            })
            .collect();
        Ok((Encoding::RelativeAbsolutePercpu, addrs))
    } else {
        let addrs = offsets
            .iter()
            .map(|&o| base.wrapping_add(u64::from(o as u32)))
            .collect();
        Ok((Encoding::Relative, addrs))
    }
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
            // To the end of a 64 KiB-aligned chunk, or of the page when
            // that fails: the table may end just before a page a filtered
            // dump left out (makedumpfile drops zero pages).
            let n = 0x10000 - (self.start & 0xffff) as usize;
            self.buf = match self.mem.read_vec(self.start, n) {
                Ok(b) => b,
                Err(_) => {
                    let page = 0x1000 - (self.start & 0xfff) as usize;
                    self.mem.read_vec(self.start, page).map_err(|e| Error::At {
                        what: "kallsyms_names",
                        addr: self.start,
                        error: Box::new(e),
                    })?
                }
            };
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(b)
    }
}

/// The symbols in /proc/kallsyms's text form, for `ksyms::kallsyms::parse`.
/// Written digit by digit: `format!` per line was a tenth of opening a dump.
pub fn to_text(syms: &[KSym]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(syms.iter().map(|s| s.name.len() + 22).sum());
    for s in syms {
        out.extend(
            (0..16)
                .rev()
                .map(|i| HEX[(s.addr >> (4 * i)) as usize & 0xf]),
        );
        out.push(b' ');
        let mut letter = [0u8; 4];
        out.extend_from_slice(char::from(s.type_char).encode_utf8(&mut letter).as_bytes());
        out.push(b' ');
        out.extend_from_slice(s.name.as_bytes());
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernel memory as one run of bytes at a virtual address.
    struct Flat {
        at: u64,
        bytes: Vec<u8>,
    }

    impl Memory for Flat {
        fn read_phys(&self, addr: u64, _: &mut [u8]) -> Result<()> {
            Err(Error::PhysMissing(addr))
        }
        fn read_virt(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
            let start = addr.wrapping_sub(self.at) as usize;
            let src = self
                .bytes
                .get(start..start + buf.len())
                .ok_or(Error::PhysMissing(addr))?;
            buf.copy_from_slice(src);
            Ok(())
        }
    }

    const AT: u64 = 0xffff_ffff_8200_0000;
    const NAMES: &[&str] = &["Tfirst", "dsecond", "Ahere"];

    /// Tables laid out as scripts/kallsyms writes them: one token per
    /// character (token = byte value), `addrs` as the encoding's table.
    fn tables(addrs: &[u8], named: fn(u64) -> Tables) -> (Flat, Tables) {
        let mut b = vec![0u8; 0x4000];
        // Ends inside the 64 KiB chunk `kallsyms_names` starts in.
        b[0..4].copy_from_slice(&(NAMES.len() as u32).to_le_bytes());
        let mut n = 0x100;
        for name in NAMES {
            b[n] = name.len() as u8;
            b[n + 1..n + 1 + name.len()].copy_from_slice(name.as_bytes());
            n += 1 + name.len();
        }
        for t in 0..256usize {
            b[0x1000 + 2 * t..0x1002 + 2 * t].copy_from_slice(&(2 * t as u16).to_le_bytes());
            b[0x2000 + 2 * t] = t as u8;
        }
        b[0x3000..0x3000 + addrs.len()].copy_from_slice(addrs);
        let mut t = named(AT + 0x3000);
        t.names = AT + 0x100;
        t.num_syms = AT;
        t.token_index = AT + 0x1000;
        t.token_table = AT + 0x2000;
        (Flat { at: AT, bytes: b }, t)
    }

    fn table(at: u64) -> Tables {
        Tables {
            names: 0,
            num_syms: 0,
            token_table: 0,
            token_index: 0,
            addresses: None,
            offsets: Some(at),
            relative_base: None,
        }
    }

    fn check(addrs: &[u8], named: fn(u64) -> Tables, encoding: Encoding, want: [u64; 3]) {
        let (mem, t) = tables(addrs, named);
        let (got_encoding, syms) = read_encoded(&mem, &t).expect("read");
        assert_eq!(got_encoding, encoding);
        let got: Vec<(u64, u8, &str)> = syms
            .iter()
            .map(|s| (s.addr, s.type_char, s.name.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (want[0], b'T', "first"),
                (want[1], b'd', "second"),
                (want[2], b'A', "here")
            ]
        );
    }

    fn le32(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn absolute_addresses() {
        let a: Vec<u8> = [0xffff_ffff_8100_0000u64, 0xffff_ffff_8300_0010, 0x1234]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let named = |at| Tables {
            addresses: Some(at),
            offsets: None,
            ..table(at)
        };
        check(
            &a,
            named,
            Encoding::Absolute,
            [0xffff_ffff_8100_0000, 0xffff_ffff_8300_0010, 0x1234],
        );
    }

    /// `offsets` followed by the relative base they are read against.
    fn check_with_base(offsets: &[i32], encoding: Encoding, want: [u64; 3]) {
        let mut a = le32(offsets);
        a.extend_from_slice(&0xffff_ffff_8100_0000u64.to_le_bytes());
        let named = |at| Tables {
            relative_base: Some(at + 12),
            ..table(at)
        };
        check(&a, named, encoding, want);
    }

    #[test]
    fn offsets_from_a_relative_base() {
        check_with_base(
            &[0, 0x10, 0x0200_0000],
            Encoding::Relative,
            [
                0xffff_ffff_8100_0000,
                0xffff_ffff_8100_0010,
                0xffff_ffff_8300_0000,
            ],
        );
    }

    #[test]
    fn offsets_with_absolute_percpu() {
        // Negative: base - 1 - offset; non-negative: the absolute value.
        check_with_base(
            &[-1, -0x11, 0x2000],
            Encoding::RelativeAbsolutePercpu,
            [0xffff_ffff_8100_0000, 0xffff_ffff_8100_0010, 0x2000],
        );
    }

    #[test]
    fn place_relative_offsets() {
        // Entry i at AT + 0x3000 + 4 i: its value is the target minus its own address.
        let a = le32(&[-0x1000, 0x10 - 4, -0x3008 - 0x100]);
        check(
            &a,
            table,
            Encoding::PlaceRelative,
            [AT + 0x2000, AT + 0x3010, AT - 0x100],
        );
    }

    #[test]
    fn truncated_tables_name_the_address() {
        let (mem, mut t) = tables(&[], table);
        t.offsets = Some(AT + 0x3ffc);
        let e = read(&mem, &t).expect_err("offsets run past memory");
        assert!(e.to_string().contains("kallsyms_offsets"), "{e}");
    }

    #[test]
    fn text_is_proc_kallsyms_lines() {
        let syms = [
            KSym {
                addr: 0xffff_ffff_8100_0000,
                type_char: b'T',
                name: "_text".into(),
            },
            KSym {
                addr: 0x2c000,
                type_char: b'd',
                name: "runqueues".into(),
            },
        ];
        assert_eq!(
            String::from_utf8(to_text(&syms)).unwrap(),
            "ffffffff81000000 T _text\n000000000002c000 d runqueues\n"
        );
    }
}
