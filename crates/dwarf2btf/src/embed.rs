//! A copy of an ELF with a `.BTF` section (and a `.BTF.base` for a
//! distilled base; what `pahole -J` does in place), written by
//! [`fileio::output_file`].
//!
//! The ELF copy keeps every byte of the input that a section or segment
//! holds at its offset: the BTF blob, (if needed) a new section-name table
//! and a new section header table are appended after the last of them, and
//! the ELF header is pointed at the new table. An existing section of the
//! same name is pointed at the new blob instead. Whatever followed the last
//! kept byte (the old section header table, an old `.BTF` blob that no
//! segment loads) is left out, so that embedding again replaces the section
//! without growing the file. The program headers are untouched, so nothing
//! that is loaded moves.

use std::path::Path;

use fileio::output_file::Part;

use crate::load::ElfFile;
use crate::{Error, Result};

const EHDR_SIZE: usize = 64;
const SHDR_SIZE: usize = 64;
const SHT_NULL: u32 = 0;
const SHT_PROGBITS: u32 = 1;
const SHT_NOBITS: u32 = 8;
const PHDR_SIZE: usize = 56;
/// e_shnum values at or above this live in section 0 (extended numbering).
const SHN_LORESERVE: u64 = 0xff00;
const SHN_XINDEX: u16 = 0xffff;

fn rd<const N: usize>(data: &[u8], at: usize) -> Result<[u8; N], String> {
    data.get(at..at.saturating_add(N))
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("ELF truncated at {at:#x}"))
}
fn u16_at(d: &[u8], at: usize) -> Result<u16, String> {
    rd::<2>(d, at).map(u16::from_le_bytes)
}
fn u32_at(d: &[u8], at: usize) -> Result<u32, String> {
    rd::<4>(d, at).map(u32::from_le_bytes)
}
fn u64_at(d: &[u8], at: usize) -> Result<u64, String> {
    rd::<8>(d, at).map(u64::from_le_bytes)
}
fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(slot) = buf.get_mut(at..at + bytes.len()) {
        slot.copy_from_slice(bytes);
    }
}
fn to_usize(v: u64) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("offset {v:#x} too large"))
}

/// A copy of the 64-bit little-endian ELF `elf` with `.BTF` set to `btf`.
pub fn embed_btf(elf: &[u8], btf: &[u8]) -> Result<Vec<u8>> {
    embed_sections(elf, &[(".BTF", btf)])
}

/// A copy of the 64-bit little-endian ELF `elf` with each named section set
/// to its bytes (`.BTF`, and `.BTF.base` for a module with a distilled base):
/// existing sections of those names are pointed at the new bytes, the others
/// are added as non-allocated PROGBITS sections.
pub fn embed_sections(elf: &[u8], sections: &[(&str, &[u8])]) -> Result<Vec<u8>> {
    let e = plan(elf, sections).map_err(|reason| Error::Embed { reason })?;
    let mut header = [0u8; EHDR_SIZE];
    Ok(pieces(elf, &e, &mut header).concat())
}

/// Where the new section table goes, its entry count, and the bytes that
/// follow the input (section contents, name table, section headers).
struct Embedding {
    /// How many of the input's bytes are kept: `tail` starts here.
    keep: usize,
    shoff: u64,
    shnum: u16,
    tail: Vec<u8>,
}

/// The end of the last byte of `elf` that a segment or a section other than
/// those in `skip` holds (not less than the ELF and program headers).
fn kept_end(elf: &[u8], headers: &[[u8; SHDR_SIZE]], skip: &[usize]) -> Result<usize, String> {
    let mut end = EHDR_SIZE as u64;
    let phoff = u64_at(elf, 0x20)?;
    let phnum = u64::from(u16_at(elf, 0x38)?);
    if phoff != 0 && phnum != 0 {
        end = end.max(phoff.saturating_add(phnum * PHDR_SIZE as u64));
        for i in 0..phnum {
            let at = to_usize(phoff.saturating_add(i * PHDR_SIZE as u64))?;
            let (offset, filesz) = (u64_at(elf, at + 8)?, u64_at(elf, at + 32)?);
            if filesz != 0 {
                end = end.max(offset.saturating_add(filesz));
            }
        }
    }
    for (i, h) in headers.iter().enumerate() {
        let kind = u32_at(h, 4)?;
        if skip.contains(&i) || kind == SHT_NULL || kind == SHT_NOBITS {
            continue;
        }
        end = end.max(u64_at(h, 24)?.saturating_add(u64_at(h, 32)?));
    }
    Ok(to_usize(end)?.min(elf.len()))
}

/// The input's section headers and section name table, as [`plan`] reads
/// them.
struct SectionTable<'e> {
    headers: Vec<[u8; SHDR_SIZE]>,
    /// The index of the section name table's header.
    shstrndx: u32,
    /// The section name table's file offset, size and bytes.
    str_off: usize,
    str_size: usize,
    names: &'e [u8],
    /// The section header table's size in bytes.
    table_len: usize,
}

/// Header stage: checks the ELF header and reads the section header table
/// and the section name table it points to.
fn read_section_table(elf: &[u8]) -> Result<SectionTable<'_>, String> {
    if elf.len() < EHDR_SIZE {
        return Err(format!("ELF truncated at {:#x}", elf.len()));
    }
    if elf.get(..4) != Some(b"\x7fELF") || elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return Err("only 64-bit little-endian ELF can take a .BTF section".into());
    }
    let shoff = to_usize(u64_at(elf, 0x28)?)?;
    let shentsize = usize::from(u16_at(elf, 0x3a)?);
    if shentsize != SHDR_SIZE || shoff == 0 {
        return Err("ELF has no usable section header table".into());
    }
    let mut shnum = u64::from(u16_at(elf, 0x3c)?);
    let mut shstrndx = u32::from(u16_at(elf, 0x3e)?);
    if shnum == 0 {
        shnum = u64_at(elf, shoff + 32)?;
    }
    if shstrndx == u32::from(SHN_XINDEX) {
        shstrndx = u32_at(elf, shoff + 40)?;
    }
    let shnum = to_usize(shnum)?;
    let table = elf
        .get(shoff..shoff.saturating_add(shnum.saturating_mul(SHDR_SIZE)))
        .filter(|t| t.len() == shnum * SHDR_SIZE)
        .ok_or("section header table is truncated")?;
    let headers: Vec<[u8; SHDR_SIZE]> = table
        .chunks_exact(SHDR_SIZE)
        .filter_map(|c| c.try_into().ok())
        .collect();
    let strhdr = *headers
        .get(shstrndx as usize)
        .ok_or("section name table index out of range")?;
    let str_off = to_usize(u64_at(&strhdr, 24)?)?;
    let str_size = to_usize(u64_at(&strhdr, 32)?)?;
    let names = elf
        .get(str_off..str_off.saturating_add(str_size))
        .ok_or("section name table is truncated")?;
    Ok(SectionTable {
        headers,
        shstrndx,
        str_off,
        str_size,
        names,
        table_len: table.len(),
    })
}

impl SectionTable<'_> {
    /// Lookup stage: the index of the section each name already has, if any.
    fn existing(&self, sections: &[(&str, &[u8])]) -> Vec<Option<usize>> {
        let name_of = |h: &[u8; SHDR_SIZE]| -> Option<&[u8]> {
            let off = u32_at(h, 0).ok()? as usize;
            let rest = self.names.get(off..)?;
            Some(&rest[..rest.iter().position(|&b| b == 0)?])
        };
        sections
            .iter()
            .map(|(name, _)| {
                self.headers
                    .iter()
                    .position(|h| name_of(h) == Some(name.as_bytes()))
            })
            .collect()
    }
}

/// The file offset of the next byte of a `tail` that starts at `at`.
fn pos(at: usize, tail: &[u8]) -> u64 {
    (at + tail.len()) as u64
}

/// Pads a `tail` that starts at `at` to an 8-byte file offset.
fn pad(at: usize, tail: &mut Vec<u8>) {
    while (at + tail.len()) % 8 != 0 {
        tail.push(0);
    }
}

/// Plans the embedding: reads the tables, finds the kept end, then lays
/// out the tail after it.
fn plan(elf: &[u8], sections: &[(&str, &[u8])]) -> Result<Embedding, String> {
    let mut t = read_section_table(elf)?;
    let existing = t.existing(sections);

    // Everything new goes after the last byte kept: `tail` starts at file
    // offset `at`. The section name table is written again when it lies
    // past that point, or when a name is added.
    let mut skip: Vec<usize> = existing.iter().flatten().copied().collect();
    skip.push(t.shstrndx as usize);
    let at = kept_end(elf, &t.headers, &skip)?;
    let names_kept = t.str_off.saturating_add(t.str_size) <= at;
    let added: usize = sections.iter().map(|(n, b)| n.len() + b.len() + 16).sum();
    let mut tail = Vec::with_capacity(added + t.names.len() + t.table_len + 256);
    let new_names = append_sections(at, &mut tail, sections, &existing, &mut t)?;
    if new_names.len() != t.names.len() || !names_kept {
        // A new name table: the old one plus the added names.
        let new_str_off = pos(at, &tail);
        tail.extend_from_slice(&new_names);
        if let Some(h) = t.headers.get_mut(t.shstrndx as usize) {
            put(h, 24, &new_str_off.to_le_bytes());
            put(h, 32, &(new_names.len() as u64).to_le_bytes());
        }
    }
    Ok(append_headers(at, tail, t.headers))
}

/// Contents stage: each section's bytes appended to `tail`, its header
/// pointed at them (a new header when it has none); returns the section
/// name table with the added names.
fn append_sections(
    at: usize,
    tail: &mut Vec<u8>,
    sections: &[(&str, &[u8])],
    existing: &[Option<usize>],
    t: &mut SectionTable<'_>,
) -> Result<Vec<u8>, String> {
    let mut new_names = t.names.to_vec();
    for ((name, bytes), existing) in sections.iter().zip(existing) {
        pad(at, tail);
        let off = pos(at, tail);
        tail.extend_from_slice(bytes);
        match existing {
            Some(i) => {
                if let Some(h) = t.headers.get_mut(*i) {
                    put(h, 24, &off.to_le_bytes());
                    put(h, 32, &(bytes.len() as u64).to_le_bytes());
                }
            }
            None => {
                let name_off = u32::try_from(new_names.len())
                    .map_err(|_| "section name table too large".to_string())?;
                new_names.extend_from_slice(name.as_bytes());
                new_names.push(0);
                let mut h = [0u8; SHDR_SIZE];
                put(&mut h, 0, &name_off.to_le_bytes());
                put(&mut h, 4, &SHT_PROGBITS.to_le_bytes());
                put(&mut h, 24, &off.to_le_bytes());
                put(&mut h, 32, &(bytes.len() as u64).to_le_bytes());
                put(&mut h, 48, &4u64.to_le_bytes());
                t.headers.push(h);
            }
        }
    }
    Ok(new_names)
}

/// Header table stage: the section headers appended to `tail`, with the
/// count in section 0 when it needs extended numbering.
fn append_headers(at: usize, mut tail: Vec<u8>, mut headers: Vec<[u8; SHDR_SIZE]>) -> Embedding {
    pad(at, &mut tail);
    let shoff = pos(at, &tail);
    let count = headers.len() as u64;
    if count >= SHN_LORESERVE {
        if let Some(h0) = headers.first_mut() {
            put(h0, 32, &count.to_le_bytes());
        }
    }
    for h in &headers {
        tail.extend_from_slice(h);
    }
    let shnum = if count >= SHN_LORESERVE {
        0
    } else {
        count as u16
    };
    Embedding {
        keep: at,
        shoff,
        shnum,
        tail,
    }
}

/// `elf` with the new fields of its ELF header, then `tail`: the bytes of
/// the embedded file in order, without copying `elf`.
fn pieces<'a>(elf: &'a [u8], e: &'a Embedding, header: &'a mut [u8; EHDR_SIZE]) -> [&'a [u8]; 3] {
    if let Some(h) = elf.get(..EHDR_SIZE) {
        header.copy_from_slice(h);
    }
    put(header, 0x28, &e.shoff.to_le_bytes());
    put(header, 0x3c, &e.shnum.to_le_bytes());
    [
        &header[..],
        elf.get(EHDR_SIZE..e.keep).unwrap_or_default(),
        &e.tail,
    ]
}

/// Writes the ELF `elf` with `sections` embedded (see [`embed_sections`]) to
/// `path` by [`fileio::output_file`], streaming from `elf` instead of building
/// the whole image in memory (a vmlinux is tens of MB). The input's bytes
/// after its header go from file to file in the kernel: a module is mostly
/// DWARF that the embedding leaves as it is (mlx5_core.ko: 61 MB).
pub fn write_embedded(
    path: &Path,
    elf: &ElfFile,
    sections: &[(&str, &[u8])],
    perm: Option<std::fs::Permissions>,
) -> Result<()> {
    let data = elf.data();
    let e = plan(data, sections).map_err(|reason| Error::Embed { reason })?;
    let mut header = [0u8; EHDR_SIZE];
    let [head, body, tail] = pieces(data, &e, &mut header);
    let body = match elf.file() {
        Some(from) => Part::Copy {
            from,
            offset: EHDR_SIZE as u64,
            bytes: body,
        },
        None => Part::Bytes(body),
    };
    let parts = [Part::Bytes(head), body, Part::Bytes(tail)];
    fileio::output_file::write_parts(path, &parts, perm).map_err(|error| Error::Write {
        path: path.to_owned(),
        error,
    })
}
