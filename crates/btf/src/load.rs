//! Loading BTF from a path: raw blob, ELF `.BTF` section, or sysfs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::{Object, ObjectSection};

use crate::{Btf, Error};

/// The running kernel's BTF.
pub const SYSFS_VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// An error in loading a file: which file, and what went wrong in it.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Btf { path: PathBuf, source: Error },
}

fn is_elf(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

/// The `.BTF` section of an ELF file (vmlinux, a module), decompressed if needed.
pub fn elf_btf_section(data: &[u8]) -> Result<Vec<u8>, Error> {
    let file = object::File::parse(data).map_err(|e| Error::Elf(e.to_string()))?;
    let section = file.section_by_name(".BTF").ok_or(Error::NoBtfSection)?;
    let bytes = section
        .uncompressed_data()
        .map_err(|e| Error::Elf(e.to_string()))?;
    Ok(bytes.into_owned())
}

/// Parses BTF from bytes that are either a raw blob or an ELF file.
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
        None => Btf::parse(blob).map_err(|e| match e {
            // A split blob parsed as base fails on its first string: say why.
            Error::BadHeader { ref reason, .. } if reason.contains("empty string") => {
                Error::NeedsBase
            }
            e => e,
        }),
    }
}

/// Loads BTF from `path`. With no `base`, a module's BTF under
/// /sys/kernel/btf/ gets /sys/kernel/btf/vmlinux as its base, as bpftool does.
pub fn load_file(path: &Path, base: Option<&Path>) -> Result<Btf, LoadError> {
    let auto_base;
    let base = match base {
        Some(b) => Some(b),
        None if path.parent() == Some(Path::new("/sys/kernel/btf"))
            && path != Path::new(SYSFS_VMLINUX) =>
        {
            auto_base = PathBuf::from(SYSFS_VMLINUX);
            Some(auto_base.as_path())
        }
        None => None,
    };
    let base = match base {
        Some(b) => Some(Arc::new(load_file(b, None)?)),
        None => None,
    };
    let io = |source| LoadError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    // A debug vmlinux is ~600 MB for a ~5 MB .BTF section: map it and touch
    // only the headers and the section. What can't be mapped (some sysfs
    // attributes, pipes, empty files) is read.
    // SAFETY: a read-only private mapping; a concurrent writer truncating the
    // file could fault us, the accepted contract of mapped inputs.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok();
    let read;
    let data: &[u8] = match &map {
        Some(m) => m,
        None => {
            read = read_all(file).map_err(io)?;
            &read
        }
    };
    parse_any(data, base).map_err(|source| LoadError::Btf {
        path: path.to_owned(),
        source,
    })
}

fn read_all(mut file: std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut data = Vec::new();
    file.read_to_end(&mut data)?;
    Ok(data)
}
