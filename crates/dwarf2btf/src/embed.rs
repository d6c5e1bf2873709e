//! Output: a raw BTF file, or a copy of the ELF with a `.BTF` section (and a
//! `.BTF.base` for a distilled base; what `pahole -J` does in place), always written to a temporary file first and
//! renamed, so that a failed run leaves no half-written file.
//!
//! The ELF copy keeps every byte of the input at its offset: the BTF blob,
//! (if needed) a new section-name table and a new section header table are
//! appended at the end, and the ELF header is pointed at the new table. An
//! existing section of the same name is pointed at the new blob instead. The
//! program headers are untouched, so nothing that is loaded moves.

use std::io::Write;
use std::path::Path;

use crate::load::ElfFile;

const EHDR_SIZE: usize = 64;
const SHDR_SIZE: usize = 64;
const SHT_PROGBITS: u32 = 1;
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
pub fn embed_btf(elf: &[u8], btf: &[u8]) -> Result<Vec<u8>, String> {
    embed_sections(elf, &[(".BTF", btf)])
}

/// A copy of the 64-bit little-endian ELF `elf` with each named section set
/// to its bytes (`.BTF`, and `.BTF.base` for a module with a distilled base):
/// existing sections of those names are pointed at the new bytes, the others
/// are added as non-allocated PROGBITS sections.
pub fn embed_sections(elf: &[u8], sections: &[(&str, &[u8])]) -> Result<Vec<u8>, String> {
    let e = plan(elf, sections)?;
    let mut header = [0u8; EHDR_SIZE];
    Ok(pieces(elf, &e, &mut header).concat())
}

/// Where the new section table goes, its entry count, and the bytes that
/// follow the input (section contents, name table, section headers).
struct Embedding {
    shoff: u64,
    shnum: u16,
    tail: Vec<u8>,
}

fn plan(elf: &[u8], sections: &[(&str, &[u8])]) -> Result<Embedding, String> {
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
    let mut headers: Vec<[u8; SHDR_SIZE]> = table
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
    let name_of = |h: &[u8; SHDR_SIZE]| -> Option<&[u8]> {
        let off = u32_at(h, 0).ok()? as usize;
        let rest = names.get(off..)?;
        Some(&rest[..rest.iter().position(|&b| b == 0)?])
    };
    let existing: Vec<Option<usize>> = sections
        .iter()
        .map(|(name, _)| {
            headers
                .iter()
                .position(|h| name_of(h) == Some(name.as_bytes()))
        })
        .collect();

    // Everything new goes after the input's last byte: `tail` starts at
    // file offset `at`.
    let at = elf.len();
    let pos = |tail: &Vec<u8>| (at + tail.len()) as u64;
    let pad = |tail: &mut Vec<u8>| {
        while (at + tail.len()) % 8 != 0 {
            tail.push(0);
        }
    };
    let added: usize = sections.iter().map(|(n, b)| n.len() + b.len() + 16).sum();
    let mut tail = Vec::with_capacity(added + names.len() + table.len() + 256);
    let mut new_names = names.to_vec();
    for ((name, bytes), existing) in sections.iter().zip(&existing) {
        pad(&mut tail);
        let off = pos(&tail);
        tail.extend_from_slice(bytes);
        match existing {
            Some(i) => {
                if let Some(h) = headers.get_mut(*i) {
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
                headers.push(h);
            }
        }
    }
    if new_names.len() != names.len() {
        // A new name table: the old one plus the added names.
        let new_str_off = pos(&tail);
        tail.extend_from_slice(&new_names);
        if let Some(h) = headers.get_mut(shstrndx as usize) {
            put(h, 24, &new_str_off.to_le_bytes());
            put(h, 32, &(new_names.len() as u64).to_le_bytes());
        }
    }
    pad(&mut tail);
    let shoff = pos(&tail);
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
    Ok(Embedding { shoff, shnum, tail })
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
        elf.get(EHDR_SIZE..).unwrap_or_default(),
        &e.tail,
    ]
}

/// Writes the ELF `elf` with `sections` embedded (see [`embed_sections`]) to
/// `path` as [`write_atomic`] does, streaming from `elf` instead of building
/// the whole image in memory (a vmlinux is tens of MB). The input's bytes
/// after its header go from file to file in the kernel (`copy_file_range`):
/// a module is mostly DWARF that the embedding leaves as it is
/// (mlx5_core.ko: 61 MB), and a file system that shares extents (XFS,
/// Btrfs) need not copy it at all.
pub fn write_embedded(
    path: &Path,
    elf: &ElfFile,
    sections: &[(&str, &[u8])],
    perm: Option<std::fs::Permissions>,
) -> Result<(), EmbedError> {
    let data = elf.data();
    let e = plan(data, sections).map_err(EmbedError::Elf)?;
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
    write_atomic_parts(path, &parts, perm).map_err(EmbedError::Io)
}

/// A piece of a file being written.
enum Part<'a> {
    Bytes(&'a [u8]),
    /// `bytes`, which are also `from`'s bytes at `offset`.
    Copy {
        from: &'a std::fs::File,
        offset: u64,
        bytes: &'a [u8],
    },
}

/// Why [`write_embedded`] failed: the input ELF, or writing the output.
#[derive(Debug)]
pub enum EmbedError {
    Elf(String),
    Io(std::io::Error),
}

impl std::fmt::Display for EmbedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmbedError::Elf(e) => f.write_str(e),
            EmbedError::Io(e) => write!(f, "cannot write: {e}"),
        }
    }
}

impl std::error::Error for EmbedError {}

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename: readers see the old file or the whole new one. `perm`:
/// the new file's permissions (an embedded ELF keeps its input's). No
/// fsync, as no linker or objcopy does one: the rename alone gives readers
/// the whole file, and a kernel build writes thousands of modules, for
/// which a flush per module to the disk cost more than the encode (xfs.ko:
/// 1.2 s of wall time for 0.4 s of CPU).
pub fn write_atomic(
    path: &Path,
    bytes: &[u8],
    perm: Option<std::fs::Permissions>,
) -> std::io::Result<()> {
    write_atomic_parts(path, &[Part::Bytes(bytes)], perm)
}

/// [`write_atomic`] of the concatenation of `parts`.
fn write_atomic_parts(
    path: &Path,
    parts: &[Part],
    perm: Option<std::fs::Permissions>,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        for part in parts {
            match *part {
                Part::Bytes(b) => f.write_all(b)?,
                Part::Copy {
                    from,
                    offset,
                    bytes,
                } => {
                    f.flush()?;
                    copy_range(f.get_ref(), from, offset, bytes)?;
                }
            }
        }
        let f = f.into_inner().map_err(|e| e.into_error())?;
        if let Some(perm) = perm {
            f.set_permissions(perm)?;
        }
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Appends `bytes`, which are `from`'s bytes at `offset`, to `out` (at its
/// position): by `copy_file_range`, which copies in the kernel, and by a
/// write of what it did not copy (a kernel or a pair of file systems it
/// does not serve, an input that ended early).
fn copy_range(
    mut out: &std::fs::File,
    from: &std::fs::File,
    offset: u64,
    bytes: &[u8],
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut done = 0;
    if let Ok(mut off_in) = libc::loff_t::try_from(offset) {
        while done < bytes.len() {
            // SAFETY: two open descriptors and a valid offset pointer; with
            // a null output offset the kernel writes at `out`'s position
            // and advances it, as a write would.
            let n = unsafe {
                libc::copy_file_range(
                    from.as_raw_fd(),
                    &mut off_in,
                    out.as_raw_fd(),
                    std::ptr::null_mut(),
                    bytes.len() - done,
                    0,
                )
            };
            match usize::try_from(n) {
                Ok(n) if n > 0 => done += n,
                _ => break,
            }
        }
    }
    out.write_all(bytes.get(done..).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `out` after `copy_range` of `from`'s bytes 3.. (given also as
    /// `bytes`) appended to "head".
    fn appended(from: &std::fs::File, bytes: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut out = std::fs::File::create(&path).unwrap();
        out.write_all(b"head").unwrap();
        copy_range(&out, from, 3, bytes).unwrap();
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn copy_range_copies_from_the_offset_in_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, b"abcdefgh").unwrap();
        let from = std::fs::File::open(&path).unwrap();
        assert_eq!(appended(&from, b"defgh"), b"headdefgh");
    }

    #[test]
    fn copy_range_writes_what_the_kernel_cannot_copy() {
        // A descriptor open for writing only: copy_file_range refuses it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, b"abcdefgh").unwrap();
        let from = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        assert_eq!(appended(&from, b"defgh"), b"headdefgh");
    }
}
