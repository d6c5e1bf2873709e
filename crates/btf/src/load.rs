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
    let data = std::fs::read(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse_any(&data, base).map_err(|source| LoadError::Btf {
        path: path.to_owned(),
        source,
    })
}
