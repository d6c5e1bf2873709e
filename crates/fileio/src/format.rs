//! The formats a reader takes, told by their first bytes, and where a file
//! of each format ends, told by its headers.
//!
//! A reader names the formats it takes ([`InputFile::open_as`]); what
//! fileio produces from bytes it cannot map (a decompressed file, a pipe, a
//! device) must start with one of their magics, or is refused at its first
//! bytes. Where a format's headers say where its content ends (an ELF's
//! section and program headers, BTF's section offsets), more than
//! [`MAX_TRAILER`] bytes after that end are refused as they arrive: a
//! decompression bomb behind a valid header stops there, not at the cap.
//!
//! [`InputFile::open_as`]: crate::InputFile::open_as

/// A file format a reader takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// An ELF file (vmlinux, a module, an object): `7F 45 4C 46`.
    Elf,
    /// Raw BTF: magic 0xEB9F as a 16-bit number of either byte order.
    Btf,
    /// A perf.data file or stream: `PERFILE2`.
    PerfData,
}

/// ELF or raw BTF: what the BTF, symbol and DWARF readers take.
pub const ELF_OR_BTF: &[Format] = &[Format::Elf, Format::Btf];

/// The most bytes that may follow the end a format's headers give (an
/// ELF's last section or header table): a module's appended signature
/// (`~Module signature appended~`, a PKCS#7 message of a few KB) is the
/// only thing known to follow an ELF, and 1 MiB holds hundreds of them.
pub const MAX_TRAILER: u64 = 1 << 20;

impl Format {
    /// The magic byte strings a file of this format starts with.
    pub fn magics(self) -> &'static [&'static [u8]] {
        match self {
            Format::Elf => &[b"\x7fELF"],
            Format::Btf => &[&[0x9f, 0xeb], &[0xeb, 0x9f]],
            Format::PerfData => &[b"PERFILE2"],
        }
    }

    /// The format's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Elf => "ELF",
            Format::Btf => "BTF",
            Format::PerfData => "perf.data",
        }
    }

    /// Where a file of this format that starts with `head` ends, as far as
    /// `head` tells.
    pub(crate) fn end(self, head: &[u8]) -> End {
        match self {
            Format::Elf => elf_end(head),
            Format::Btf => btf_end(head),
            // The feature sections follow the data section, each found
            // through a table after the data: nothing cheap to bound.
            Format::PerfData => End::Unknown,
        }
    }
}

/// Where a file ends, as far as its first bytes tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// Its headers say nothing of its end (or do not parse).
    Unknown,
    /// The first this many bytes are needed to tell.
    Need(u64),
    /// Its content ends at this byte.
    At(u64),
}

/// `names` joined with " or ": "ELF or BTF".
pub(crate) fn names(formats: &[Format]) -> String {
    let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
    names.join(" or ")
}

/// Reads unsigned integers of one byte order.
struct Fields<'a> {
    data: &'a [u8],
    big: bool,
}

impl Fields<'_> {
    fn uint(&self, at: u64, size: usize) -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        let bytes = self.data.get(at..at.checked_add(size)?)?;
        let mut v = 0u64;
        if self.big {
            for &b in bytes {
                v = (v << 8) | u64::from(b);
            }
        } else {
            for &b in bytes.iter().rev() {
                v = (v << 8) | u64::from(b);
            }
        }
        Some(v)
    }
}

/// The end of an ELF file: past its ELF header, program and section
/// header tables, every section that has bytes in the file (not
/// SHT_NOBITS) and every segment's file bytes. Known once the tables are
/// in `head`; before that, [`End::Need`] says how much is needed.
fn elf_end(head: &[u8]) -> End {
    const SHT_NOBITS: u64 = 8;
    // ELFCLASS32 or ELFCLASS64; ELFDATA2LSB or ELFDATA2MSB.
    let (wide, big) = match (head.get(4), head.get(5)) {
        (Some(1), Some(1)) => (false, false),
        (Some(1), Some(2)) => (false, true),
        (Some(2), Some(1)) => (true, false),
        (Some(2), Some(2)) => (true, true),
        // Not an ELF file a reader can take: its 16 bytes of e_ident are
        // all it can be said to hold.
        (Some(_), Some(_)) => return End::At(16),
        _ => return End::Need(6),
    };
    let ehsize: u64 = if wide { 64 } else { 52 };
    if (head.len() as u64) < ehsize {
        return End::Need(ehsize);
    }
    let f = Fields { data: head, big };
    // Offsets of e_phoff, e_shoff and the table sizes in each class.
    let word = if wide { 8 } else { 4 };
    let (phoff_at, shoff_at, sizes_at) = if wide { (32, 40, 54) } else { (28, 32, 42) };
    let header = || -> Option<(u64, u64, u64, u64, u64, u64)> {
        Some((
            f.uint(phoff_at, word)?,
            f.uint(sizes_at, 2)?,     // e_phentsize
            f.uint(sizes_at + 2, 2)?, // e_phnum
            f.uint(shoff_at, word)?,
            f.uint(sizes_at + 4, 2)?, // e_shentsize
            f.uint(sizes_at + 6, 2)?, // e_shnum
        ))
    };
    let Some((phoff, phentsize, phnum, shoff, shentsize, mut shnum)) = header() else {
        return End::Need(ehsize);
    };
    // e_shnum 0 with a table: the count is section 0's sh_size.
    let shdr_size: u64 = if wide { 64 } else { 40 };
    if shnum == 0 && shoff != 0 {
        let need = shoff.saturating_add(shdr_size);
        if (head.len() as u64) < need {
            return End::Need(need);
        }
        let size_at = shoff + if wide { 32 } else { 20 };
        shnum = f.uint(size_at, word).unwrap_or(0);
    }
    let ph_end = phoff.saturating_add(phnum.saturating_mul(phentsize));
    let sh_end = shoff.saturating_add(shnum.saturating_mul(shentsize));
    let mut end = ehsize.max(if phnum > 0 { ph_end } else { 0 });
    end = end.max(if shnum > 0 { sh_end } else { 0 });
    if (head.len() as u64) < end {
        return End::Need(end);
    }
    let phdr_size: u64 = if wide { 56 } else { 32 };
    if phentsize >= phdr_size {
        for i in 0..phnum {
            let at = phoff + i * phentsize;
            // p_offset and p_filesz.
            let (off, filesz) = if wide {
                (f.uint(at + 8, 8), f.uint(at + 32, 8))
            } else {
                (f.uint(at + 4, 4), f.uint(at + 16, 4))
            };
            if let (Some(off), Some(filesz)) = (off, filesz) {
                end = end.max(off.saturating_add(filesz));
            }
        }
    }
    if shentsize >= shdr_size {
        for i in 0..shnum {
            let at = shoff + i * shentsize;
            // sh_type, sh_offset and sh_size.
            let (ty, off, size) = if wide {
                (f.uint(at + 4, 4), f.uint(at + 24, 8), f.uint(at + 32, 8))
            } else {
                (f.uint(at + 4, 4), f.uint(at + 16, 4), f.uint(at + 20, 4))
            };
            if let (Some(ty), Some(off), Some(size)) = (ty, off, size) {
                if ty != SHT_NOBITS {
                    end = end.max(off.saturating_add(size));
                }
            }
        }
    }
    End::At(end)
}

/// The end of raw BTF: its header, then the farthest of the sections the
/// header places (types, strings, and the 2026 header's layout section).
fn btf_end(head: &[u8]) -> End {
    const HEADER: u64 = 24;
    if (head.len() as u64) < HEADER {
        return End::Need(HEADER);
    }
    let big = head.starts_with(&[0xeb, 0x9f]);
    let f = Fields { data: head, big };
    let hdr_len = f.uint(4, 4).unwrap_or(0);
    // The classic header's two pairs; a longer header's third (layout).
    let pairs_end = if hdr_len >= 32 { 32 } else { HEADER };
    if (head.len() as u64) < pairs_end {
        return End::Need(pairs_end);
    }
    let mut end = 0u64;
    let mut at = 8;
    while at + 8 <= pairs_end {
        if let (Some(off), Some(len)) = (f.uint(at, 4), f.uint(at + 4, 4)) {
            end = end.max(off.saturating_add(len));
        }
        at += 8;
    }
    End::At(hdr_len.saturating_add(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-bit little-endian ELF header with a section table of `shnum`
    /// entries at `shoff` and no program headers.
    fn elf64(shoff: u64, shnum: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2;
        h[5] = 1;
        h[40..48].copy_from_slice(&shoff.to_le_bytes());
        h[58..60].copy_from_slice(&64u16.to_le_bytes());
        h[60..62].copy_from_slice(&shnum.to_le_bytes());
        h
    }

    #[test]
    fn an_elf_ends_after_its_farthest_section_or_table() {
        let mut elf = elf64(64, 2);
        assert_eq!(elf_end(&elf), End::Need(64 + 128));
        // Section 1: PROGBITS at 0x1000, 0x200 bytes, then a NOBITS one.
        let mut s1 = vec![0u8; 64];
        s1[4..8].copy_from_slice(&1u32.to_le_bytes());
        s1[24..32].copy_from_slice(&0x1000u64.to_le_bytes());
        s1[32..40].copy_from_slice(&0x200u64.to_le_bytes());
        elf.extend_from_slice(&[0u8; 64]);
        elf.extend_from_slice(&s1);
        assert_eq!(elf_end(&elf), End::At(0x1200));
        elf[64 + 64 + 4] = 8;
        assert_eq!(elf_end(&elf), End::At(64 + 128));
    }

    #[test]
    fn an_elf_header_then_zeros_ends_at_its_header_tables() {
        let mut elf = elf64(0x1000, 20);
        elf.resize(0x1000 + 20 * 64, 0);
        assert_eq!(elf_end(&elf), End::At(0x1000 + 20 * 64));
    }

    #[test]
    fn btf_ends_after_its_farthest_section() {
        let mut h = vec![0x9f, 0xeb, 1, 0];
        for v in [24u32, 0, 100, 100, 50] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(btf_end(&h), End::At(24 + 150));
        assert_eq!(btf_end(&h[..10]), End::Need(24));
    }
}
