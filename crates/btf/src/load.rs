//! Loading BTF from a path: raw blob, ELF `.BTF` section, or sysfs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::{Object, ObjectSection};

use crate::{Btf, Error};
use fileio::InputFile;

/// The running kernel's BTF.
pub const SYSFS_VMLINUX: &str = "/sys/kernel/btf/vmlinux";

fn is_elf(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

/// The `.BTF` section of an ELF file (vmlinux, a module), decompressed if
/// needed (`SHF_COMPRESSED`). [`Error::Elf`] when `data` is not a readable
/// ELF file, [`Error::NoBtfSection`] when it has no `.BTF`.
pub fn elf_btf_section(data: &[u8]) -> Result<Vec<u8>, Error> {
    let file = object::File::parse(data).map_err(Error::Elf)?;
    let section = file.section_by_name(".BTF").ok_or(Error::NoBtfSection)?;
    let bytes = fileio::elf_section::data(&section)?;
    Ok(bytes.into_owned())
}

/// Parses BTF from bytes that are either a raw blob or an ELF file (told
/// apart by the ELF magic), over `base` when given. Split BTF without a base
/// is [`Error::NeedsBase`]; other errors are [`Btf::parse`]'s, with offsets
/// in the blob (for an ELF file, in its `.BTF` section).
pub fn parse_any(data: &[u8], base: Option<Arc<Btf>>) -> Result<Btf, Error> {
    let owned;
    let blob = if is_elf(data) {
        owned = elf_btf_section(data)?;
        &owned[..]
    } else {
        data
    };
    match base {
        Some(base) => Btf::parse_split(blob, base),
        None => Btf::parse(blob).map_err(split_without_base),
    }
}

/// A split blob parsed as base fails on its first string: say why.
fn split_without_base(e: Error) -> Error {
    match e {
        Error::BadHeader { ref reason, .. } if reason.contains("empty string") => Error::NeedsBase,
        e => e,
    }
}

/// The base BTF to use for `path`: the one given, or, as bpftool does,
/// /sys/kernel/btf/vmlinux for a module's BTF under /sys/kernel/btf/.
pub fn default_base(path: &Path, base: Option<&Path>) -> Option<PathBuf> {
    if let Some(b) = base {
        return Some(b.to_owned());
    }
    let vmlinux = Path::new(SYSFS_VMLINUX);
    (path.parent() == vmlinux.parent() && path != vmlinux).then(|| vmlinux.to_owned())
}

/// Loads BTF from `path` (raw or ELF), over `base` or [`default_base`]'s.
/// A file that can be mapped is parsed in place: an ELF's `.BTF` section
/// (uncompressed, as every vmlinux has it) is not copied out, and the
/// string and type sections stay mapped (see `bytes.rs`, `records.rs`).
///
/// [`Error::Input`] when `path` (or the base) cannot be read;
/// [`Error::File`] when it is not BTF, an ELF file without `.BTF`
/// ([`Error::NoBtfSection`]), or split BTF without a base ([`Error::NeedsBase`]).
/// A file compressed whole (`.ko.xz`) is decompressed
/// ([`InputFile`]).
///
/// ```no_run
/// use std::path::Path;
///
/// // The running kernel's BTF, and a module's over it (the base is found
/// // by itself for files under /sys/kernel/btf/).
/// let vmlinux = btf::load_file(Path::new(btf::SYSFS_VMLINUX), None)?;
/// let ext4 = btf::load_file(Path::new("/sys/kernel/btf/ext4"), None)?;
/// println!("{} + {} types", vmlinux.type_count(), ext4.type_count() - vmlinux.type_count());
/// # Ok::<(), btf::Error>(())
/// ```
pub fn load_file(path: &Path, base: Option<&Path>) -> Result<Btf, Error> {
    let base = match default_base(path, base) {
        Some(b) => Some(Arc::new(load_file(&b, None)?)),
        None => None,
    };
    let data = InputFile::open(path)?;
    let err = |error| Error::File {
        path: path.to_owned(),
        error: Box::new(error),
    };
    match &data {
        InputFile::Mapped(map, file) => match btf_range(map).map_err(err)? {
            Some(range) => {
                let no_base = base.is_none();
                // A section's own mapping outlives `data`'s, whose other
                // pages (an ELF's DWARF, say) leave with it.
                let map_section = |at: usize, len: usize| {
                    let offset = u64::try_from(range.start.checked_add(at)?).ok()?;
                    // SAFETY: as `InputFile::open`'s mapping.
                    let map = unsafe {
                        memmap2::MmapOptions::new()
                            .offset(offset)
                            .len(len)
                            .map(file)
                    };
                    map.ok().map(crate::bytes::Bytes::mapped)
                };
                let blob = map.get(range.clone()).unwrap_or_default();
                Btf::parse_from_file(blob, base, &map_section).map_err(|e| {
                    if no_base {
                        split_without_base(e)
                    } else {
                        e
                    }
                })
            }
            None => parse_any(map, base),
        },
        InputFile::Read(bytes) => parse_any(bytes, base),
    }
    .map_err(err)
}

/// Where the BTF of a file is in it: the whole file if raw, an ELF's
/// uncompressed `.BTF` section; `None` for a compressed one.
fn btf_range(data: &[u8]) -> Result<Option<std::ops::Range<usize>>, Error> {
    if !is_elf(data) {
        return Ok(Some(0..data.len()));
    }
    let file = object::File::parse(data).map_err(Error::Elf)?;
    let section = file.section_by_name(".BTF").ok_or(Error::NoBtfSection)?;
    let r = section.compressed_file_range().map_err(Error::Elf)?;
    if r.format != object::CompressionFormat::None {
        return Ok(None);
    }
    let past_end = || Error::BtfPastEnd {
        offset: r.offset,
        size: r.compressed_size,
    };
    let start = usize::try_from(r.offset).map_err(|_| past_end())?;
    let len = usize::try_from(r.compressed_size).map_err(|_| past_end())?;
    let end = start
        .checked_add(len)
        .filter(|&end| end <= data.len())
        .ok_or_else(past_end)?;
    Ok(Some(start..end))
}

/// The BTF bytes of `path` as they are on disk: a raw file, or an ELF's
/// `.BTF` section. For checks that look below the parsed model.
pub fn read_blob(path: &Path) -> Result<Vec<u8>, Error> {
    let data = InputFile::open(path)?;
    if is_elf(&data) {
        elf_btf_section(&data).map_err(|error| Error::File {
            path: path.to_owned(),
            error: Box::new(error),
        })
    } else {
        Ok(data.to_vec())
    }
}
